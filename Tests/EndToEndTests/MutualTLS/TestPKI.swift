#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Crypto
    import Foundation
    import NIOSSL
    import Testing

    /// The certificates `Scripts/test-pki.sh` made for this run (`AUTHREQ_TEST_PKI`): a CA the
    /// servers trust, their server certificate, and client certificates.
    enum TestPKI {
        static let folder: URL? = ProcessInfo.processInfo.environment["AUTHREQ_TEST_PKI"].map {
            URL(fileURLWithPath: $0, isDirectory: true)
        }
        static let isConfigured = folder != nil
        static let notRunReason: Comment =
            "AUTHREQ_TEST_PKI is not set, so the mutual-TLS tests were NOT run. Run Scripts/test to run them."

        /// One client certificate and its key.
        enum Certificate: String, CaseIterable, Sendable {
            /// Issued by the CA, subject `CN=authreq-mtls-client,O=AuthenticatedRequests tests`.
            case clientA = "client-a"
            /// The same subject with a new key: the rotated certificate.
            case clientB = "client-b"
            /// Self-signed, `CN=authreq-self-signed`.
            case selfSigned = "self-signed"
            /// Issued by the CA, valid for one day in 2020.
            case expired
            /// The same subject as `clientA`, issued by another CA of the same name.
            case otherCA = "other-ca-client"
        }

        /// The subject DN of `clientA` and `clientB` as RFC 4514 writes it.
        static let clientSubjectDN = "CN=authreq-mtls-client,O=AuthenticatedRequests tests"

        static func file(_ name: String) throws -> URL {
            try #require(folder, notRunReason).appendingPathComponent(name)
        }

        static func certificateFile(_ certificate: Certificate) throws -> URL {
            try file("\(certificate.rawValue).pem")
        }

        static func keyFile(_ certificate: Certificate) throws -> URL {
            try file("\(certificate.rawValue)-key.pem")
        }

        static func identity(_ certificate: Certificate) throws -> ClientIdentity {
            .pemFiles(certificateChain: try certificateFile(certificate), privateKey: try keyFile(certificate))
        }

        /// TLS settings that trust the test CA.
        static func trustingTestCA() throws -> TLSConfiguration {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(try file("ca.pem").path)
            return configuration
        }

        /// An AsyncHTTPClient transport trusting the test CA, presenting `identity`.
        static func transport(presenting identity: ClientIdentity?) throws -> AsyncHTTPClientTransport {
            AsyncHTTPClientTransport(clientIdentity: identity, tlsConfiguration: try trustingTestCA())
        }

        /// The DER of a PEM certificate file's first certificate.
        static func der(_ certificate: Certificate) throws -> Data {
            let text = try String(contentsOf: try certificateFile(certificate), encoding: .utf8)
            let body = text.components(separatedBy: "\n").filter { !$0.hasPrefix("-----") }.joined()
            return try #require(Data(base64Encoded: body))
        }

        /// The `x5t#S256` of a certificate, computed here independently of the SDK.
        static func thumbprint(_ certificate: Certificate) throws -> String {
            Base64URL.encode(Data(SHA256.hash(data: try der(certificate))))
        }

        /// Copies `certificate`'s files to a folder of their own, where a test rotates them.
        static func rotatableCopy(of certificate: Certificate) throws -> (folder: URL, identity: ClientIdentity) {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "authreq-mtls-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try rotate(folder, to: certificate)
            return (
                folder,
                .pemFiles(
                    certificateChain: folder.appendingPathComponent("cert.pem"),
                    privateKey: folder.appendingPathComponent("key.pem"))
            )
        }

        /// Writes `certificate`'s files into `folder` as a rotating agent does: new files renamed
        /// over the old ones.
        static func rotate(_ folder: URL, to certificate: Certificate) throws {
            for (source, name) in [
                (try certificateFile(certificate), "cert.pem"), (try keyFile(certificate), "key.pem"),
            ] {
                let staging = folder.appendingPathComponent(".\(name).new")
                try? FileManager.default.removeItem(at: staging)
                try FileManager.default.copyItem(at: source, to: staging)
                let target = folder.appendingPathComponent(name)
                #expect(rename(staging.path, target.path) == 0, "renamed \(name) over the old one")
            }
        }
    }

    /// Guards against a silent skip: in CI (`CI` set) the test PKI and both mutual-TLS servers
    /// must be there.
    @Test func mutualTLSTestsHaveTheirServersInCI() {
        if ProcessInfo.processInfo.environment["CI"] != nil {
            #expect(TestPKI.isConfigured, "CI must run the mutual-TLS tests: use Scripts/test")
            #expect(ProcessInfo.processInfo.environment["AUTHREQ_TEST_SERVER_MTLS"] != nil)
            #expect(GlewlwydMTLS.setup != nil, "glewlwyd for mutual TLS must be provisioned: use Scripts/test")
        }
    }
#endif
