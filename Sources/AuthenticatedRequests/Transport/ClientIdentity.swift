import Foundation

#if canImport(Security)
    import Security
#endif

/// The TLS client identity of a transport for mutual TLS (RFC 8705): a certificate chain and its
/// private key, presented in every TLS handshake the transport makes.
///
/// Give one to `AsyncHTTPClientTransport(clientIdentity:)` (module `AsyncHTTPClientTransport`),
/// or on Apple platforms to ``URLSessionTransport/init(configuration:clientIdentity:)``. The
/// authorization server then authenticates the client by it (`tls_client_auth`,
/// `self_signed_tls_client_auth`) and binds the tokens it issues to it (their `cnf.x5t#S256`).
///
/// Three sources:
/// - ``pemFiles(certificateChain:privateKey:)``: PEM files, re-read whenever they change, as a
///   workload's rotating certificate does (cert-manager, SPIFFE helpers, Vault agents write the
///   new pair in place). The next TLS handshake presents the new certificate.
/// - ``init(certificateChainPEM:privateKeyPEM:)``: PEM text held in memory.
/// - On Apple platforms, `init(secIdentity:)`: a `SecIdentity`, from the Keychain or from a
///   PKCS #12 file, for `URLSessionTransport`.
///
/// The private key is secret: no description, mirror or error ever shows it.
public struct ClientIdentity: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    enum Source: Sendable {
        case files(certificateChain: URL, privateKey: URL, cache: FileCache)
        case memory(PEMIdentity)
        #if canImport(Security)
            case secIdentity(SecIdentityBox)
        #endif
    }

    let source: Source

    /// PEM files read when first needed and again whenever either file changes (its size,
    /// modification time or inode): write the new pair in place, or rename new files over the old.
    ///
    /// - Parameters:
    ///   - certificateChain: the client certificate first, then any intermediate certificates.
    ///   - privateKey: the certificate's key, PKCS #8 (`PRIVATE KEY`) or the algorithm's own form
    ///     (`EC PRIVATE KEY`, `RSA PRIVATE KEY`), unencrypted: keep the file readable by the
    ///     service's user only.
    public static func pemFiles(certificateChain: URL, privateKey: URL) -> ClientIdentity {
        ClientIdentity(source: .files(certificateChain: certificateChain, privateKey: privateKey, cache: FileCache()))
    }

    /// A certificate chain and key given as PEM text.
    ///
    /// - Throws: ``ClientIdentityError`` `.malformed` when the text holds no certificate, no key,
    ///   or a block that is not PEM.
    public init(certificateChainPEM: String, privateKeyPEM: String) throws {
        source = .memory(
            try PEMIdentity(certificateChain: Data(certificateChainPEM.utf8), privateKey: Data(privateKeyPEM.utf8)))
    }

    #if canImport(Security)
        /// A `SecIdentity` (a certificate with its private key, from the Keychain or
        /// `SecPKCS12Import`), for `URLSessionTransport` on Apple platforms.
        public init(secIdentity: SecIdentity) {
            source = .secIdentity(SecIdentityBox(identity: secIdentity))
        }

        /// The identity as `Security` has it, when it was made from one.
        package var secIdentity: SecIdentity? {
            if case .secIdentity(let box) = source { return box.identity }
            return nil
        }
    #endif

    private init(source: Source) {
        self.source = source
    }

    /// The certificate chain and key as they are now: the files read again if they changed since
    /// they were last read; `nil` for a `SecIdentity`, which only `URLSessionTransport` presents.
    ///
    /// - Throws: ``ClientIdentityError`` `.unreadable` when a file cannot be read, `.malformed`
    ///   when it is not PEM or holds no certificate or no key.
    package func currentPEM() throws -> PEMIdentity? {
        switch source {
        case .files(let certificateChain, let privateKey, let cache):
            return try cache.current(certificateChain: certificateChain, privateKey: privateKey)
        case .memory(let identity):
            return identity
        #if canImport(Security)
            case .secIdentity:
                return nil
        #endif
        }
    }

    /// Where the identity comes from; never the key.
    public var description: String {
        switch source {
        case .files(let certificateChain, let privateKey, _):
            "ClientIdentity(certificateChain: \(certificateChain.path), privateKey: \(privateKey.path))"
        case .memory:
            "ClientIdentity(in memory, privateKey: \(Redaction.placeholder))"
        #if canImport(Security)
            case .secIdentity:
                "ClientIdentity(SecIdentity)"
        #endif
        }
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without the key.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// A certificate chain and key read from PEM: what a TLS library is given.
package struct PEMIdentity: Sendable, CustomStringConvertible {
    /// The DER of each certificate, the client's own first.
    package let certificates: [Data]
    /// The PEM text of the chain, as read.
    package let certificateChainPEM: Data
    /// The PEM text of the key, as read: secret.
    package let privateKeyPEM: Data
    /// Counts the reads of a file identity: a new number whenever the files changed.
    package let generation: Int

    init(certificateChain: Data, privateKey: Data, generation: Int = 0) throws {
        let chain = try PEMDocument.blocks(in: certificateChain)
        certificates = chain.filter { $0.label == "CERTIFICATE" }.map(\.der)
        guard !certificates.isEmpty else {
            throw ClientIdentityError(.malformed, "The certificate chain holds no CERTIFICATE block.")
        }
        let keys = try PEMDocument.blocks(in: privateKey).filter { $0.label.hasSuffix("PRIVATE KEY") }
        guard keys.count == 1 else {
            throw ClientIdentityError(
                .malformed,
                keys.isEmpty
                    ? "The private key file holds no unencrypted PRIVATE KEY block."
                    : "The private key file holds \(keys.count) keys; give one.")
        }
        certificateChainPEM = certificateChain
        privateKeyPEM = privateKey
        self.generation = generation
    }

    /// The number of certificates; never the key.
    package var description: String { "PEMIdentity(\(certificates.count) certificates, key: \(Redaction.placeholder))" }
}

/// The last read of a file identity, and what the files looked like then.
final class FileCache: Sendable {
    private struct Stamp: Equatable {
        var size: Int
        var modified: Date
        var inode: Int
    }

    private struct Entry {
        var stamps: [Stamp]
        var identity: PEMIdentity
    }

    private let entry = Locked<Entry?>(nil)

    func current(certificateChain: URL, privateKey: URL) throws -> PEMIdentity {
        let stamps = [try Self.stamp(of: certificateChain), try Self.stamp(of: privateKey)]
        if let cached = entry.withLock({ $0 }), cached.stamps == stamps { return cached.identity }
        let generation = (entry.withLock { $0?.identity.generation } ?? 0) + 1
        let identity = try PEMIdentity(
            certificateChain: try Self.read(certificateChain), privateKey: try Self.read(privateKey),
            generation: generation)
        // Stamped before the read: a write during the read makes the next call read again.
        entry.withLock { $0 = Entry(stamps: stamps, identity: identity) }
        return identity
    }

    private static func stamp(of url: URL) throws -> Stamp {
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            return Stamp(
                size: (attributes[.size] as? NSNumber)?.intValue ?? -1,
                modified: attributes[.modificationDate] as? Date ?? .distantPast,
                inode: (attributes[.systemFileNumber] as? NSNumber)?.intValue ?? -1)
        } catch {
            throw ClientIdentityError(.unreadable, "\(url.path) cannot be read (\(Self.reason(error))).")
        }
    }

    private static func read(_ url: URL) throws -> Data {
        do {
            let data = try Data(contentsOf: url)
            guard data.count <= PEMDocument.maximumSize else {
                throw ClientIdentityError(.malformed, "\(url.path) is larger than \(PEMDocument.maximumSize) bytes.")
            }
            return data
        } catch let error as ClientIdentityError {
            throw error
        } catch {
            throw ClientIdentityError(.unreadable, "\(url.path) cannot be read (\(Self.reason(error))).")
        }
    }

    /// The system's reason, without the file's contents (there are none in these errors).
    private static func reason(_ error: any Error) -> String {
        let error = error as NSError
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return error.localizedDescription
    }
}

#if canImport(Security)
    /// A `SecIdentity` as a `Sendable` value.
    ///
    /// `@unchecked Sendable`: `SecIdentity` is an immutable Core Foundation object, and the
    /// Security framework's identity functions may be called from any thread.
    struct SecIdentityBox: @unchecked Sendable {
        let identity: SecIdentity
    }
#endif

/// Why a client identity could not be used.
public struct ClientIdentityError: Error, Sendable, CustomStringConvertible {
    /// The class of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A file of the identity cannot be read (missing, not permitted).
        public static let unreadable = Code("unreadable")
        /// A file or text is not PEM, or holds no certificate or no unencrypted key.
        public static let malformed = Code("malformed")
        /// The transport cannot present this identity (`URLSessionTransport` on Linux, or a PEM
        /// identity on Apple platforms' `URLSession`, which takes a `SecIdentity`).
        public static let unsupportedByTransport = Code("unsupported by the transport")
        /// The certificate and key could not be loaded by the TLS library (a key that does not
        /// match the certificate, an algorithm it does not know).
        public static let rejectedByTLS = Code("rejected by TLS")

        /// The code's text.
        public let description: String

        private init(_ description: String) { self.description = description }
    }

    /// The class of failure.
    public let code: Code
    /// What went wrong and what to do; never the key.
    public let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `Client identity <code>: <message>`.
    public var description: String { "Client identity \(code): \(message)" }
}
