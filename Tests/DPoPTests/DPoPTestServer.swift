import AuthenticatedRequests
import Crypto
import Foundation
import JWTKit
import TestSupport
import Testing

@testable import DPoP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let tokenURL = URL(string: "https://auth.example.com/token")!
let apiURL = URL(string: "https://api.example.com/me?view=full#top")!

/// A decoded proof, its signature verified with the public key of its own header by jwt-kit.
struct InspectedProof: Sendable {
    let header: [String: JSONValue]
    let claims: [String: JSONValue]
    let jwk: [String: String]

    func claim(_ name: String) -> String? { claims[name]?.stringValue }
    var issuedAt: Int? { claims["iat"]?.doubleValue.map { Int($0) } }
    var algorithm: String? { header["alg"]?.stringValue }

    var thumbprint: String {
        // RFC 7638 computed here, independently of the module: members in order, no whitespace.
        let names = jwk["kty"] == "OKP" ? ["crv", "kty", "x"] : ["crv", "kty", "x", "y"]
        let json = "{" + names.map { "\"\($0)\":\"\(jwk[$0] ?? "")\"" }.joined(separator: ",") + "}"
        return base64url(Data(SHA256.hash(data: Data(json.utf8))))
    }

    static func verify(_ proof: String) async throws -> InspectedProof {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = decodeBase64url(parts[0]), let claimBytes = decodeBase64url(parts[1]),
            let header = try JSONValue(parsing: headerBytes).objectValue,
            let claims = try JSONValue(parsing: claimBytes).objectValue,
            let jwkObject = header["jwk"]?.objectValue
        else { throw ProofProblem(reason: "not a JWS with a jwk header") }
        let jwk = jwkObject.compactMapValues(\.stringValue)
        let keys = JWTKeyCollection()
        switch header["alg"]?.stringValue {
        case "ES256":
            guard let x = jwk["x"], let y = jwk["y"] else { throw ProofProblem(reason: "no x, y") }
            await keys.add(ecdsa: try ES256PublicKey(parameters: (x, y)))
        case "EdDSA":
            guard let x = jwk["x"] else { throw ProofProblem(reason: "no x") }
            await keys.add(eddsa: try EdDSA.PublicKey(x: x, curve: .ed25519))
        default:
            throw ProofProblem(reason: "unexpected alg")
        }
        _ = try await keys.verify(proof, as: AnyClaims.self)
        return InspectedProof(header: header, claims: claims, jwk: jwk)
    }
}

struct ProofProblem: Error { let reason: String }

struct AnyClaims: JWTPayload {
    let htm: String
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

func base64url(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

func decodeBase64url(_ text: String) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}

/// An authorization server and a resource server in memory that speak DPoP: tokens are bound to
/// the proof's key, the resource checks `ath`, `htm`, `htu` and `cnf.jkt`, and either may demand
/// a nonce.
final class DPoPTestServer: Sendable {
    struct State: Sendable {
        var tokenRequests: [URLRequest] = []
        var tokenProofs: [InspectedProof] = []
        var apiRequests: [URLRequest] = []
        var apiProofs: [InspectedProof] = []
        /// Access token -> the thumbprint it is bound to (`cnf.jkt`).
        var bindings: [String: String] = [:]
        var issued = 0
        var tokenNonce: String?
        var apiNonce: String?
        var apiNonceOnSuccess: String?
        var alwaysAskForNonce = false
        var tokenType = "DPoP"
        var tokenError: String?
        var expiresIn = 3600
    }

    let state = Locked(State())
    let clock: TestClock

    init(clock: TestClock) {
        self.clock = clock
    }

    var transport: InMemoryTransport {
        InMemoryTransport { [self] request in
            try await handle(request)
        }
    }

    func context(proof: (any ProofOfPossession)?) -> AuthenticationContext {
        AuthenticationContext(transport: transport, clock: clock, proofOfPossession: proof)
    }

    private func handle(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let proofHeader = request.value(forHTTPHeaderField: "DPoP")
        var proof: InspectedProof?
        if let proofHeader { proof = try await InspectedProof.verify(proofHeader) }
        if request.url?.host == "auth.example.com" {
            let snapshot = state.withLock { state in
                state.tokenRequests.append(request)
                if let proof { state.tokenProofs.append(proof) }
                return state
            }
            if let error = snapshot.tokenError {
                return try InMemoryTransport.reply(to: request, status: 400, json: #"{"error":"\#(error)"}"#)
            }
            if let nonce = snapshot.tokenNonce, proof?.claim("nonce") != nonce || snapshot.alwaysAskForNonce {
                return try InMemoryTransport.reply(
                    to: request, status: 400, headers: ["DPoP-Nonce": nonce],
                    json: #"{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce"}"#)
            }
            let token = state.withLock { state -> String in
                state.issued += 1
                let token = "access-\(state.issued)"
                if let proof, state.tokenType.lowercased() == "dpop" { state.bindings[token] = proof.thumbprint }
                return token
            }
            let type = proof == nil ? "Bearer" : snapshot.tokenType
            return try InMemoryTransport.reply(
                to: request,
                json:
                    #"{"access_token":"\#(token)","token_type":"\#(type)","expires_in":\#(snapshot.expiresIn),"refresh_token":"refresh-\#(token)"}"#
            )
        }
        let snapshot = state.withLock { state in
            state.apiRequests.append(request)
            if let proof { state.apiProofs.append(proof) }
            return state
        }
        let authorization = request.value(forHTTPHeaderField: "Authorization") ?? ""
        guard authorization.hasPrefix("DPoP "), let proof else {
            return try InMemoryTransport.reply(to: request, status: 401, headers: ["WWW-Authenticate": "DPoP"])
        }
        let token = String(authorization.dropFirst(5))
        if let nonce = snapshot.apiNonce, proof.claim("nonce") != nonce || snapshot.alwaysAskForNonce {
            return try InMemoryTransport.reply(
                to: request, status: 401,
                headers: ["WWW-Authenticate": #"DPoP error="use_dpop_nonce", algs="ES256""#, "DPoP-Nonce": nonce])
        }
        let expectedHash = base64url(Data(SHA256.hash(data: Data(token.utf8))))
        guard snapshot.bindings[token] == proof.thumbprint, proof.claim("ath") == expectedHash else {
            return try InMemoryTransport.reply(
                to: request, status: 401, headers: ["WWW-Authenticate": #"DPoP error="invalid_token""#])
        }
        var headers: [String: String] = [:]
        if let next = snapshot.apiNonceOnSuccess { headers["DPoP-Nonce"] = next }
        return try InMemoryTransport.reply(to: request, headers: headers, json: #"{"name":"Ada"}"#)
    }
}

/// `GET apiURL` with an authenticator.
struct Profile: AuthenticatedResource {
    struct Output: Decodable, Sendable { let name: String }
    let authenticator: any RequestAuthenticator
    let transport: any HTTPTransport
    func urlRequest(using input: Void) throws -> URLRequest { URLRequest(url: apiURL) }
}
