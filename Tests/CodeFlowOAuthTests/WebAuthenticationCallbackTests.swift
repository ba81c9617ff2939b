import AuthenticatedRequests
import Foundation
import Testing

@testable import CodeFlowOAuth

/// The platform-independent part of `WebAuthenticationSessionUserAgent` (which redirect URIs a
/// web authentication session can return to, which returned URL is the redirect, how the
/// session's endings map) and the choice of default user agent per platform.
@Suite struct WebAuthenticationCallbackTests {
    func callback(_ string: String) throws -> WebAuthenticationCallback {
        try WebAuthenticationCallback(redirectURI: try #require(URL(string: string)))
    }

    @Test func reverseDomainSchemesAndHTTPSURLsAreCallbacks() throws {
        #expect(try callback("com.example.app:/oauth").kind == .customScheme("com.example.app"))
        #expect(try callback("com.example.app://callback").kind == .customScheme("com.example.app"))
        #expect(try callback("Com.Example.App:/oauth").kind == .customScheme("com.example.app"))
        #expect(
            try callback("https://app.example.com/oauth/callback").kind
                == .https(host: "app.example.com", path: "/oauth/callback"))
        #expect(try callback("https://APP.example.com").kind == .https(host: "app.example.com", path: "/"))
    }

    @Test(arguments: [
        ("http://127.0.0.1/callback", "LoopbackUserAgent"),
        ("http://app.example.com/callback", "https"),
        ("myapp:/oauth", "reverse domain name"),
        ("file:///etc/passwd", "handled by the system"),
        ("javascript:alert(1)", "handled by the system"),
        ("data.x:/a#frag", "fragment"),
        ("https://app.example.com:8443/cb", "port"),
        ("https://user:pw@app.example.com/cb", "user information"),
    ])
    func redirectURIsASessionCannotReturnToAreRefusedWithTheReason(uri: String, reason: String) throws {
        let error = #expect(throws: CodeFlowError.self) { try callback(uri) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }

    @Test func schemeSyntaxIsRFC3986s() {
        #expect(WebAuthenticationCallback.isSchemeSyntax("com.example.app"))
        #expect(WebAuthenticationCallback.isSchemeSyntax("a+b-c.d9"))
        #expect(!WebAuthenticationCallback.isSchemeSyntax("1app.example"))
        #expect(!WebAuthenticationCallback.isSchemeSyntax("com.example_app"))
        #expect(!WebAuthenticationCallback.isSchemeSyntax("com.exämple"))
        #expect(!WebAuthenticationCallback.isSchemeSyntax(""))
    }

    @Test func onlyTheRedirectURIsSchemeHostAndPathAreAccepted() throws {
        let custom = try callback("com.example.app:/oauth")
        #expect(custom.accepts(try #require(URL(string: "com.example.app:/oauth?code=c&state=s"))))
        #expect(custom.accepts(try #require(URL(string: "COM.EXAMPLE.APP:/oauth?code=c"))))
        #expect(!custom.accepts(try #require(URL(string: "com.example.app:/other?code=c"))))
        #expect(!custom.accepts(try #require(URL(string: "com.evil.app:/oauth?code=c"))))

        let https = try callback("https://app.example.com/oauth/callback")
        #expect(https.accepts(try #require(URL(string: "https://app.example.com/oauth/callback?code=c"))))
        #expect(!https.accepts(try #require(URL(string: "https://evil.example.com/oauth/callback?code=c"))))
        #expect(!https.accepts(try #require(URL(string: "https://app.example.com:444/oauth/callback?code=c"))))
        #expect(!https.accepts(try #require(URL(string: "http://app.example.com/oauth/callback?code=c"))))
    }

    @Test func aUsersCancellationIsCancellationAndConfigurationMistakesSaySo() throws {
        let callback = try callback("com.example.app:/oauth")
        #expect(throws: CancellationError.self) {
            try WebAuthenticationSessionEnd.canceledByUser.result(for: callback).get()
        }
        for end in [WebAuthenticationSessionEnd.presentationContextNotProvided, .presentationContextInvalid] {
            let error = #expect(throws: CodeFlowError.self) { try end.result(for: callback).get() }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("anchor") == true)
        }
        let notStarted = #expect(throws: CodeFlowError.self) {
            try WebAuthenticationSessionEnd.couldNotStart.result(for: callback).get()
        }
        #expect(notStarted?.code == .userAgentFailed)
    }

    @Test func theReturnedURLIsTheResultOnlyWhenItIsTheRedirect() throws {
        let callback = try callback("com.example.app:/oauth")
        let redirect = try #require(URL(string: "com.example.app:/oauth?code=secret-code&state=st"))
        #expect(try WebAuthenticationSessionEnd.callback(redirect).result(for: callback).get() == redirect)
        let elsewhere = try #require(URL(string: "com.example.app:/elsewhere?code=secret-code&state=st"))
        let error = #expect(throws: CodeFlowError.self) {
            try WebAuthenticationSessionEnd.callback(elsewhere).result(for: callback).get()
        }
        #expect(error?.code == .userAgentFailed)
        #expect(error?.description.contains("secret-code") == false, "the code in the URL is redacted")
    }

    @Test func otherFailuresAreUserAgentFailuresWithoutSecrets() throws {
        let callback = try callback("com.example.app:/oauth")
        let underlying = NSError(domain: "X", code: 9, userInfo: [NSLocalizedDescriptionKey: "failed at code=abc123"])
        let error = #expect(throws: CodeFlowError.self) {
            try WebAuthenticationSessionEnd.failed(underlying).result(for: callback).get()
        }
        #expect(error?.code == .userAgentFailed)
        #expect(error?.description.contains("abc123") == false)
    }

    // MARK: The default user agent

    @Test func eachPlatformHasTheDefaultTheIssueAsksFor() {
        let expected: [DefaultUserAgent.Platform: DefaultUserAgent] = [
            .macOS: .loopback, .linux: .loopback,
            .iOS: .webAuthenticationSession, .macCatalyst: .webAuthenticationSession,
            .visionOS: .webAuthenticationSession,
            .tvOS: .none, .watchOS: .none, .windows: .none, .android: .none, .other: .none,
        ]
        for platform in DefaultUserAgent.Platform.allCases {
            #expect(DefaultUserAgent.choice(for: platform) == expected[platform], "\(platform)")
        }
    }

    @Test func thisPlatformsCompiledDefaultIsTheTablesRow() async throws {
        #if os(Linux)
            #expect(DefaultUserAgent.currentPlatform == .linux)
        #endif
        let choice = DefaultUserAgent.choice(for: DefaultUserAgent.currentPlatform)
        #expect(DefaultUserAgent.isAvailable == (choice != .none))
        #if os(macOS) || os(Linux)
            let manager = CodeFlowManager(
                configuration: AuthenticationConfiguration(
                    authorizationEndpoint: try #require(URL(string: "https://auth.example.com/authorize")),
                    tokenEndpoint: try #require(URL(string: "https://auth.example.com/token")),
                    client: .none(id: "cli"),
                    redirectURI: try #require(URL(string: "http://127.0.0.1/callback"))
                ))
            let agent = await manager.userAgent
            #expect(agent is LoopbackUserAgent)
            #expect((agent as? LoopbackUserAgent)?.opener is SystemBrowserOpener)
        #endif
    }
}
