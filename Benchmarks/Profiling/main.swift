// Sends N requests over the in-memory transport, plain or through an OAuthAuthenticator, for
// Benchmarks/profile to count their instructions under callgrind. Usage:
//   RequestProfile plain|authenticated|dpop N
import AuthenticatedRequests
import DPoP
import Dispatch
import Foundation
import RequestFixtures

/// A flow that is never asked for a token: the token given at creation stays valid.
struct NoRefreshFlow: OAuthFlow {
    let storeKey = "profile@https://auth.example.com/token"

    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        throw URLError(.userAuthenticationRequired)
    }

    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        throw URLError(.userAuthenticationRequired)
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, ["plain", "authenticated", "dpop"].contains(arguments[1]), let count = Int(arguments[2])
else {
    FileHandle.standardError.write(Data("usage: RequestProfile plain|authenticated|dpop N\n".utf8))
    exit(2)
}
let authenticated = arguments[1] != "plain"
let dpop = arguments[1] == "dpop"

/// The requests, after 100 of each kind to warm up; both runs do the same warm-up, so it cancels
/// out of the difference.
func run() async throws {
    let plain = PlainMe(transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
    let authenticator: OAuthAuthenticator
    if dpop {
        // A DPoP-bound token: every request also signs a proof.
        let prover = DPoPProver()
        var token = Fixtures.validToken()
        token.tokenType = "DPoP"
        token.boundKey = try await prover.key(for: nil)
        authenticator = OAuthAuthenticator(
            flow: NoRefreshFlow(), token: token, configuration: .init(proofOfPossession: prover))
    } else {
        authenticator = OAuthAuthenticator(flow: NoRefreshFlow(), token: Fixtures.validToken())
    }
    let viaAuthenticator = AuthenticatedMe(
        authenticator: authenticator, transport: Fixtures.inMemoryAPI, url: Fixtures.apiURL)
    for _ in 0..<100 {
        _ = try await plain.request()
        _ = try await viaAuthenticator.request()
    }
    if authenticated {
        for _ in 0..<count { _ = try await viaAuthenticator.request() }
    } else {
        for _ in 0..<count { _ = try await plain.request() }
    }
}

// A synchronous main that waits on a semaphore: valgrind crashes in dispatch_main's sigsuspend,
// which an async main ends in on Linux.
let done = DispatchSemaphore(value: 0)
let failure = Locked<String?>(nil)
Task.detached {
    do { try await run() } catch { failure.withLock { $0 = "\(error)" } }
    done.signal()
}
done.wait()
if let message = failure.withLock({ $0 }) {
    FileHandle.standardError.write(Data("RequestProfile failed: \(message)\n".utf8))
    exit(1)
}
