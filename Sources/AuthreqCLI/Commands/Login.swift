import ArgumentParser
import AuthenticatedRequests
import CodeFlowOAuth
import Foundation
import OAuthFlows
import ResourceDiscovery

/// `authreq login`: signs in and stores the session.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Sign in: in the browser (default), with a code on another device, by asking the user on their "
            + "device (CIBA), or as the client itself.",
        discussion: """
            Settings given here are saved in the profile first. The browser sign-in uses PKCE and a \
            loopback redirect; when no browser opens, the URL is printed and the sign-in keeps waiting. \
            With --ciba, the OpenID provider asks the user named by --login-hint on their own device; \
            the binding message is printed so that they can tell this request from another.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var settings: ProfileSettings

    @Flag(help: "Sign in with the device flow: enter a code on another device.")
    var device = false

    @Flag(help: "Sign in as the client (client credentials grant); needs a client secret.")
    var clientCredentials = false

    @Flag(help: "Ask the user on their own device (OpenID Connect CIBA, poll mode); needs --login-hint once.")
    var ciba = false

    @Option(help: "Whom --ciba asks: their e-mail address or user name at the provider (kept in the profile).")
    var loginHint: String?

    @Option(help: "The text --ciba shows on the user's device and here; a random code unless given.")
    var bindingMessage: String?

    @Flag(help: "Print the sign-in URL instead of opening a browser.")
    var noBrowser = false

    @Option(help: "How long to wait for the browser sign-in, in seconds.")
    var timeout: Int = 300

    func validate() throws {
        if [device, clientCredentials, ciba].filter({ $0 }).count > 1 {
            throw ValidationError("Choose one of --device, --client-credentials and --ciba.")
        }
        if !ciba && (loginHint != nil || bindingMessage != nil) {
            throw ValidationError("--login-hint and --binding-message go with --ciba.")
        }
        if timeout <= 0 { throw ValidationError("--timeout must be positive.") }
    }

    /// The grant: as the flags say; a profile with a workload token file uses the JWT bearer grant.
    func grant(for profile: Profile) -> Profile.Grant {
        if device { return .deviceCode }
        if clientCredentials { return .clientCredentials }
        if ciba { return .ciba }
        return profile.assertionFile != nil ? .jwtBearer : .authorizationCode
    }

    func run() async throws {
        try await global.reporting {
            let name = global.profileName
            guard Profile.isValidName(name) else { throw CLIError.usage("'\(name)' cannot name a profile.") }
            var file = try global.configuration()
            let existing = try file.profile(name)
            if existing == nil && settings.isEmpty {
                throw CLIError.usage(
                    "There is no profile '\(name)'. Pass --issuer and --client-id, or run: authreq profile add \(name) …"
                )
            }
            var profile = try settings.applied(to: existing, name: name)
            let grant = grant(for: profile)
            profile.grant = grant
            if let loginHint { profile.loginHint = loginHint }
            if profile != existing {
                file.profiles[name] = profile
                try file.save(to: global.locations.configurationFile)
            }
            let session = try ProfileSession(
                name: name, profile: profile, locations: global.locations, environment: global.environment,
                console: global.console)
            if let resource = profile.resource {
                guard grant == .authorizationCode else {
                    throw CLIError.usage(
                        "A --resource profile signs in in the browser; --device, --client-credentials and --ciba "
                            + "do not apply.")
                }
                let (flow, token) = try await signInToResource(resource, session)
                session.console.message(
                    "Signed in: profile '\(name)' for \(resource.redactedForDisplay) at \(flow.issuer)"
                        + (token.expiresAt.map {
                            "; the access token expires in \(Duration.spoken($0.timeIntervalSinceNow))"
                        }
                            ?? "") + ".")
                return
            }
            let endpoints = try await session.endpoints(refresh: true)
            let token: OAuthToken
            switch grant {
            case .authorizationCode: token = try await signInWithBrowser(session, endpoints)
            case .deviceCode: token = try await signInWithDevice(session, endpoints)
            case .clientCredentials: token = try await signInAsClient(session, endpoints)
            case .jwtBearer: token = try await signInAsWorkload(session, endpoints)
            case .ciba: token = try await signInWithCIBA(session)
            }
            let expiry = token.expiresAt.map {
                "; the access token expires in \(Duration.spoken($0.timeIntervalSinceNow))"
            }
            session.console.message(
                "Signed in: profile '\(name)' at \(endpoints.issuer ?? endpoints.token.redactedForDisplay)\(expiry ?? "")."
            )
        }
    }

    /// Signs in to a protected resource from its URL: discovery, registration (once per issuer,
    /// kept in the token store), then the browser.
    private func signInToResource(_ resource: URL, _ session: ProfileSession) async throws -> (
        ResourceSignInFlow, OAuthToken
    ) {
        session.console.detail("discovering \(resource.redactedForDisplay)")
        let method: ResourceSignIn.Method =
            session.profile.enterpriseProfile == nil
            ? .browser(userAgent(session.console)) : .enterpriseManaged(try await session.identityAssertionGrant())
        let flow = try await session.resourceSignIn(resource, method: method).flow(account: session.name)
        session.cacheResourceDiscovery(of: flow)
        let authenticator = await session.authenticator(flow: flow)
        let token = try await flow.obtainToken(for: authenticator.context)
        await authenticator.configure(with: flow, token: token)
        await authenticator.finishEvents()
        return (flow, token)
    }

    /// The loopback user agent: opens the browser (or prints the URL with --no-browser).
    private func userAgent(_ console: Console) -> LoopbackUserAgent {
        let opener: any BrowserOpener =
            noBrowser
            ? PrintingOpener(console: console)
            : AnnouncingOpener(console: console, timeout: TimeInterval(timeout), opener: SystemBrowserOpener())
        return LoopbackUserAgent(opener: opener, timeout: TimeInterval(timeout)) { _, error in
            console.message(
                "Could not open a browser (\(ErrorReport.message(for: error))). Open the URL above to sign in; "
                    + "waiting…")
        }
    }

    private func signInWithBrowser(_ session: ProfileSession, _ endpoints: ServerEndpoints) async throws -> OAuthToken {
        guard let authorizationEndpoint = endpoints.authorization else {
            throw CLIError.usage("The server has no authorization endpoint; try --device or --client-credentials.")
        }
        let console = session.console
        guard let redirectURI = session.profile.redirectURI ?? URL(string: "http://127.0.0.1/callback") else {
            throw CLIError.usage("No redirect URI.")
        }
        let pushes = session.profile.pushesAuthorizationRequests == true || endpoints.requiresPushedAuthorization
        if pushes, endpoints.pushedAuthorization == nil {
            throw CLIError.usage(
                "The profile asks for pushed authorization requests (par), but the server names no "
                    + "pushed_authorization_request_endpoint.")
        }
        let configuration = AuthenticationConfiguration(
            authorizationEndpoint: authorizationEndpoint,
            tokenEndpoint: endpoints.token,
            client: try session.client(),
            redirectURI: redirectURI,
            scope: session.profile.scope,
            issuer: endpoints.issuer,
            requiresIssuerParameter: endpoints.requiresIssuerParameter,
            pushedAuthorizationRequestEndpoint: pushes ? endpoints.pushedAuthorization : nil
        )
        let manager = CodeFlowManager(
            configuration: configuration, userAgent: userAgent(console), context: session.context)
        let authenticator = await session.authenticator()
        return try await manager.signIn(configuring: authenticator, account: session.name)
    }

    private func signInWithDevice(_ session: ProfileSession, _ endpoints: ServerEndpoints) async throws -> OAuthToken {
        guard let deviceEndpoint = endpoints.deviceAuthorization else {
            throw CLIError.usage("The server has no device authorization endpoint; sign in in the browser instead.")
        }
        let console = session.console
        let reminder = WaitReminder(console: console)
        var flow = DeviceAuthorizationFlow(
            deviceAuthorizationEndpoint: deviceEndpoint,
            tokenEndpoint: endpoints.token,
            client: try session.client(),
            scope: session.profile.scope
        ) { authorization in
            console.message(DeviceCodeMessage.text(for: authorization, now: Date()))
            reminder.start(until: authorization.expiresAt) { "Still waiting for approval of \(authorization.userCode)" }
        }
        flow.account = session.name
        defer { reminder.stop() }
        let token: OAuthToken
        do {
            token = try await flow.obtainToken(for: session.context)
        } catch let error as OAuthError where error.code.rawValue == "expired_token" {
            throw CLIError.needsSignIn("The code expired before it was approved. Run authreq login --device again.")
        }
        await session.authenticator().configure(with: flow, token: token)
        return token
    }

    /// CIBA in poll mode: the provider asks the profile's `login_hint` on their device; the binding
    /// message is shown here too, and a line every minute says how long is left.
    private func signInWithCIBA(_ session: ProfileSession) async throws -> OAuthToken {
        guard let hint = session.profile.loginHint, !hint.isEmpty else {
            throw CLIError.usage("--ciba needs --login-hint: whom the provider asks (their e-mail address, user name).")
        }
        guard let issuer = session.profile.issuer else {
            throw CLIError.usage(
                "--ciba needs the provider's --issuer: its endpoints come from its discovery document.")
        }
        let metadata = try await AuthorizationServerMetadata.discover(
            issuer: issuer, document: .openIDConfiguration, context: session.context)
        let message = bindingMessage ?? BindingMessage.random()
        let console = session.console
        let reminder = WaitReminder(console: console)
        var flow = try metadata.backchannelAuthenticationFlow(
            client: try session.client(),
            request: BackchannelAuthenticationRequest(
                hint: .loginHint(hint), scope: session.profile.scope ?? "openid", bindingMessage: message)
        ) { request in
            console.message(BindingMessage.text(message, hint: hint, expiresAt: request.expiresAt, now: Date()))
            reminder.start(until: request.expiresAt) { "Still waiting for \(hint) to approve \"\(message)\"" }
        }
        flow.account = session.name
        defer { reminder.stop() }
        let token: OAuthToken
        do {
            token = try await flow.obtainToken(for: session.context)
        } catch let error as OAuthError where error.code == .expiredToken {
            throw CLIError.needsSignIn(
                "The request expired before \(hint) approved it. Run authreq login --ciba again.")
        } catch let error as OAuthError where error.code == .accessDenied {
            throw CLIError.needsSignIn("\(hint) denied the request\(error.errorDescription.map { ": \($0)" } ?? ".")")
        }
        await session.authenticator().configure(with: flow, token: token)
        return token
    }

    /// The JWT bearer grant with the profile's workload token file; no browser, no secret.
    private func signInAsWorkload(_ session: ProfileSession, _ endpoints: ServerEndpoints) async throws -> OAuthToken {
        let flow = try session.jwtBearerFlow(endpoints: endpoints, client: try session.client())
        let token = try await flow.obtainToken(for: session.context)
        await session.authenticator().configure(with: flow, token: token)
        return token
    }

    private func signInAsClient(_ session: ProfileSession, _ endpoints: ServerEndpoints) async throws -> OAuthToken {
        let client = try session.client()
        guard client.isConfidential else {
            throw CLIError.usage(
                "Client credentials need a client secret: --client-secret-file, or $\(session.profile.secretVariable).")
        }
        let flow = session.clientCredentialsFlow(endpoints: endpoints, client: client)
        let token = try await flow.obtainToken(for: session.context)
        await session.authenticator().configure(with: flow, token: token)
        return token
    }
}

/// Opens the browser, and always shows the URL it opens first, so the user can open it in another
/// browser, or by hand when none opens (as `gh auth login` does).
struct AnnouncingOpener: BrowserOpener {
    let console: Console
    let timeout: TimeInterval
    let opener: any BrowserOpener
    func open(_ url: URL) async throws {
        console.message(
            "Opening the browser to sign in (waiting up to \(Duration.spoken(timeout))). If it does not open, "
                + "open this URL:\n\n    \(url.absoluteString)\n")
        try await opener.open(url)
    }
}

/// With `--no-browser`: shows the URL instead of opening it.
struct PrintingOpener: BrowserOpener {
    let console: Console
    func open(_ url: URL) async throws {
        console.message("Open this URL to sign in:\n\n    \(url.absoluteString)\n\nWaiting for the sign-in…")
    }
}

/// While a sign-in waits for a person: a line every minute with the time left, until `deadline`.
final class WaitReminder: Sendable {
    let console: Console
    private let task = Locked<Task<Void, Never>?>(nil)

    init(console: Console) { self.console = console }

    func start(until deadline: Date, _ waiting: @escaping @Sendable () -> String) {
        let console = console
        let reminder = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
                let left = deadline.timeIntervalSinceNow
                guard !Task.isCancelled, left > 0 else { return }
                console.message("\(waiting()): \(Duration.spoken(left)) left.")
            }
        }
        task.withLock { $0 = reminder }
    }

    func stop() { task.withLock { $0?.cancel() } }
}

/// What a CIBA sign-in shows: whom the provider asks, and the binding message to compare.
enum BindingMessage {
    /// A short code for the binding message when none is given: easy to compare on both screens.
    static func random() -> String {
        "authreq sign-in " + String(format: "%04d", Int.random(in: 0..<10_000))
    }

    static func text(_ message: String, hint: String, expiresAt: Date, now: Date) -> String {
        """

            The provider is asking \(hint) to approve this sign-in on their device.
            Approve it only if it shows:  \(message)
            (the request expires in \(Duration.spoken(expiresAt.timeIntervalSince(now))))

        """
    }
}

/// What the device flow shows: the code and where to enter it, prominently, with the time left.
enum DeviceCodeMessage {
    static func text(for authorization: DeviceAuthorization, now: Date) -> String {
        var lines = [
            "",
            "  To sign in, open:    \(authorization.verificationURI.absoluteString)",
            "  and enter the code:  \(authorization.userCode)",
        ]
        if let complete = authorization.verificationURIComplete {
            lines.append("  (or open \(complete.absoluteString))")
        }
        let formatter = ISO8601DateFormatter()
        lines += [
            "",
            "  The code expires in \(Duration.spoken(authorization.expiresAt.timeIntervalSince(now))) "
                + "(at \(formatter.string(from: authorization.expiresAt))). Waiting for approval…",
            "",
        ]
        return lines.joined(separator: "\n")
    }
}

extension Duration {
    /// `4 min 10 s`, `45 s`, `2 h 5 min`.
    static func spoken(_ seconds: TimeInterval) -> String {
        let total = max(0, Int(seconds.rounded()))
        let (hours, minutes, rest) = (total / 3600, total % 3600 / 60, total % 60)
        if hours > 0 { return minutes > 0 ? "\(hours) h \(minutes) min" : "\(hours) h" }
        if minutes > 0 { return rest > 0 ? "\(minutes) min \(rest) s" : "\(minutes) min" }
        return "\(rest) s"
    }
}
