import Foundation
import TestSupport
import Testing

@testable import AuthenticatedRequests

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct ClientIdentityTests {
    static let certificate = """
        -----BEGIN CERTIFICATE-----
        AAECAwQFBgcICQ==
        -----END CERTIFICATE-----
        """
    static let key = """
        -----BEGIN PRIVATE KEY-----
        c2VjcmV0LWtleS1ieXRlcw==
        -----END PRIVATE KEY-----
        """

    @Test func pemBlocksAreReadInOrderAndTextOutsideThemIsSkipped() throws {
        let text =
            "Bag Attributes\n" + Self.certificate + "\ncomment\r\n"
            + Self.certificate.replacingOccurrences(
                of: "AAECAwQFBgcICQ==", with: "CgsM")
        let blocks = try PEMDocument.blocks(in: Data(text.utf8))
        #expect(blocks.map(\.label) == ["CERTIFICATE", "CERTIFICATE"])
        #expect(blocks[0].der == Data(0...9))
        #expect(blocks[1].der == Data([10, 11, 12]))
    }

    @Test(arguments: [
        "-----BEGIN CERTIFICATE-----\nAAEC\n",
        "-----BEGIN CERTIFICATE-----\nAAEC\n-----END PRIVATE KEY-----\n",
        "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\n",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nAAEC\n-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----\n",
    ])
    func malformedPEMIsRefused(text: String) {
        #expect(throws: ClientIdentityError.self) { try PEMDocument.blocks(in: Data(text.utf8)) }
    }

    @Test func anIdentityNeedsACertificateAndExactlyOneKey() throws {
        #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificateChainPEM: Self.key, privateKeyPEM: Self.key)
        }
        #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificateChainPEM: Self.certificate, privateKeyPEM: Self.certificate)
        }
        #expect(throws: ClientIdentityError.self) {
            try ClientIdentity(certificateChainPEM: Self.certificate, privateKeyPEM: Self.key + "\n" + Self.key)
        }
        let identity = try ClientIdentity(certificateChainPEM: Self.certificate, privateKeyPEM: Self.key)
        #expect(try identity.currentPEM()?.certificates == [Data(0...9)])
    }

    @Test func theKeyIsInNoDescriptionMirrorOrDump() throws {
        let identity = try ClientIdentity(certificateChainPEM: Self.certificate, privateKeyPEM: Self.key)
        var dumped = ""
        dump(identity, to: &dumped)
        let pem = try #require(try identity.currentPEM())
        var dumpedPEM = ""
        dump(pem, to: &dumpedPEM)
        for text in [identity.description, identity.debugDescription, dumped, String(describing: pem), dumpedPEM] {
            #expect(!text.contains("c2VjcmV0LWtleS1ieXRlcw"), "\(text)")
            #expect(!text.contains("secret-key-bytes"))
        }
    }

    @Test func filesAreReadAgainWhenTheyChangeAndNotOtherwise() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("authreq-identity-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let certificateFile = folder.appendingPathComponent("cert.pem")
        let keyFile = folder.appendingPathComponent("key.pem")
        try Data(Self.certificate.utf8).write(to: certificateFile)
        try Data(Self.key.utf8).write(to: keyFile)
        let identity = ClientIdentity.pemFiles(certificateChain: certificateFile, privateKey: keyFile)
        let first = try #require(try identity.currentPEM())
        #expect(try identity.currentPEM()?.generation == first.generation, "unchanged files are not read again")

        // Rotated as agents do: a new file renamed over the old one.
        let staged = folder.appendingPathComponent(".cert.new")
        try Data(Self.certificate.replacingOccurrences(of: "AAECAwQFBgcICQ==", with: "CgsM").utf8).write(to: staged)
        #expect(rename(staged.path, certificateFile.path) == 0)
        let second = try #require(try identity.currentPEM())
        #expect(second.generation == first.generation + 1)
        #expect(second.certificates == [Data([10, 11, 12])])
        // A copy of the identity shares what was read.
        let copy = identity
        #expect(try copy.currentPEM()?.generation == second.generation)
    }

    @Test func anUnreadableOrMalformedFileIsATypedErrorWithoutItsContents() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("authreq-identity-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = ClientIdentity.pemFiles(
            certificateChain: folder.appendingPathComponent("none.pem"), privateKey: folder.appendingPathComponent("k"))
        let unreadable = #expect(throws: ClientIdentityError.self) { try missing.currentPEM() }
        #expect(unreadable?.code == .unreadable)
        #expect(unreadable?.message.contains("none.pem") == true)

        let keyFile = folder.appendingPathComponent("key.pem")
        try Data("-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n".utf8).write(to: keyFile)
        let certificateFile = folder.appendingPathComponent("cert.pem")
        try Data(Self.certificate.utf8).write(to: certificateFile)
        let truncated = ClientIdentity.pemFiles(certificateChain: certificateFile, privateKey: keyFile)
        let malformed = #expect(throws: ClientIdentityError.self) { try truncated.currentPEM() }
        #expect(malformed?.code == .malformed)
        #expect(malformed.map { !String(describing: $0).contains("c2VjcmV0") } == true)
    }

    #if canImport(FoundationNetworking)
        /// swift-corelibs-foundation has no client-certificate challenge: the transport refuses the
        /// identity when it is made, naming the transport that can present it.
        @Test func urlSessionTransportOnLinuxRefusesAClientIdentity() throws {
            let identity = try ClientIdentity(certificateChainPEM: Self.certificate, privateKeyPEM: Self.key)
            let error = #expect(throws: ClientIdentityError.self) {
                _ = try URLSessionTransport(clientIdentity: identity)
            }
            #expect(error?.code == .unsupportedByTransport)
            #expect(error?.message.contains("AsyncHTTPClientTransport(clientIdentity:)") == true)
            #expect(try URLSessionTransport.shared.clientCertificateThumbprint() == nil)
        }
    #endif
}
