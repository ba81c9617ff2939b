import AuthenticatedRequests
import Foundation
import OAuthFlows
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 9396 `authorization_details`: read strictly, sent as one JSON parameter, kept with the token.
struct AuthorizationDetailTests {
    @Test func entriesAreTypedObjectsAndTheParameterReadsBackTheSame() throws {
        let details = [
            AuthorizationDetail(
                type: "account_information",
                fields: ["locations": .array([.string("https://example.com/accounts")]), "type": .string("ignored")]),
            AuthorizationDetail(type: "payment_initiation", fields: ["identifier": .string("p-1")]),
        ]
        #expect(details[0].type == "account_information", "a type among the fields does not replace it")
        #expect(details[0].strings("locations") == ["https://example.com/accounts"])
        #expect(details[1].identifier == "p-1")
        let parameter = try AuthorizationDetail.parameter(details)
        #expect(parameter.hasPrefix(#"[{"locations":["https://example.com/accounts"],"type":"account_information"}"#))
        #expect(try AuthorizationDetail.list(from: JSONValue(parsing: Data(parameter.utf8))) == details)
    }

    @Test(arguments: [#"{"type":"x"}"#, #"[{"actions":["read"]}]"#, #"[{"type":""}]"#, #"["x"]"#, #"[{"type":7}]"#])
    func anythingElseIsRefused(json: String) throws {
        #expect(throws: AuthorizationDetailError.self) {
            _ = try AuthorizationDetail.list(from: JSONValue(parsing: Data(json.utf8)))
        }
    }

    func reply(_ body: String) throws -> ServerReply {
        let url = try #require(URL(string: "https://auth.example.com/token"))
        let response = ResponseHead(statusCode: 200, url: url)
        return ServerReply(url: url, body: Data(body.utf8), response: response, sentSecrets: [], sentAt: Date())
    }

    @Test func theGrantedDetailsStayWithTheTokenThroughItsStore() throws {
        let token = try TokenEndpoint.token(
            from: reply(#"{"access_token":"a","authorization_details":[{"type":"t","identifier":"g"}]}"#),
            requestedScope: nil, now: Date())
        #expect(token.authorizationDetails == [AuthorizationDetail(type: "t", fields: ["identifier": .string("g")])])
        let stored = try JSONDecoder().decode(OAuthToken.self, from: JSONEncoder().encode(token))
        #expect(stored.authorizationDetails == token.authorizationDetails)
    }

    @Test func aTokenResponseWithMalformedDetailsIsRefused() throws {
        let error = #expect(throws: TokenEndpointError.self) {
            _ = try TokenEndpoint.token(
                from: reply(#"{"access_token":"a","authorization_details":{"type":"t"}}"#), requestedScope: nil,
                now: Date())
        }
        #expect(error?.field == "authorization_details")
    }
}
