import AuthenticatedRequests
import Foundation

/// The polling both the device grant (RFC 8628 §3.5) and CIBA's poll mode (CIBA Core §7.3, §11)
/// share: wait `interval`, ask, keep waiting on `authorization_pending`, add 5 seconds for good
/// on `slow_down`, and stop with any other answer. It never sleeps past `expiresAt`, and never
/// asks after it: it throws `expired` instead.
enum TokenPolling {
    static func poll(
        every interval: TimeInterval,
        until expiresAt: Date,
        clock: any WallClock,
        sleep: DeviceAuthorizationFlow.Sleep,
        expired: OAuthError,
        _ ask: () async throws -> OAuthToken
    ) async throws -> OAuthToken {
        var interval = DeviceAuthorizationFlow.usableInterval(interval)
        while true {
            let remaining = expiresAt.timeIntervalSince(clock.now)
            guard remaining > 0 else { throw expired }
            try await sleep(Swift.min(interval, remaining))
            try Task.checkCancellation()
            guard clock.now < expiresAt else { throw expired }
            do {
                return try await ask()
            } catch let error as OAuthError where error.code == .authorizationPending {
                continue
            } catch let error as OAuthError where error.code == .slowDown {
                interval += 5
            }
        }
    }
}
