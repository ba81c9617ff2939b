import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Resource where Output: Decodable {
    /// Decodes the body as JSON with ``Resource/decoder``.
    public func decode(_ body: Data, from response: ResponseHead) throws -> Output {
        try decoder.decode(Output.self, from: body)
    }
}

extension Resource where Output == Data {
    /// Returns the body as it arrived.
    public func decode(_ body: Data, from response: ResponseHead) throws -> Data {
        body
    }
}

extension Resource where Output == String {
    /// Decodes the body as UTF-8 text; invalid UTF-8 is an error, never silently replaced.
    public func decode(_ body: Data, from response: ResponseHead) throws -> String {
        guard let text = String(data: body, encoding: .utf8) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "The body is not valid UTF-8.")
            )
        }
        return text
    }
}

extension Resource where Output == Void {
    /// Ignores the body: for endpoints that answer `204 No Content` or whose reply is not needed.
    public func decode(_ body: Data, from response: ResponseHead) throws {}
}
