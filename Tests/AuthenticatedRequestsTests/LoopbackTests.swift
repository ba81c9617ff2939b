import AuthenticatedRequests
import Foundation
import Testing

/// Which URLs count as loopback, where plain `http` may carry a credential: the spellings read as
/// written (the fast path every loopback request takes) and those that need the host decoded,
/// lower-cased or parsed.
@Suite struct LoopbackTests {
    @Test(arguments: [
        "http://127.0.0.1:8080/me", "http://localhost/", "http://[::1]:9000/x", "http://LOCALHOST:80/",
        "http://LocalHost/", "http://127.1.2.3/", "http://[0:0:0:0:0:0:0:1]/", "http://127.0.0.1",
    ])
    func loopbackHostsAreLoopback(_ url: String) throws {
        let url = try #require(URL(string: url))
        #expect(url.isLoopback)
        #expect(url.isSafeForSecrets)
    }

    @Test(arguments: [
        "http://127.0.0.1.evil.example/", "http://localhost.example/", "http://example.com/",
        "http://128.0.0.1/", "http://127.0.0/", "http://127.0.0.256/", "http://[::2]/", "http:///path",
        "http://user:127.0.0.1@example.com/",
    ])
    func otherHostsAreNot(_ url: String) throws {
        let url = try #require(URL(string: url))
        #expect(!url.isLoopback)
        #expect(!url.isSafeForSecrets)
    }

    @Test func aPercentEncodedLoopbackHostIsJudgedDecoded() throws {
        // Written `%6Cocalhost`, it reads `localhost` once decoded: the fast path does not match
        // it as written, and the decoded host still counts.
        let url = try #require(URL(string: "http://%6Cocalhost:8080/"))
        #expect(url.host(percentEncoded: true) == "%6Cocalhost")
        #expect(url.host == "localhost")
        #expect(url.isLoopback)
    }

    @Test func httpsIsSafeAnywhere() throws {
        #expect(try #require(URL(string: "https://api.example.com/")).isSafeForSecrets)
        #expect(!(try #require(URL(string: "ftp://127.0.0.1/")).isSafeForSecrets))
    }
}
