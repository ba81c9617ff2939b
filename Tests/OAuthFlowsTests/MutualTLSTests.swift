import AuthenticatedRequests
import Foundation
import TestSupport
import Testing

@testable import OAuthFlows

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// RFC 8705 in the flows: client authentication by certificate, the aliases, and what a token
/// says of its binding.
@Suite struct MutualTLSTests {
    static let plain = "https://as.example.com"
    static let mtls = "https://mtls.as.example.com"

    static func metadata() throws -> AuthorizationServerMetadata {
        try AuthorizationServerMetadata(fields: [
            "issuer": .string(plain),
            "token_endpoint": .string("\(plain)/token"),
            "revocation_endpoint": .string("\(plain)/revoke"),
            "introspection_endpoint": .string("\(plain)/introspect"),
            "device_authorization_endpoint": .string("\(plain)/device"),
            "backchannel_authentication_endpoint": .string("\(plain)/bc"),
            "backchannel_token_delivery_modes_supported": .array([.string("poll")]),
            "pushed_authorization_request_endpoint": .string("\(plain)/par"),
            "mtls_endpoint_aliases": .object([
                "token_endpoint": .string("\(mtls)/token"),
                "revocation_endpoint": .string("\(mtls)/revoke"),
                "introspection_endpoint": .string("\(mtls)/introspect"),
                "device_authorization_endpoint": .string("\(mtls)/device"),
                "backchannel_authentication_endpoint": .string("\(mtls)/bc"),
                "pushed_authorization_request_endpoint": .string("\(mtls)/par"),
                "issuer": .string("https://evil.example.com"),
            ]),
        ])
    }

    /// A transport presenting `thumbprint`, answering token requests with `token` and recording them.
    static func transport(
        presenting thumbprint: String?, answering accessToken: String = "opaque", tokenType: String = "Bearer",
        sent: Locked<[URLRequest]> = Locked([])
    ) -> InMemoryTransport {
        InMemoryTransport(clientCertificateThumbprint: { thumbprint }) { request in
            sent.withLock { $0.append(request) }
            return try InMemoryTransport.reply(
                to: request, json: #"{"access_token":"\#(accessToken)","token_type":"\#(tokenType)","expires_in":300}"#)
        }
    }

    @Test(arguments: [
        (ClientAuthentication.tlsClientAuth(id: "client-1"), "tls_client_auth"),
        (.selfSignedTLSClientAuth(id: "client-1"), "self_signed_tls_client_auth"),
    ])
    func certificateAuthenticationSendsTheClientIDAndNothingElse(client: ClientAuthentication, method: String)
        async throws
    {
        #expect(client.methodName == method)
        #expect(client.usesMutualTLS)
        #expect(client.isConfidential)
        #expect(!client.description.contains("secret"))
        let sent = Locked<[URLRequest]>([])
        let endpoint = TokenEndpoint(url: URL(string: "\(Self.mtls)/token")!, client: client)
        let token = try await endpoint.requestToken(
            grantType: "client_credentials",
            context: AuthenticationContext(transport: Self.transport(presenting: "cert-A", sent: sent)))
        let request = try #require(sent.withLock { $0.first })
        #expect(request.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(
            String(decoding: request.httpBody ?? Data(), as: UTF8.self)
                == "grant_type=client_credentials&client_id=client-1")
        #expect(token.certificateThumbprint == "cert-A", "issued over the certificate")
    }

    @Test func mutualTLSWithoutACertificateSendsNothing() async throws {
        let sent = Locked<[URLRequest]>([])
        for client in [
            ClientAuthentication.tlsClientAuth(id: "c"), .clientSecretBasic(id: "c", secret: "s").usingMutualTLS(),
        ] {
            let endpoint = TokenEndpoint(url: URL(string: "\(Self.mtls)/token")!, client: client)
            let error = await #expect(throws: TokenEndpointError.self) {
                _ = try await endpoint.requestToken(
                    grantType: "client_credentials",
                    context: AuthenticationContext(transport: Self.transport(presenting: nil, sent: sent)))
            }
            #expect(error?.code == .invalidConfiguration)
        }
        #expect(sent.withLock { $0.isEmpty })
    }

    @Test func aClientUsingMutualTLSReachesEveryEndpointAtItsAlias() throws {
        let metadata = try Self.metadata()
        for client in [
            ClientAuthentication.tlsClientAuth(id: "c"), .clientSecretPost(id: "c", secret: "s").usingMutualTLS(),
        ] {
            #expect(try metadata.tokenEndpoint(client: client).url.absoluteString == "\(Self.mtls)/token")
            #expect(try metadata.revocationEndpoint(client: client).url.absoluteString == "\(Self.mtls)/revoke")
            #expect(try metadata.introspectionEndpoint(client: client).url.absoluteString == "\(Self.mtls)/introspect")
            let device = try metadata.deviceAuthorizationFlow(client: client) { _ in }
            #expect(device.deviceAuthorizationEndpoint.absoluteString == "\(Self.mtls)/device")
            #expect(device.endpoint.url.absoluteString == "\(Self.mtls)/token")
            #expect(
                try metadata.clientCredentialsFlow(client: client).endpoint.url.absoluteString == "\(Self.mtls)/token")
            let resolved = metadata.resolved(for: client)
            #expect(resolved.issuer == Self.plain, "an alias never replaces the issuer")
            #expect(resolved.backchannelAuthenticationEndpoint?.absoluteString == "\(Self.mtls)/bc")
            #expect(resolved.pushedAuthorizationRequestEndpoint?.absoluteString == "\(Self.mtls)/par")
        }
        let plainClient = ClientAuthentication.clientSecretBasic(id: "c", secret: "s")
        #expect(try metadata.tokenEndpoint(client: plainClient).url.absoluteString == "\(Self.plain)/token")
        #expect(try metadata.revocationEndpoint(client: plainClient).url.absoluteString == "\(Self.plain)/revoke")
        #expect(metadata.mtlsEndpointAliases["token_endpoint"]?.absoluteString == "\(Self.mtls)/token")
    }

    /// A JWT access token: `header.payload.signature`, the payload as given.
    static func jwt(_ claims: String) -> String {
        "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(Data(claims.utf8)) + ".c2ln"
    }

    @Test func aJWTBoundToAnotherCertificateIsReportedNotUsed() async throws {
        let endpoint = TokenEndpoint(url: URL(string: "\(Self.mtls)/token")!, client: .tlsClientAuth(id: "c"))
        let other = Self.jwt(#"{"cnf":{"x5t#S256":"cert-B"}}"#)
        let error = await #expect(throws: TokenEndpointError.self) {
            _ = try await endpoint.requestToken(
                grantType: "client_credentials",
                context: AuthenticationContext(transport: Self.transport(presenting: "cert-A", answering: other)))
        }
        #expect(error?.code == .invalidResponse)
        #expect(error.map { !String(describing: $0).contains(other) } == true, "the token is not in the error")

        let same = Self.jwt(#"{"cnf":{"x5t#S256":"cert-A"}}"#)
        let token = try await endpoint.requestToken(
            grantType: "client_credentials",
            context: AuthenticationContext(transport: Self.transport(presenting: "cert-A", answering: same)))
        #expect(token.certificateThumbprint == "cert-A")
    }

    @Test func aJWTBoundToACertificateWhenNoneWasPresentedIsReported() async throws {
        let endpoint = TokenEndpoint(
            url: URL(string: "\(Self.plain)/token")!, client: .clientSecretBasic(id: "c", secret: "s"))
        let bound = Self.jwt(#"{"cnf":{"x5t#S256":"cert-B"}}"#)
        await #expect(throws: TokenEndpointError.self) {
            _ = try await endpoint.requestToken(
                grantType: "client_credentials",
                context: AuthenticationContext(transport: Self.transport(presenting: nil, answering: bound)))
        }
    }

    /// DPoP and mutual TLS never both bind one token: a DPoP-bound token records no certificate,
    /// and one whose `cnf` names both is refused.
    @Test func aTokenIsBoundByDPoPOrByACertificateNeverBoth() throws {
        let url = URL(string: "\(Self.mtls)/token")!
        var dpop = OAuthToken(
            accessToken: Self.jwt(#"{"cnf":{"jkt":"key"}}"#), tokenType: "DPoP",
            boundKey: BoundKey(thumbprint: "key", algorithm: "ES256", storedKey: Data()))
        try TokenEndpoint.bind(&dpop, toCertificate: "cert-A", at: url)
        #expect(dpop.certificateThumbprint == nil)

        var both = OAuthToken(accessToken: Self.jwt(#"{"cnf":{"jkt":"key","x5t#S256":"cert-A"}}"#), tokenType: "DPoP")
        #expect(throws: TokenEndpointError.self) { try TokenEndpoint.bind(&both, toCertificate: "cert-A", at: url) }

        var opaque = OAuthToken(accessToken: "opaque")
        try TokenEndpoint.bind(&opaque, toCertificate: nil, at: url)
        #expect(opaque.certificateThumbprint == nil)
    }

    @Test func introspectionSaysWhichCertificateATokenIsBoundTo() async throws {
        let transport = InMemoryTransport(clientCertificateThumbprint: { "cert-A" }) { request in
            try InMemoryTransport.reply(to: request, json: #"{"active":true,"cnf":{"x5t#S256":"cert-A"}}"#)
        }
        let endpoint = IntrospectionEndpoint(
            url: URL(string: "\(Self.mtls)/introspect")!, client: .tlsClientAuth(id: "c"))
        let answer = try await endpoint.introspect("token", context: AuthenticationContext(transport: transport))
        #expect(answer.certificateThumbprint == "cert-A")
    }
}
