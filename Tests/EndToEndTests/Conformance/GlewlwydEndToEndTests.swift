import AuthenticatedRequests
import CodeFlowOAuth
import DPoP
import Foundation
import JWTKit
import OAuthFlows
import OpenIDConnect
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `Scripts/glewlwyd.sh` set up in glewlwyd (Debian's 2.7.5): the issuer, a user who granted
/// the clients their scopes and the RAR type, and the clients.
struct GlewlwydSetup: Decodable {
    struct Client: Decodable {
        let client_id: String
        let client_secret: String?
    }
    let issuer: String
    let redirect_uri: String
    let username: String
    let password: String
    let clients: [String: Client]
    let client_private_key_pem: String
    let client_key_id: String

    static let path = ProcessInfo.processInfo.environment["AUTHREQ_TEST_GLEWLWYD"]
    static let notRunReason: Comment =
        "AUTHREQ_TEST_GLEWLWYD is not set, so the glewlwyd end-to-end tests were NOT run. Run Scripts/test."

    static func load() throws -> GlewlwydSetup {
        let path = try #require(path, notRunReason)
        return try JSONDecoder().decode(GlewlwydSetup.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// The user's browser at glewlwyd. Where glewlwyd sends it to its login page, it signs the user in
/// as that page does (glewlwyd's `/api/auth/`, which sets the session cookie; the user granted the
/// clients their scopes when provisioned) and goes back to the `callback_url` with `g_continue`.
/// It follows redirects up to the client's loopback receiver, and posts the page of the form post
/// response mode.
struct GlewlwydBrowser: BrowserOpener {
    /// The browser stopped before it reached the client's redirect URI; `hops` says where it went.
    struct Stopped: Error, CustomStringConvertible {
        let hops: [String]
        var description: String { "the browser stopped at: " + hops.joined(separator: " -> ") }
    }

    let setup: GlewlwydSetup
    let redirectURI: URL

    func open(_ url: URL) async throws {
        let transport = URLSessionTransport()
        var next = url
        var cookie: String?
        var hops: [String] = []
        for _ in 0..<8 {
            var request = URLRequest(url: next)
            if let cookie, next.port != redirectURI.port { request.setValue(cookie, forHTTPHeaderField: "Cookie") }
            let (data, response) = try await transport.send(request, options: .init(followsRedirects: false))
            hops.append("\(response.statusCode) \(next.path)")
            if next.port == redirectURI.port { return }
            if response.statusCode == 200, let form = AutoSubmittedForm(String(decoding: data, as: UTF8.self)) {
                try await post(form, through: transport, hops: &hops)
                return
            }
            guard (300..<400).contains(response.statusCode),
                let location = response.value(forHTTPHeaderField: "Location"),
                let target = URL(string: location, relativeTo: next)?.absoluteURL
            else { throw Stopped(hops: hops) }
            guard target.path.hasSuffix("/login.html") else {
                next = target
                continue
            }
            guard cookie == nil,
                let callback = URLComponents(url: target, resolvingAgainstBaseURL: false)?.queryItems?
                    .first(where: { $0.name == "callback_url" })?.value,
                let resumed = URL(string: callback + "&g_continue")
            else { throw Stopped(hops: hops + ["the login page again"]) }
            cookie = try await signIn(through: transport, at: target)
            hops.append("signed in")
            next = resumed
        }
        throw Stopped(hops: hops)
    }

    /// Signs the user in as glewlwyd's login page does; returns the session cookie.
    private func signIn(through transport: URLSessionTransport, at loginPage: URL) async throws -> String {
        var request = URLRequest(url: URL(string: "/api/auth/", relativeTo: loginPage)?.absoluteURL ?? loginPage)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(["username": setup.username, "password": setup.password])
        let (_, response) = try await transport.send(request, options: .init(followsRedirects: false))
        guard response.statusCode == 200,
            let cookie = response.value(forHTTPHeaderField: "Set-Cookie")?.split(separator: ";").first
        else { throw Stopped(hops: ["\(response.statusCode) POST /api/auth/ (sign-in)"]) }
        return String(cookie)
    }

    /// Posts the form of the form post response mode to the client's redirect URI.
    private func post(_ form: AutoSubmittedForm, through transport: URLSessionTransport, hops: inout [String])
        async throws
    {
        let (_, posted) = try await transport.send(form.request, options: .init(followsRedirects: false))
        hops.append("\(posted.statusCode) POST \(form.action.path)")
        guard posted.statusCode == 200 else { throw Stopped(hops: hops) }
    }
}

/// Request objects (JAR), RAR, PAR, signed authorization responses (JARM) and DPoP against
/// glewlwyd, an OpenID provider written in C that implements them itself: the interop check beyond
/// our own conformance provider. One user session and one registered redirect port, so the tests
/// take turns.
///
/// glewlwyd 2.7.5 follows drafts in places (RAR draft 11, DPoP draft 7) and answers some refusals
/// otherwise than the RFCs say; the tests pin what it does, and the SDK keeps to the RFCs. The
/// differences are listed in the Conformance article.
@Suite(.serialized, .enabled(if: GlewlwydSetup.path != nil, GlewlwydSetup.notRunReason))
struct GlewlwydEndToEndTests {
    static let payment = AuthorizationDetail(
        type: "payment_initiation",
        fields: [
            "locations": .array([.string("https://bank.example/payments")]),
            "actions": .array([.string("initiate")]),
            "datatypes": .array([.string("sepa")]),
        ])

    struct SignIn {
        let oidc: OpenIDClient
        let authenticator: OAuthAuthenticator
        let result: Result<OpenIDSession, any Error>

        var session: OpenIDSession { get throws { try result.get() } }
    }

    /// Signs in at glewlwyd as the provisioned user, with the client named `name` (`secret`:
    /// client_secret_basic; `private-key-jwt`: an ES256 assertion). `requestObjectKey` signs the
    /// request object with another key than the registered one.
    func signIn(
        client name: String, scope: String = "openid", authorizationDetails: [AuthorizationDetail] = [],
        requestObject: Bool = false, requestObjectKey: ES256PrivateKey? = nil, pushes: Bool = false,
        signedResponses: Bool = false, responseMode: SignedResponseMode = .jwt, proofOfPossession: DPoPProver? = nil,
        timeout: TimeInterval = 20
    ) async throws -> SignIn {
        let setup = try GlewlwydSetup.load()
        let provider = try await OpenIDProvider.discover(issuer: try #require(URL(string: setup.issuer)))
        let registered = try #require(setup.clients[name])
        let signer = PrivateKeyJWT(
            key: try ES256PrivateKey(pem: setup.client_private_key_pem), keyID: setup.client_key_id,
            audience: .endpoint)
        let client: ClientAuthentication =
            if let secret = registered.client_secret {
                .clientSecretBasic(id: registered.client_id, secret: secret)
            } else {
                .assertion(id: registered.client_id, signer: signer)
            }
        let requestObjectSigner =
            requestObjectKey.map { PrivateKeyJWT(key: $0, keyID: setup.client_key_id, audience: .endpoint) }
            ?? (requestObject ? signer : nil)
        let oidc = OpenIDClient(provider: provider, client: client)
        let authenticator = OAuthAuthenticator(
            store: InMemoryTokenStore(), configuration: .init(proofOfPossession: proofOfPossession))
        let redirectURI = try #require(URL(string: setup.redirect_uri))
        let result = await Result {
            try await oidc.signIn(
                redirectURI: redirectURI, scope: scope,
                userAgent: LoopbackUserAgent(
                    opener: GlewlwydBrowser(setup: setup, redirectURI: redirectURI), timeout: timeout),
                configuring: authenticator, pushesAuthorizationRequests: pushes,
                authorizationDetails: authorizationDetails, requestObjectSigner: requestObjectSigner,
                signedAuthorizationResponses: signedResponses, signedResponseMode: responseMode)
        }
        return SignIn(oidc: oidc, authenticator: authenticator, result: result)
    }

    /// The sign-in succeeded, its ID token passed every check, and the credential is stored.
    @discardableResult
    func accepted(_ signIn: SignIn, sourceLocation: SourceLocation = #_sourceLocation) async throws -> OpenIDSession {
        let session = try signIn.session
        #expect(!session.claims.subject.isEmpty, sourceLocation: sourceLocation)
        let stored = try await signIn.authenticator.currentCredential()
        #expect(stored?.accessToken == session.token.accessToken, sourceLocation: sourceLocation)
        return session
    }

    @Test func codeFlowWithPKCEAndClientSecretBasic() async throws {
        let session = try await accepted(try await signIn(client: "secret"))
        #expect(session.token.idToken != nil)
    }

    @Test func privateKeyJWTThroughPAR() async throws {
        try await accepted(try await signIn(client: "private-key-jwt", pushes: true))
    }

    /// glewlwyd verifies the request object's signature with the client's registered key, so a
    /// sign-in that succeeds used it (the refusals below show the other side).
    @Test func requestObjectByValue() async throws {
        try await accepted(try await signIn(client: "private-key-jwt", requestObject: true))
    }

    @Test func requestObjectThroughPAR() async throws {
        try await accepted(try await signIn(client: "private-key-jwt", requestObject: true, pushes: true))
    }

    /// RAR through PAR and inside a request object: the grant comes back in the token response
    /// and is kept with the stored credential.
    @Test(arguments: [(false, true), (true, true), (false, false)])
    func authorizationDetailsAreGrantedAndKept(requestObject: Bool, pushes: Bool) async throws {
        let signIn = try await signIn(
            client: "private-key-jwt", scope: "openid payments", authorizationDetails: [Self.payment],
            requestObject: requestObject, pushes: pushes)
        let session = try await accepted(signIn)
        let granted = try #require(session.token.authorizationDetails)
        #expect(granted.map(\.type) == ["payment_initiation"])
        #expect(granted.first?.strings("actions") == ["initiate"])
        #expect(try await signIn.authenticator.currentCredential()?.authorizationDetails == granted)
    }

    /// `response_mode=jwt`: glewlwyd signs the authorization response with its key, and the
    /// client checks it before it uses the code (a plain response would be refused with
    /// `missingSignedResponse`).
    @Test(arguments: [SignedResponseMode.jwt, .formPostJWT])
    func signedAuthorizationResponse(mode: SignedResponseMode) async throws {
        try await accepted(try await signIn(client: "secret", signedResponses: true, responseMode: mode))
    }

    /// DPoP (glewlwyd follows draft 7): the token is bound to the client's key and UserInfo
    /// accepts it with a proof.
    @Test func dpopBoundTokensAtUserInfo() async throws {
        let signIn = try await signIn(client: "secret", proofOfPossession: DPoPProver())
        let session = try await accepted(signIn)
        #expect(session.token.tokenType.lowercased() == "dpop")
        #expect(session.token.boundKey != nil)
        let info = try await signIn.oidc.userInfo(using: signIn.authenticator)
        #expect(info["sub"]?.stringValue == session.claims.subject)
    }

    // MARK: Refusals

    /// glewlwyd answers an unverifiable request object at the PAR endpoint with `403` and no body
    /// (RFC 9126 §2.3 says `400` with `invalid_request_object`).
    @Test func aRequestObjectSignedWithAnotherKeyIsRefusedAtPAR() async throws {
        let signIn = try await signIn(
            client: "private-key-jwt", requestObjectKey: ES256PrivateKey(), pushes: true, timeout: 5)
        #expect(throws: TokenEndpointError.self) { try signIn.session }
        if case .failure(let error as TokenEndpointError) = signIn.result {
            #expect(error.code == .unexpectedStatus && error.statusCode == 403, "\(error)")
        }
        #expect(try await signIn.authenticator.currentCredential() == nil)
    }

    /// By value, glewlwyd shows the user an error page and does not redirect (RFC 9101 §6.3 lets it
    /// not trust the redirect URI of a request it cannot verify): the flow ends at its deadline.
    @Test func aRequestObjectSignedWithAnotherKeyGetsNoRedirect() async throws {
        let signIn = try await signIn(client: "private-key-jwt", requestObjectKey: ES256PrivateKey(), timeout: 3)
        #expect(throws: CodeFlowError.self) { try signIn.session }
        if case .failure(let error as CodeFlowError) = signIn.result {
            #expect(error.code == .timedOut, "\(error)")
        }
        #expect(try await signIn.authenticator.currentCredential() == nil)
    }

    /// A type the client is not registered for: glewlwyd answers `invalid_request` (RFC 9396 §5
    /// names `invalid_authorization_details`); the SDK keeps its code and description.
    @Test(arguments: [true, false])
    func anAuthorizationDetailsTypeTheClientMayNotUseIsRefused(pushes: Bool) async throws {
        let signIn = try await signIn(
            client: "secret", scope: "openid payments",
            authorizationDetails: [AuthorizationDetail(type: "account_information")], pushes: pushes, timeout: 5)
        #expect(throws: OAuthError.self) { try signIn.session }
        if case .failure(let error as OAuthError) = signIn.result {
            #expect(error.code == .invalidRequest, "\(error)")
            #expect(error.errorDescription?.contains("authorization_details") == true, "\(error)")
        }
        #expect(try await signIn.authenticator.currentCredential() == nil)
    }
}

/// Guards against a silent skip: in CI (`CI` set) glewlwyd must be there.
@Test func glewlwydIsThereInCI() {
    if ProcessInfo.processInfo.environment["CI"] != nil {
        #expect(GlewlwydSetup.path != nil, "CI must run the glewlwyd end-to-end tests: use Scripts/test")
    }
}
