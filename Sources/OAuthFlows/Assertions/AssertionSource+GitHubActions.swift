import AuthenticatedRequests
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension AssertionSource {
    /// GitHub Actions' OpenID Connect token for the running job, requested anew for every grant
    /// from the URL and with the bearer token the runner provides
    /// (`ACTIONS_ID_TOKEN_REQUEST_URL`, `ACTIONS_ID_TOKEN_REQUEST_TOKEN`; the workflow needs
    /// `permissions: id-token: write`). The token names the repository and workflow as its
    /// subject and `audience` as its `aud`; the authorization server trusts GitHub's issuer.
    ///
    /// ```swift
    /// let flow = JWTBearerFlow(
    ///     tokenEndpoint: tokenURL, client: .none(id: "ci-deployer"),
    ///     assertion: .gitHubActions(audience: "https://auth.example.com"))
    /// ```
    ///
    /// The request goes through the grant's transport with the authorization server's limits
    /// (no redirects, a deadline, at most 1 MiB), only to an `https` URL (or loopback, or any
    /// with `allowsInsecureHTTP`). The runner's request token appears in no error.
    ///
    /// - Parameters:
    ///   - audience: The `aud` to ask for: what the authorization server expects.
    ///   - environment: Where the two variables are read, for every grant; the process's
    ///     environment unless given.
    public static func gitHubActions(
        audience: String,
        environment: @escaping @Sendable () -> [String: String] = { ProcessInfo.processInfo.environment }
    ) -> AssertionSource {
        let name = "GitHub Actions' OpenID Connect token"
        return AssertionSource(name: name) { context in
            let variables = environment()
            guard let requestURL = variables["ACTIONS_ID_TOKEN_REQUEST_URL"].flatMap(URL.init(string:)),
                let requestToken = variables["ACTIONS_ID_TOKEN_REQUEST_TOKEN"], !requestToken.isEmpty
            else {
                throw AssertionError(
                    .unreadable,
                    "\(name) is not available: ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN "
                        + "are not set (run in a GitHub Actions job with `permissions: id-token: write`).")
            }
            guard context.allowsInsecureHTTP || requestURL.isSafeForSecrets,
                var components = URLComponents(url: requestURL, resolvingAgainstBaseURL: false)
            else {
                throw AssertionError(
                    .unreadable, "\(name) would be requested over plain HTTP from \(requestURL.host ?? "?"); refused.")
            }
            components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "audience", value: audience)]
            guard let url = components.url else {
                throw AssertionError(.unreadable, "\(name): the request URL cannot carry an audience.")
            }
            var request = URLRequest(url: url)
            request.setValue("bearer \(requestToken)", forHTTPHeaderField: "Authorization")
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            let options = HTTPTransportOptions.authorizationServer(timeout: context.timeout)
            let (body, response) = try await context.transport.send(request, options: options)
            try options.check(body, of: response, for: request)
            guard response.statusCode == 200,
                case .string(let value)? = (try? JSONValue(parsing: body))?.objectValue?["value"]
            else {
                throw AssertionError(
                    .unreadable,
                    "\(name): the runner answered \(response.statusCode) without a token (from \(url.host ?? "?")).")
            }
            return value
        }
    }
}
