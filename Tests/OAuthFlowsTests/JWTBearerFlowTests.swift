import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc  // mkfifo
#elseif canImport(Darwin)
    import Darwin
#endif

/// RFC 7523 §2.1, typed: the assertion is asked from its source for every grant (a workload
/// token file the platform rotates), and an expired one is never sent.
@Suite struct JWTBearerFlowTests {
    let clock = TestClock()
    let server = TokenServer()
    var context: AuthenticationContext { server.context(clock: clock) }

    /// An unsigned JWT (the server verifies signatures; the client reads only `exp`).
    func jwt(subject: String, expiresIn: TimeInterval) -> String {
        let header = Base64URL.encode(Data(#"{"alg":"ES256","typ":"JWT"}"#.utf8))
        let exp = Int(clock.now.timeIntervalSince1970 + expiresIn)
        let payload = Base64URL.encode(
            Data(#"{"iss":"https://k8s.example.com","sub":"\#(subject)","exp":\#(exp)}"#.utf8))
        return "\(header).\(payload).c2lnbmF0dXJl"
    }

    func tokenReply() -> String {
        #"{"access_token":"at-\#(UUID().uuidString.prefix(6))","token_type":"Bearer","expires_in":60}"#
    }

    @Test func theWorkloadTokenFileIsReadAgainForEveryGrant() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try jwt(subject: "first", expiresIn: 600).write(to: file, atomically: true, encoding: .utf8)
        let flow = JWTBearerFlow(
            tokenEndpoint: tokenURL, client: .none(id: "job"), assertion: .file(file), scope: "reports:read",
            resources: [URL(string: "https://api.example.com")!])
        server.reply(json: tokenReply())
        let first = try await flow.obtainToken(for: context)
        // The platform rotates the file; the next grant presents the new token.
        try jwt(subject: "second", expiresIn: 600).write(to: file, atomically: true, encoding: .utf8)
        server.reply(json: tokenReply())
        _ = try await flow.refresh(first, for: context)
        let sent = server.requests
        #expect(sent.map { $0.form["grant_type"] } == [JWTBearerFlow.grantType, JWTBearerFlow.grantType])
        #expect(sent[0].form["assertion"] == jwt(subject: "first", expiresIn: 600))
        #expect(sent[1].form["assertion"] == jwt(subject: "second", expiresIn: 600))
        #expect(sent[0].formNames == ["grant_type", "assertion", "scope", "resource", "client_id"])
    }

    @Test func anExpiredAssertionIsNotSentAndTheErrorSaysWhichSourceAndWhen() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try jwt(subject: "stale", expiresIn: -5).write(to: file, atomically: true, encoding: .utf8)
        let flow = JWTBearerFlow(tokenEndpoint: tokenURL, client: .none(id: "job"), assertion: .file(file))
        let error = await #expect(throws: AssertionError.self) { try await flow.obtainToken(for: context) }
        #expect(error?.code == .expired)
        #expect(error?.message.contains(file.path) == true)
        #expect(error?.expiredAt == Date(timeIntervalSince1970: (clock.now.timeIntervalSince1970 - 5).rounded(.down)))
        #expect(server.requests.isEmpty, "nothing was sent")
    }

    @Test func aMissingOrEmptySourceIsATypedErrorAndNothingIsSent() async throws {
        let missing = URL(fileURLWithPath: "/nonexistent/workload-token")
        let error = await #expect(throws: AssertionError.self) {
            try await JWTBearerFlow(tokenEndpoint: tokenURL, client: .none(id: "job"), assertion: .file(missing))
                .obtainToken(for: context)
        }
        #expect(error?.code == .unreadable)
        let empty = await #expect(throws: AssertionError.self) {
            try await JWTBearerFlow(
                tokenEndpoint: tokenURL, client: .none(id: "job"),
                assertion: .environment("AUTHREQ_TEST_UNSET_ASSERTION")
            ).obtainToken(for: context)
        }
        #expect(empty?.code == .empty)
        #expect(server.requests.isEmpty)
    }

    @Test func anUnidentifiedClientSendsTheAssertionAloneWithNoClientID() async throws {
        server.reply(json: tokenReply())
        let flow = JWTBearerFlow(
            tokenEndpoint: tokenURL, client: .unidentified, assertion: .fixed(jwt(subject: "job", expiresIn: 600)))
        _ = try await flow.obtainToken(for: context)
        #expect(server.requests.first?.formNames == ["grant_type", "assertion"])
        #expect(server.requests.first?.header("Authorization") == nil)
        #expect(ClientAuthentication.unidentified.methodName == "none")
        #expect(!ClientAuthentication.unidentified.isConfidential)
    }

    /// The error of a grant whose assertion is the file at `url`.
    func fileError(_ url: URL) async -> AssertionError? {
        await #expect(throws: AssertionError.self) {
            try await JWTBearerFlow(tokenEndpoint: tokenURL, client: .none(id: "job"), assertion: .file(url))
                .obtainToken(for: context)
        }
    }

    @Test func aFileOverTheLimitIsRefusedWithoutBeingReadWhole() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        // A sparse 100 MiB file: reading it whole would cost 100 MiB; the source reads 64 KiB + 1.
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8)))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 100 << 20)
        try handle.close()
        let error = await fileError(file)
        #expect(error?.code == .tooLarge)
        #expect(error?.message.contains("64 KiB") == true)
        // Exactly at the limit is accepted; one byte more is not.
        try String(repeating: "a", count: 64 * 1024).write(to: file, atomically: false, encoding: .utf8)
        server.reply(json: tokenReply())
        _ = try await JWTBearerFlow(tokenEndpoint: tokenURL, client: .none(id: "job"), assertion: .file(file))
            .obtainToken(for: context)
        try String(repeating: "a", count: 64 * 1024 + 1).write(to: file, atomically: false, encoding: .utf8)
        #expect(await fileError(file)?.code == .tooLarge)
        #expect(server.requests.count == 1, "only the file within the limit was sent")
    }

    @Test func aPipeWithNoWriterOrAFolderIsRefusedAtOnce() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("token")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        // Opening a FIFO without a writer would wait for ever; the source refuses it instead.
        #expect(await fileError(fifo)?.code == .notARegularFile)
        #expect(await fileError(folder)?.code == .notARegularFile)
        #expect(await fileError(URL(fileURLWithPath: "/dev/zero"))?.code == .notARegularFile)
        #expect(server.requests.isEmpty)
    }

    @Test func aFileThatIsNotUTF8IsRefusedNotSentAsReplacementCharacters() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("workload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data([0x65, 0x79, 0xFF, 0xFE, 0x2E]).write(to: file)
        let error = await fileError(file)
        #expect(error?.code == .invalidEncoding)
        #expect(server.requests.isEmpty)
    }

    @Test func theAssertionIsInNoDescriptionOrError() async throws {
        let assertion = jwt(subject: "secret-subject", expiresIn: 600)
        let flow = JWTBearerFlow(tokenEndpoint: tokenURL, client: .none(id: "job"), assertion: .fixed(assertion))
        var dumped = ""
        dump(flow, to: &dumped)
        #expect(!String(describing: flow).contains(assertion) && !dumped.contains(assertion))
        server.reply(status: 400, json: #"{"error":"invalid_grant","error_description":"bad assertion \#(assertion)"}"#)
        let error = await #expect(throws: OAuthError.self) { try await flow.obtainToken(for: context) }
        #expect(error?.description.contains(assertion) == false)
    }

    // MARK: GitHub Actions

    static let runner: @Sendable () -> [String: String] = {
        [
            "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelines.actions.example.com/idtoken?api-version=2.0",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "runner-request-token-SECRET",
        ]
    }

    @Test func gitHubActionsTokenIsRequestedFromTheRunnerForEveryGrant() async throws {
        let flow = JWTBearerFlow(
            tokenEndpoint: tokenURL, client: .none(id: "ci"),
            assertion: .gitHubActions(audience: "https://auth.example.com", environment: Self.runner))
        server.reply(
            json: #"{"count":1,"value":"\#(jwt(subject: "repo:acme/app:ref:refs/heads/main", expiresIn: 300))"}"#)
        server.reply(json: tokenReply())
        let first = try await flow.obtainToken(for: context)
        server.reply(json: #"{"count":1,"value":"\#(jwt(subject: "second", expiresIn: 300))"}"#)
        server.reply(json: tokenReply())
        _ = try await flow.refresh(first, for: context)
        let sent = server.requests
        #expect(sent.count == 4, "runner, token endpoint, runner, token endpoint")
        let runnerRequest = try #require(sent.first?.request)
        #expect(
            runnerRequest.url?.absoluteString
                == "https://pipelines.actions.example.com/idtoken?api-version=2.0&audience=https://auth.example.com")
        #expect(sent[0].header("Authorization") == "bearer runner-request-token-SECRET")
        #expect(sent[1].form["assertion"] == jwt(subject: "repo:acme/app:ref:refs/heads/main", expiresIn: 300))
        #expect(sent[3].form["assertion"] == jwt(subject: "second", expiresIn: 300), "asked again")
        #expect(sent[1].header("Authorization") == nil, "the runner's token never goes to the token endpoint")
    }

    @Test func gitHubActionsOutsideARunnerOrRefusedIsATypedErrorWithoutTheRunnerToken() async throws {
        let outside = JWTBearerFlow(
            tokenEndpoint: tokenURL, client: .none(id: "ci"),
            assertion: .gitHubActions(audience: "aud", environment: { [:] }))
        let missing = await #expect(throws: AssertionError.self) { try await outside.obtainToken(for: context) }
        #expect(missing?.code == .unreadable)
        #expect(missing?.message.contains("id-token: write") == true)

        let refused = JWTBearerFlow(
            tokenEndpoint: tokenURL, client: .none(id: "ci"),
            assertion: .gitHubActions(audience: "aud", environment: Self.runner))
        server.reply(status: 403, json: #"{"message":"no permission for runner-request-token-SECRET"}"#)
        let error = await #expect(throws: AssertionError.self) { try await refused.obtainToken(for: context) }
        #expect(error?.code == .unreadable)
        #expect(error?.message.contains("403") == true)
        #expect(error.map { "\($0)" }?.contains("SECRET") == false)
        #expect(server.requests.count == 1, "nothing reached the token endpoint")

        let plain = JWTBearerFlow(
            tokenEndpoint: tokenURL, client: .none(id: "ci"),
            assertion: .gitHubActions(
                audience: "aud",
                environment: {
                    [
                        "ACTIONS_ID_TOKEN_REQUEST_URL": "http://runner.example.com/t",
                        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "x",
                    ]
                }))
        let insecure = await #expect(throws: AssertionError.self) { try await plain.obtainToken(for: context) }
        #expect(insecure?.message.contains("plain HTTP") == true)
        #expect(server.requests.count == 1, "the request token never goes over plain HTTP")
    }
}
