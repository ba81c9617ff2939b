import AuthenticatedRequests
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The response type transports return: header fields in order, looked up without regard to case,
/// and Foundation's `HTTPURLResponse` built from it on demand.
@Suite struct ResponseHeadTests {
    let url = URL(string: "https://api.example.com/notes?page=2")!

    @Test func namesAreLookedUpWithoutRegardToCase() {
        let head = ResponseHead(
            statusCode: 401, url: url,
            headerFields: [("WWW-Authenticate", #"Bearer error="invalid_token""#), ("dpop-nonce", "n-1")])
        #expect(head.value(forHTTPHeaderField: "www-authenticate") == #"Bearer error="invalid_token""#)
        #expect(head.value(forHTTPHeaderField: "WWW-AUTHENTICATE") == #"Bearer error="invalid_token""#)
        #expect(head.value(forHTTPHeaderField: "DPoP-Nonce") == "n-1")
        #expect(head.value(forHTTPHeaderField: "Retry-After") == nil)
        // Only letters fold: names that differ in another byte are different names.
        #expect(head.headerFields["dpop_nonce"] == nil)
        #expect(head.headerFields["dpop-nonc"] == nil)
    }

    @Test func repeatedFieldsKeepTheirOrderAndJoinLikeFoundation() {
        var fields = HeaderFields()
        fields.append(name: "WWW-Authenticate", value: #"DPoP algs="ES256""#)
        fields.append(name: "Content-Type", value: "application/json")
        fields.append(name: "www-authenticate", value: #"Bearer realm="api""#)
        let head = ResponseHead(statusCode: 401, url: url, headerFields: fields)
        #expect(head.headerFields.values(for: "WWW-Authenticate") == [#"DPoP algs="ES256""#, #"Bearer realm="api""#])
        #expect(head.value(forHTTPHeaderField: "WWW-Authenticate") == #"DPoP algs="ES256", Bearer realm="api""#)
        #expect(head.headerFields.map(\.name) == ["WWW-Authenticate", "Content-Type", "www-authenticate"])
        #expect(head.headerFields.count == 3)
    }

    @Test func theHTTPURLResponseBuiltOnDemandEqualsOneBuiltDirectly() throws {
        let fields: [(String, String)] = [
            ("Content-Type", "application/json"), ("Cache-Control", "no-store"), ("Retry-After", "30"),
            ("WWW-Authenticate", "Bearer"), ("X-Request-Id", "r-1"),
        ]
        let head = ResponseHead(statusCode: 429, url: url, headerFields: HeaderFields(fields))
        let built = try #require(head.httpURLResponse)
        let direct = try #require(
            HTTPURLResponse(
                url: url, statusCode: 429, httpVersion: "HTTP/1.1",
                headerFields: Dictionary(uniqueKeysWithValues: fields)))
        #expect(built.statusCode == direct.statusCode)
        #expect(built.url == direct.url)
        for (name, _) in fields {
            #expect(built.value(forHTTPHeaderField: name) == direct.value(forHTTPHeaderField: name), "\(name)")
            #expect(built.value(forHTTPHeaderField: name.lowercased()) == direct.value(forHTTPHeaderField: name))
        }
        #expect(built.allHeaderFields.count == direct.allHeaderFields.count)
        #expect(built.mimeType == direct.mimeType)
    }

    @Test func aHeadMadeFromFoundationGivesTheSameObjectBack() throws {
        let original = try #require(
            HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["ETag": "\"v1\""]))
        let head = ResponseHead(original)
        #expect(head.statusCode == 200 && head.url == url)
        #expect(head.value(forHTTPHeaderField: "etag") == "\"v1\"")
        #expect(head.httpURLResponse === original, "no second Foundation object")
    }

    @Test func aHeadWithoutURLHasNoFoundationResponse() {
        #expect(ResponseHead(statusCode: 204, url: nil).httpURLResponse == nil)
    }

    @Test func descriptionsWithholdCredentialFields() {
        let fields: HeaderFields = [("Set-Cookie", "session=secret-cookie"), ("Content-Type", "text/plain")]
        #expect(!fields.description.contains("secret-cookie"))
        #expect(fields.description.contains("Content-Type: text/plain"))
    }
}
