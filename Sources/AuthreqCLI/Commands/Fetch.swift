import ArgumentParser
import AuthenticatedRequests
import Foundation
import OAuthFlows
import ResourceDiscovery

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `authreq fetch URL`: one request with the token; a refresh and one retry after a 401.
struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a request with the token and print the response body.",
        discussion: """
            The token is refreshed first if it expired; after a 401 it is refreshed once and the \
            request sent once more. Exit status 5 when the answer is 400 or above.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The URL (https, or http to a loopback address).")
    var url: String

    @Option(name: [.customShort("X"), .customLong("request")], help: "The method (default GET, or POST with data).")
    var method: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header, 'Name: value'; repeatable.")
    var headers: [String] = []

    @Option(name: [.customShort("d"), .customLong("data")], help: "The request body.")
    var data: String?

    @Option(help: "A file whose bytes are the request body; '-' reads standard input.")
    var dataFile: String?

    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the status line and headers first.")
    var include = false

    func validate() throws {
        if data != nil && dataFile != nil { throw ValidationError("Give one of --data and --data-file.") }
        guard let url = URL(string: url), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            url.host != nil
        else { throw ValidationError("'\(url)' is not an http or https URL.") }
        for header in headers {
            guard let colon = header.firstIndex(of: ":"), !header[..<colon].trimmingCharacters(in: .whitespaces).isEmpty
            else { throw ValidationError("A header is 'Name: value'; '\(header)' is not.") }
            if header[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == "authorization" {
                throw ValidationError("authreq sets the Authorization header itself.")
            }
        }
    }

    func request() throws -> URLRequest {
        guard let target = URL(string: url) else { throw ValidationError("'\(url)' is not a URL.") }
        var request = URLRequest(url: target)
        let body: Data?
        if let data {
            body = Data(data.utf8)
        } else if let dataFile {
            if dataFile == "-" {
                body = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let contents = FileManager.default.contents(atPath: dataFile) else {
                    throw CLIError.usage("Cannot read \(dataFile).")
                }
                body = contents
            }
        } else {
            body = nil
        }
        request.httpMethod = method?.uppercased() ?? (body == nil ? "GET" : "POST")
        request.httpBody = body
        for header in headers {
            guard let colon = header.firstIndex(of: ":") else { continue }
            let name = header[..<colon].trimmingCharacters(in: .whitespaces)
            let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            request.addValue(value, forHTTPHeaderField: name)
        }
        if body != nil && request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// "… is a protected resource …: authreq login --resource …" when `url` answers as one.
    static func signInOffer(for url: URL) async -> String? {
        let context = AuthenticationContext(
            transport: URLSessionTransport.shared, allowsInsecureHTTP: url.isLoopbackHTTP)
        guard let metadata = try? await ProtectedResourceMetadata.offered(by: url, context: context) else { return nil }
        let servers = metadata.authorizationServers.joined(separator: ", ")
        return "\(url.redactedForDisplay) is a protected resource (\(metadata.resource.absoluteString)"
            + (servers.isEmpty ? "" : ", signed in at \(servers)") + "). Sign in to it with: authreq login --resource "
            + metadata.resource.absoluteString + " [--profile NAME]"
    }

    func run() async throws {
        try await global.reporting {
            let request = try request()
            let session: ProfileSession
            let authenticator: OAuthAuthenticator
            do {
                session = try global.session()
                authenticator = try await session.requireSession()
            } catch let error as CLIError where [ExitStatus.usage, ExitStatus.needsSignIn].contains(error.status) {
                // No profile, or not signed in: if the URL is a protected resource, say how to sign in to it.
                guard let target = request.url, let offer = await Self.signInOffer(for: target) else { throw error }
                throw CLIError.needsSignIn(offer)
            }
            session.console.detail("\(request.httpMethod ?? "GET") \(request.url?.redactedForDisplay ?? "")")
            let (body, response) = try await authenticator.send(request, over: try session.transport())
            if include {
                var head =
                    "HTTP/1.1 \(response.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: response.statusCode))\r\n"
                for field in response.headerFields {
                    head += "\(field.name): \(field.value)\r\n"
                }
                session.console.output(Data((head + "\r\n").utf8))
            }
            session.console.output(body)
            if response.statusCode >= 400 {
                throw CLIError(ExitStatus.apiError, "The API answered \(response.statusCode).")
            }
        }
    }
}
