import AuthenticatedRequests
import Testing

@Suite struct AuthenticationChallengeTests {
    @Test func parsesABearerChallengeWithParameters() {
        let challenges = AuthenticationChallenge.parse(
            #"Bearer realm="example", error="invalid_token", error_description="The access token expired""#)
        #expect(challenges.count == 1)
        #expect(challenges[0].hasScheme("bearer"))
        #expect(challenges[0].parameters["realm"] == "example")
        #expect(challenges[0].error == "invalid_token")
        #expect(challenges[0].parameters["error_description"] == "The access token expired")
    }

    @Test func parsesSeveralChallengesAndLowercaseSchemes() {
        let challenges = AuthenticationChallenge.parse(
            #"Basic realm="a", bearer error="missing_authorization", DPoP algs="ES256 PS256""#)
        #expect(challenges.map { $0.scheme.lowercased() } == ["basic", "bearer", "dpop"])
        #expect(challenges[1].error == "missing_authorization")
        #expect(challenges[2].parameters["algs"] == "ES256 PS256")
    }

    @Test func toleratesBareSchemesEscapesAndToken68() {
        #expect(AuthenticationChallenge.parse("Bearer").map(\.scheme) == ["Bearer"])
        #expect(
            AuthenticationChallenge.parse(#"Bearer realm="a \"quoted\" b""#).first?.parameters["realm"]
                == #"a "quoted" b"#)
        #expect(AuthenticationChallenge.parse("Negotiate abc==, Bearer").map(\.scheme) == ["Negotiate", "Bearer"])
        #expect(AuthenticationChallenge.parse("").isEmpty)
    }
}
