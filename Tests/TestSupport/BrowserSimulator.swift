import AuthenticatedRequests
import Foundation
import NIOCore
import NIOPosix

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Plays the browser: GETs the authorization URL and follows redirects, as a browser would,
/// optionally fetching other paths first (a favicon) from the redirect's origin. A page that
/// posts a form as it loads (the form post response mode) gets its form posted.
package struct BrowserSimulator: Sendable {
    package let pages = Locked<[String]>([])
    package let openedURLs = Locked<[URL]>([])
    package var extraPathsFirst: [String] = []

    package init(extraPathsFirst: [String] = []) {
        self.extraPathsFirst = extraPathsFirst
    }

    package func open(_ url: URL) async throws {
        openedURLs.withLock { $0.append(url) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        if !extraPathsFirst.isEmpty,
            let redirect = URLComponents(url: url, resolvingAgainstBaseURL: false)?
                .queryItems?.first(where: { $0.name == "redirect_uri" })?.value.flatMap(URL.init(string:))
        {
            for path in extraPathsFirst {
                var components = URLComponents(url: redirect, resolvingAgainstBaseURL: false)
                components?.path = path
                if let extra = components?.url {
                    let (data, _) = try await session.data(from: extra)
                    pages.withLock { $0.append(String(decoding: data, as: UTF8.self)) }
                }
            }
        }
        let (data, _) = try await session.data(from: url)
        let page = String(decoding: data, as: UTF8.self)
        pages.withLock { $0.append(page) }
        if let form = AutoSubmittedForm(page) {
            let (posted, _) = try await session.data(for: form.request)
            pages.withLock { $0.append(String(decoding: posted, as: UTF8.self)) }
        }
    }
}

/// A form that a page posts as soon as it loads (`onload` submits it): its action and its
/// hidden fields, read the way a browser would for the pages the test servers write.
package struct AutoSubmittedForm: Sendable {
    package let action: URL
    package let fields: [(String, String)]

    package init?(_ page: String) {
        guard page.contains(".submit()"),
            let form = page.firstMatch(of: /<form[^>]*method="post"[^>]*action="([^"]*)"/.ignoresCase()),
            let action = URL(string: Self.unescape(String(form.1)))
        else { return nil }
        self.action = action
        self.fields = page.matches(of: /<input type="hidden" name="([^"]*)" value="([^"]*)"/).map {
            (Self.unescape(String($0.1)), Self.unescape(String($0.2)))
        }
    }

    /// The `POST` the browser sends: the fields, form-encoded, to the action.
    package var request: URLRequest {
        var request = URLRequest(url: action)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        request.httpBody = Data(fields.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&").utf8)
        return request
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#x27;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}

/// A TCP port of 127.0.0.1 that was free a moment ago (bound, read, released).
/// The ports ``freeLoopbackPort()`` handed out in this process, and glewlwyd's registered
/// redirect port (its tests listen on it), so that no two callers get the same one.
private let handedOutPorts = Locked<Set<Int>>(glewlwydRedirectPort().map { [$0] } ?? [])

/// The port of the redirect URI `Scripts/glewlwyd.sh` registered, from `AUTHREQ_TEST_GLEWLWYD`.
private func glewlwydRedirectPort() -> Int? {
    guard let file = ProcessInfo.processInfo.environment["AUTHREQ_TEST_GLEWLWYD"],
        let data = FileManager.default.contents(atPath: file),
        let setup = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let uri = (setup["redirect_uri"] as? String).flatMap(URL.init(string:))
    else { return nil }
    return uri.port
}

package func freeLoopbackPort() async throws -> Int {
    // Below the kernel's ephemeral range: a port the system handed out (port 0) goes back into
    // that range, and another test's connection could take it as its local port before the
    // caller binds it (seen: "Address already in use" for a redirect URI's port in a loaded CI
    // run). A port below it is taken only by an explicit bind to its number.
    let lowestEphemeral =
        (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
        .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
    let candidates = 20000..<max(20001, min(lowestEphemeral, 32768))
    for _ in 0..<64 {
        let port = Int.random(in: candidates)
        // Never the same port twice in this process: two tests that probe one port before either
        // binds it would both be handed it (seen: "Address already in use" in a CI run).
        guard handedOutPorts.withLock({ $0.insert(port).inserted }) else { continue }
        guard
            let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(host: "127.0.0.1", port: port).get()
        else { continue }
        try? await channel.close()
        return port
    }
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    defer { channel.close(promise: nil) }
    guard let port = channel.localAddress?.port else { throw ChannelError.unknownLocalAddress }
    return port
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
package func isListening(port: Int) async -> Bool {
    do {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(2))
            .connect(host: "127.0.0.1", port: port)
            .get()
        try? await channel.close()
        return true
    } catch {
        return false
    }
}

/// A fake authorization endpoint on loopback: redirects to the request's `redirect_uri` with a
/// code and the request's `state` (or whatever `decide` returns).
package func makeAuthorizationServer(
    decide: @escaping @Sendable (_ query: [String: String]) -> [String: String] = { query in
        ["code": "code-123", "state": query["state"] ?? ""]
    }
) async throws -> LoopbackHTTPServer {
    try await LoopbackHTTPServer { request in
        let query = Dictionary(
            (URLComponents(string: request.uri)?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
            uniquingKeysWith: { first, _ in first }
        )
        guard var redirect = query["redirect_uri"].flatMap({ URLComponents(string: $0) }) else {
            return .init(status: 400, body: "no redirect_uri")
        }
        redirect.queryItems = decide(query).sorted { $0.key < $1.key }.map {
            URLQueryItem(name: $0.key, value: $0.value)
        }
        return .init(status: 302, headers: [("Location", redirect.string ?? "")])
    }
}
