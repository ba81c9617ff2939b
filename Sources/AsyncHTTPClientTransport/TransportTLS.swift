#if AsyncHTTPClient
    import AuthenticatedRequests
    import Crypto
    import Foundation
    import NIOSSL

    /// The TLS configuration of an ``AsyncHTTPClientTransport``'s requests: its base settings with
    /// the client identity's certificate chain and key, made again when the identity's files change.
    final class TransportTLS: Sendable {
        /// One generation of the identity as TLS settings.
        struct Current: Sendable {
            /// The settings every request carries (AsyncHTTPClient pools connections by them).
            let configuration: TLSConfiguration
            /// The `x5t#S256` of the client certificate, or `nil` without an identity.
            let thumbprint: String?
            /// The identity's generation these settings were made from.
            let generation: Int
        }

        private let base: TLSConfiguration
        private let identity: ClientIdentity?
        private let cache = Locked<Current?>(nil)

        init(base: TLSConfiguration, identity: ClientIdentity?) {
            self.base = base
            self.identity = identity
        }

        /// The settings for the identity as it is now.
        ///
        /// - Throws: ``ClientIdentityError`` when the files cannot be read or parsed, when the
        ///   identity is a `SecIdentity` (only `URLSessionTransport` presents one), or when TLS
        ///   refuses the certificate and key (a key that is not the certificate's).
        func current() throws -> Current {
            guard let identity else {
                if let cached = cache.withLock({ $0 }) { return cached }
                let current = Current(configuration: base, thumbprint: nil, generation: 0)
                cache.withLock { $0 = current }
                return current
            }
            guard let pem = try identity.currentPEM() else {
                throw ClientIdentityError(
                    .unsupportedByTransport,
                    "AsyncHTTPClientTransport presents PEM identities; a SecIdentity is for URLSessionTransport.")
            }
            if let cached = cache.withLock({ $0 }), cached.generation == pem.generation { return cached }
            let current = try Self.make(base, with: pem)
            cache.withLock { $0 = current }
            return current
        }

        private static func make(_ base: TLSConfiguration, with pem: PEMIdentity) throws -> Current {
            var configuration = base
            do {
                let certificates = try pem.certificates.map { try NIOSSLCertificate(bytes: Array($0), format: .der) }
                let key = try NIOSSLPrivateKey(bytes: Array(pem.privateKeyPEM), format: .pem)
                configuration.certificateChain = certificates.map { .certificate($0) }
                configuration.privateKey = .privateKey(key)
                // Checks now, not at the first handshake, that the key is the certificate's.
                _ = try NIOSSLContext(configuration: configuration)
            } catch {
                // NIOSSL's errors name no key material; only their type is kept.
                throw ClientIdentityError(
                    .rejectedByTLS,
                    "TLS could not load the certificate chain and key (\(type(of: error))): check that the key "
                        + "belongs to the first certificate and that both are in a form BoringSSL reads.")
            }
            let thumbprint = Base64URL.encode(Data(SHA256.hash(data: pem.certificates[0])))
            return Current(configuration: configuration, thumbprint: thumbprint, generation: pem.generation)
        }
    }
#endif
