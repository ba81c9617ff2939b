import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct Item: Decodable, Equatable {
    let id: Int
}

private struct Endpoint: Resource {
    typealias Output = Item
    let transport: any HTTPTransport
    var method: RequestMethod = .get
    var accept: ClosedRange<Int>? = nil
    var httpMethod: RequestMethod { method }

    func urlRequest(using input: String) throws -> URLRequest {
        guard !input.isEmpty else { throw URLError(.badURL) }
        return URLRequest(url: URL(string: "https://api.example.com/\(input)?api_key=s3cret")!)
    }

    func validate(_ response: ResponseHead, body: Data) throws {
        guard let accept else {
            guard (200...299).contains(response.statusCode) else {
                throw ResourceError.unacceptableStatus(response: response, body: body)
            }
            return
        }
        guard accept.contains(response.statusCode) else {
            throw ResourceError.unacceptableStatus(response: response, body: body)
        }
    }
}

private struct VoidInput: Resource {
    typealias Output = String
    let transport: any HTTPTransport
    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/ping")!)
    }
}

private struct Items: Resource {
    typealias Output = [Item]
    let transport: any HTTPTransport
    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/items")!)
    }
}

private struct Raw: Resource {
    typealias Output = Data
    let transport: any HTTPTransport
    func urlRequest(using input: Void) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/raw")!)
    }
}

private struct Delete: Resource {
    typealias Output = Void
    let transport: any HTTPTransport
    var httpMethod: RequestMethod { .delete }
    func urlRequest(using input: Int) throws -> URLRequest {
        URLRequest(url: URL(string: "https://api.example.com/items/\(input)")!)
    }
}

@Suite struct ResourceTests {
    let recorded = Locked<[URLRequest]>([])

    func transport(status: Int = 200, headers: [String: String] = [:], body: String) -> InMemoryTransport {
        InMemoryTransport { [recorded] request in
            recorded.withLock { $0.append(request) }
            return try InMemoryTransport.reply(to: request, status: status, headers: headers, body: Data(body.utf8))
        }
    }

    @Test func decodesJSONByDefault() async throws {
        let items = try await Items(transport: transport(body: #"[{"id":1},{"id":2}]"#)).request()
        #expect(items == [Item(id: 1), Item(id: 2)])
        #expect(recorded.withLock { $0.first?.httpMethod } == "GET")
    }

    @Test func returnsDataAsIs() async throws {
        let data = try await Raw(transport: transport(body: "\u{1}binary")).request()
        #expect(data == Data("\u{1}binary".utf8))
    }

    @Test func returnsStringsAndRejectsInvalidUTF8() async throws {
        #expect(try await VoidInput(transport: transport(body: "pong")).request() == "pong")
        let invalid = InMemoryTransport { try InMemoryTransport.reply(to: $0, body: Data([0xFF, 0xFE])) }
        let error = await #expect(throws: ResourceError.self) { try await VoidInput(transport: invalid).request() }
        #expect(error?.code == .decodingFailed)
        #expect(error?.underlyingError is DecodingError)
    }

    @Test func voidOutputIgnoresTheBodyAndUsesTheMethod() async throws {
        try await Delete(transport: transport(status: 204, body: "")).request(using: 7)
        #expect(recorded.withLock { $0.first?.httpMethod } == "DELETE")
        #expect(recorded.withLock { $0.first?.url?.path } == "/items/7")
    }

    @Test func aNon2xxStatusCarriesStatusHeadersAndARedactedSnippet() async throws {
        let body =
            #"{"error":"nope","access_token":"leaked-token-123","detail":"\#(String(repeating: "x", count: 600))"}"#
        let failing = transport(status: 500, headers: ["Retry-After": "3"], body: body)
        let error = await #expect(throws: ResourceError.self) {
            try await Endpoint(transport: failing).request(using: "item")
        }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.statusCode == 500)
        #expect(error?.responseHeaders["Retry-After"] == "3")
        let snippet = try #require(error?.bodySnippet)
        #expect(snippet.contains(#""error":"nope""#))
        #expect(!snippet.contains("leaked-token-123"))
        #expect(snippet.utf8.count < 400, "the snippet is bounded")
        #expect(!String(describing: error!).contains("s3cret"), "the query is not shown")
    }

    @Test func validationIsOverridable() async throws {
        let notFound = transport(status: 404, body: #"{"id":0}"#)
        let item = try await Endpoint(transport: notFound, accept: 200...404).request(using: "item")
        #expect(item == Item(id: 0))
    }

    @Test func aDecodingFailureCarriesTheUnderlyingError() async throws {
        let error = await #expect(throws: ResourceError.self) {
            try await Endpoint(transport: transport(body: #"{"id":"one"}"#)).request(using: "item")
        }
        #expect(error?.code == .decodingFailed)
        #expect(error?.underlyingError is DecodingError)
        #expect(error?.statusCode == 200)
    }

    @Test func aTransportFailureCarriesTheUnderlyingError() async throws {
        let offline = InMemoryTransport { _ in throw URLError(.notConnectedToInternet) }
        let error = await #expect(throws: ResourceError.self) {
            try await Endpoint(transport: offline).request(using: "item")
        }
        #expect(error?.code == .transportFailed)
        #expect((error?.underlyingError as? URLError)?.code == .notConnectedToInternet)
        #expect(error?.response == nil)
    }

    @Test func aRequestThatCannotBeBuiltIsAnInvalidRequest() async throws {
        let error = await #expect(throws: ResourceError.self) {
            try await Endpoint(transport: transport(body: "{}")).request(using: "")
        }
        #expect(error?.code == .invalidRequest)
        #expect(recorded.withLock { $0.isEmpty })
    }

    @Test func theMethodComesFromTheResource() async throws {
        _ = try await Endpoint(transport: transport(body: #"{"id":1}"#), method: .patch).request(using: "x")
        #expect(recorded.withLock { $0.first?.httpMethod } == "PATCH")
    }
}
