import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A flow that steps up by issuing `access-<n>` with the scope asked for, counting step-ups.
final class SteppingFlow: OAuthFlow {
    let steps = Locked<[StepUpRequirement]>([])
    let canStepUp: Bool
    let storeKey = "stepping@https://auth.example.com/token"

    init(canStepUp: Bool = true) { self.canStepUp = canStepUp }

    func obtainToken(for context: AuthenticationContext) async throws -> OAuthToken {
        OAuthToken(accessToken: "access-0", tokenType: "Bearer", expiresAt: nil, scope: "read")
    }

    func refresh(_ token: OAuthToken, for context: AuthenticationContext) async throws -> OAuthToken {
        Issue.record("a step-up is not a refresh")
        return token
    }

    func stepUp(_ token: OAuthToken, to requirement: StepUpRequirement, for context: AuthenticationContext)
        async throws -> OAuthToken
    {
        let count = steps.withLock {
            $0.append(requirement); return $0.count
        }
        try await Task.sleep(for: .milliseconds(20))  // let the other requests queue behind it
        return OAuthToken(
            accessToken: "access-\(count)", tokenType: "Bearer", expiresAt: nil,
            scope: [token.scope, requirement.scope].compactMap { $0 }.joined(separator: " "))
    }
}

/// A resource that needs the scope `write` (403 `insufficient_scope` otherwise), or refuses
/// every token with a step-up challenge when `unreachable`.
func stepUpServer(unreachable: Bool = false, seen: Locked<[String]>) -> InMemoryTransport {
    InMemoryTransport { request in
        let authorization = request.value(forHTTPHeaderField: "Authorization") ?? ""
        seen.withLock { $0.append(authorization) }
        if unreachable || authorization == "Bearer access-0" {
            return try InMemoryTransport.reply(
                to: request, status: 403,
                headers: ["WWW-Authenticate": #"Bearer error="insufficient_scope", scope="write""#], json: "{}")
        }
        return try InMemoryTransport.reply(to: request, json: #"{"ok":true}"#)
    }
}

struct Write: AuthenticatedResource {
    let authenticator: any RequestAuthenticator
    let transport: any HTTPTransport
    func urlRequest(using input: Void) throws -> URLRequest {
        var request = URLRequest(url: URL(string: "https://api.example.com/notes")!)
        request.httpMethod = "POST"
        return request
    }
    var httpMethod: RequestMethod { .post }
    func decode(_ body: Data, from response: ResponseHead) throws -> Data { body }
}

/// Step-up through the engine, in memory: one shared step-up for concurrent requests, one retry,
/// a typed end to a second refusal, and nothing new for flows that cannot step up.
@Suite struct StepUpTests {
    @Test func challengesAreReadAsStepUpRequirements() throws {
        func requirement(_ status: Int, _ header: String) throws -> StepUpRequirement? {
            let response = ResponseHead(
                statusCode: status, url: URL(string: "https://api.example.com")!,
                headerFields: [("WWW-Authenticate", header)])
            return StepUpRequirement(response: response)
        }
        let scope = try requirement(403, #"Bearer error="insufficient_scope", scope="write admin""#)
        #expect(scope == StepUpRequirement(reason: .insufficientScope, scope: "write admin"))
        let user = try requirement(
            401,
            #"Bearer error="insufficient_user_authentication", acr_values="urn:mfa urn:phr", max_age="300""#)
        #expect(user?.acrValues == ["urn:mfa", "urn:phr"])
        #expect(user?.maxAge == 300)
        #expect(try requirement(401, #"Bearer error="insufficient_user_authentication", max_age="-5""#)?.maxAge == nil)
        #expect(try requirement(401, #"Bearer error="invalid_token""#) == nil)
        #expect(try requirement(400, #"Bearer error="insufficient_scope""#) == nil)
        #expect(
            try requirement(403, #"DPoP algs="ES256", error="insufficient_scope", scope="x""#)?.scope == "x",
            "any scheme's challenge")
        let details = try requirement(
            403,
            #"Bearer error="insufficient_authorization_details", authorization_details="[{\"type\":\"payment_initiation\",\"amount\":\"120\"}]""#
        )
        #expect(details?.reason == .insufficientAuthorizationDetails)
        #expect(details?.authorizationDetails.map(\.type) == ["payment_initiation"])
        #expect(details?.authorizationDetails.first?.fields["amount"] == .string("120"))
        #expect(details.map(String.init(describing:))?.contains("authorization_details: payment_initiation") == true)
        let bare = try requirement(403, #"Bearer error="insufficient_authorization_details""#)
        #expect(bare?.reason == .insufficientAuthorizationDetails && bare?.authorizationDetails.isEmpty == true)
        #expect(
            try requirement(403, #"Bearer error="insufficient_authorization_details", authorization_details="{""#)
                == nil,
            "details nobody can read are no requirement")
        #expect(
            try requirement(403, #"Bearer error="insufficient_authorization_details", authorization_details="[]""#)
                == nil)
    }

    @Test func concurrentRequestsShareOneStepUpThenEachRetriesOnce() async throws {
        let flow = SteppingFlow()
        let seen = Locked<[String]>([])
        let authenticator = OAuthAuthenticator(flow: flow)
        let transport = stepUpServer(seen: seen)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { _ = try await Write(authenticator: authenticator, transport: transport).request() }
            }
            try await group.waitForAll()
        }
        #expect(flow.steps.withLock { $0 } == [StepUpRequirement(reason: .insufficientScope, scope: "write")])
        #expect(seen.withLock { $0.filter { $0 == "Bearer access-1" }.count } == 8, "each retried once")
        #expect(try await authenticator.currentCredential()?.scope == "read write")
    }

    @Test func aSecondRefusalEndsWithATypedErrorAfterOneStepUp() async throws {
        let flow = SteppingFlow()
        let seen = Locked<[String]>([])
        let resource = Write(
            authenticator: OAuthAuthenticator(flow: flow), transport: stepUpServer(unreachable: true, seen: seen))
        let error = await #expect(throws: StepUpError.self) { _ = try await resource.request() }
        #expect(error?.code == .refusedAfterStepUp)
        #expect(error?.requirement.scope == "write")
        #expect(flow.steps.withLock { $0.count } == 1)
        #expect(seen.withLock { $0.count } == 2, "the request and its one retry")
    }

    @Test func aFlowThatCannotStepUpPassesTheRefusalOnUntouched() async throws {
        let flow = SteppingFlow(canStepUp: false)
        let seen = Locked<[String]>([])
        let resource = Write(authenticator: OAuthAuthenticator(flow: flow), transport: stepUpServer(seen: seen))
        let error = await #expect(throws: ResourceError.self) { _ = try await resource.request() }
        #expect(error?.statusCode == 403)
        #expect(flow.steps.withLock { $0.isEmpty })
        #expect(seen.withLock { $0.count } == 1, "no retry")
    }
}
