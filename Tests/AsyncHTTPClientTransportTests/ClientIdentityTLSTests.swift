#if AsyncHTTPClient
    import AsyncHTTPClientTransport
    import AuthenticatedRequests
    import Crypto
    import Foundation
    import TestSupport
    import Testing

    /// The client identity as AsyncHTTPClientTransport presents it: the certificate's thumbprint,
    /// rotation of its files, a key that is not the certificate's, and no key in any text.
    @Suite struct ClientIdentityTLSTests {
        func thumbprint(of file: URL) throws -> String {
            let der = try #require(Data(base64Encoded: try TestCertificates.body(of: file)))
            return Base64URL.encode(Data(SHA256.hash(data: der)))
        }

        @Test func theTransportPresentsTheFilesCertificateAndFollowsItsRotation() throws {
            let folder = try TestCertificates.make(["one", "two"])
            defer { try? FileManager.default.removeItem(at: folder) }
            let certificate = folder.appendingPathComponent("current.pem")
            let key = folder.appendingPathComponent("current-key.pem")
            try FileManager.default.copyItem(at: folder.appendingPathComponent("one.pem"), to: certificate)
            try FileManager.default.copyItem(at: folder.appendingPathComponent("one-key.pem"), to: key)
            let transport = AsyncHTTPClientTransport(
                clientIdentity: .pemFiles(certificateChain: certificate, privateKey: key))
            #expect(try transport.clientCertificateThumbprint() == thumbprint(of: certificate))

            for (name, file) in [("two.pem", certificate), ("two-key.pem", key)] {
                let staged = folder.appendingPathComponent(".staged")
                try FileManager.default.copyItem(at: folder.appendingPathComponent(name), to: staged)
                #expect(rename(staged.path, file.path) == 0)
            }
            #expect(
                try transport.clientCertificateThumbprint() == thumbprint(of: folder.appendingPathComponent("two.pem")))
            #expect(try AsyncHTTPClientTransport().clientCertificateThumbprint() == nil)
        }

        @Test func aKeyThatIsNotTheCertificatesIsRefusedWithoutShowingIt() throws {
            let folder = try TestCertificates.make(["one", "two"])
            defer { try? FileManager.default.removeItem(at: folder) }
            let keyFile = folder.appendingPathComponent("two-key.pem")
            let transport = AsyncHTTPClientTransport(
                clientIdentity: .pemFiles(
                    certificateChain: folder.appendingPathComponent("one.pem"), privateKey: keyFile))
            let error = #expect(throws: ClientIdentityError.self) { try transport.clientCertificateThumbprint() }
            #expect(error?.code == .rejectedByTLS)
            let keyBody = try TestCertificates.body(of: keyFile)
            #expect(error.map { !String(describing: $0).contains(keyBody.prefix(24)) } == true)
        }

        @Test func noKeyMaterialInTheTransportsDumpOrDescription() throws {
            let folder = try TestCertificates.make(["one"])
            defer { try? FileManager.default.removeItem(at: folder) }
            let keyFile = folder.appendingPathComponent("one-key.pem")
            let keyPEM = try String(contentsOf: keyFile, encoding: .utf8)
            let identity = try ClientIdentity(
                certificateChainPEM: try String(contentsOf: folder.appendingPathComponent("one.pem"), encoding: .utf8),
                privateKeyPEM: keyPEM)
            let transport = AsyncHTTPClientTransport(clientIdentity: identity)
            _ = try transport.clientCertificateThumbprint()  // loaded into the TLS settings
            var dumped = ""
            dump(transport, to: &dumped)
            let keyBody = try TestCertificates.body(of: keyFile)
            for line in keyBody.split(separator: "\n") {
                #expect(!dumped.contains(line.prefix(32)))
            }
            #expect(!dumped.contains(keyBody.prefix(32)))
            #expect(!String(describing: identity).contains(keyBody.prefix(32)))
        }
    }
#endif
