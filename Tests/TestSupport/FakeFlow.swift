import AuthenticatedRequests
import Foundation

/// An OAuthFlow that issues numbered tokens without a network, counts its calls, and can be
/// held at a gate or made to fail.
package final class FakeFlow: OAuthFlow {
    package struct State: Sendable {
        package var obtainCalls = 0
        package var refreshCalls = 0
        package var issued = 0
        package var failure: (any Error)?
        package var gate: Gate?
        package var lifetime: TimeInterval? = 3600
        package var canObtain = true
        package var refreshedFrom: [String] = []
        /// Whether issued tokens carry `issuedAt`, as the token endpoint's do (the leeway is then
        /// at most a quarter of their lifetime).
        package var stampsIssuedAt = false
        /// Whether issued tokens are bound to the token transport's client certificate, as the
        /// token endpoint's are over mutual TLS.
        package var bindsToCertificate = false
    }

    package let state = Locked(State())
    package let storeKey: String

    package init(storeKey: String = "fake-client@https://auth.example.com/token") {
        self.storeKey = storeKey
    }

    package var refreshCalls: Int { state.withLock { $0.refreshCalls } }
    package var obtainCalls: Int { state.withLock { $0.obtainCalls } }

    package func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        let canObtain = state.withLock { s -> Bool in
            if s.canObtain { s.obtainCalls += 1 }
            return s.canObtain
        }
        guard canObtain else {
            throw AuthenticationError(code: .missingCredential, message: "sign in first")
        }
        return try await issue(context)
    }

    package func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        state.withLock {
            $0.refreshCalls += 1
            $0.refreshedFrom.append(token.accessToken)
        }
        return try await issue(context)
    }

    private func issue(_ context: AuthenticationContext) async throws -> OAuthToken {
        if let gate = state.withLock({ $0.gate }) { await gate.wait() }
        let (number, failure, lifetime, stamps, binds) = state.withLock {
            s -> (Int, (any Error)?, TimeInterval?, Bool, Bool) in
            s.issued += 1
            return (s.issued, s.failure, s.lifetime, s.stampsIssuedAt, s.bindsToCertificate)
        }
        if let failure { throw failure }
        let certificate = binds ? try context.transport.clientCertificateThumbprint() : nil
        return OAuthToken(
            accessToken: "access-\(number)",
            tokenType: "bearer",
            expiresAt: lifetime.map { context.clock.now.addingTimeInterval($0) },
            refreshToken: "refresh-\(number)",
            issuedAt: stamps ? context.clock.now : nil,
            certificateThumbprint: certificate
        )
    }
}
