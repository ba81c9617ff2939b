import AuthenticatedRequests
import Foundation

/// The latest `DPoP-Nonce` of each origin (RFC 9449 §8, §9): the token endpoint's and each
/// resource server's are kept apart. Bounded: a client that talks to very many origins forgets
/// some and pays one extra round trip when it comes back to them.
struct DPoPNonces: Sendable {
    /// The most origins remembered.
    static let capacity = 256
    /// The longest nonce accepted, in characters.
    static let maximumLength = 1024

    private let nonces = Locked<[String: String]>([:])

    /// The nonce to use for a request to `target`, if its origin sent one.
    func nonce(for target: ProofTarget) -> String? {
        nonces.withLock { $0[target.origin] }
    }

    /// The nonce to use for a request to `url`, if its origin sent one.
    func nonce(for url: URL) -> String? {
        guard let target = try? ProofTarget(url) else { return nil }
        return nonce(for: target)
    }

    /// Remembers `header` (a `DPoP-Nonce` value) for `url`'s origin; returns the nonce, or `nil`
    /// for a value that is no nonce (`1*NQCHAR`, RFC 9449 §8.1) or too long.
    @discardableResult
    func remember(_ header: String?, for url: URL?) -> String? {
        guard let header, let nonce = Self.validated(header), let url, let origin = try? ProofTarget(url).origin else {
            return nil
        }
        nonces.withLock { nonces in
            if nonces[origin] == nil, nonces.count >= Self.capacity, let someOrigin = nonces.keys.first {
                nonces[someOrigin] = nil
            }
            nonces[origin] = nonce
        }
        return nonce
    }

    /// `value` when it is `1*NQCHAR` (`%x21 / %x23-5B / %x5D-7E`) of at most ``maximumLength``.
    static func validated(_ value: String) -> String? {
        let scalars = value.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= maximumLength else { return nil }
        let isNonce = scalars.allSatisfy { scalar in
            let code = scalar.value
            return code == 0x21 || (0x23...0x5B).contains(code) || (0x5D...0x7E).contains(code)
        }
        return isNonce ? value : nil
    }
}
