"""The conformance provider: an OpenID provider of the project's own that serves a good provider
and, per run, the mutation of one test module of the OpenID Foundation's relying-party test plans
(openid-certification/conformance-suite, `src/main/java/net/openid/conformance/openid/client/`),
ported: the suite is Java with MongoDB and cannot run here, so its modules' behaviours are
written again on Python's standard library and PyJWT (with `cryptography`), pinned in the MCP
server's environment (Tests/MCPServer/requirements.txt).

It signs with real keys (RS256, ES256, PS256), rotates them, and checks what the client sends
(client_secret_basic, PKCE S256, `openid` in the scope, a nonce, the bearer header at UserInfo)
as checks the tests read.

Control API (on the port given on the command line):
- `POST /runs` with `{"module": NAME}` (and, for FAPI 2.0 modules, `"client_jwk"`: the client's
  public key for private_key_jwt) starts a provider on a new port with that module's mutation and
  answers `{"id", "issuer", "client_id", "client_secret"}`.
- `POST /runs/ID/rotate` rotates the signing key (the next ID token is signed with a new key,
  which the JWKS then publishes instead of the old one).
- `GET /runs/ID/checks` answers the checks: `[{"id", "status", "description", "details"}]`.
- `GET /runs` lists the modules; `GET /test/health` answers when the server is up.

FAPI-CIBA (`fapi-ciba-id1-client-test-plan`, `src/main/java/net/openid/conformance/fapiciba/rp/`):
its modules for the variant private_key_jwt, poll and ping (`"ciba_mode": "ping"` and the client's
`"notification_endpoint"` in `POST /runs`). The provider requires signed authentication requests
(CIBA Core §7.1.1) and private_key_jwt at the backchannel and token endpoints, checks the polling
interval, answers the module's sequence of token responses, and pings the client. Not ported:
FAPI 1's sender-constrained (mutual TLS) access tokens, which wait for mutual TLS in the SDK; the
tokens here are bearer tokens. The modules' polling interval is 1 s where the suite's module does
not set one (respects-interval: 31 s, slow-down: 5 s).

Mutual TLS (RFC 8705): `"variant": "mtls"` in `POST /runs`, with `"client_certificate"` (the PEM the
client will present) and `"tls"` (`{"certificate", "key", "trust"}`: files of the test PKI), runs a
module in the suite's mTLS variant (FAPI 2.0 `client_auth_type=mtls, sender_constrain=mtls`;
OIDCC `client_auth_type=mtls`): a second listener speaks TLS and requires a client certificate the
trust file vouches for (a refused one fails the handshake, counted in the checks as
`tls-handshake-refused`); discovery lists it as `mtls_endpoint_aliases` for PAR, token and UserInfo
and `tls_client_auth` as the only method; the client is authenticated by the certificate it
presented there (the registered one), no DPoP is asked, and access tokens are bearer tokens bound
to that certificate (`x5t#S256`), which the resource (on the TLS listener) and UserInfo check.

Usage: provider.py PORT
"""

import base64
import hashlib
import json
import os
import secrets
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm, get_default_algorithms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))
from dpop_check import ProofError, verify_dpop_proof  # noqa: E402
from loopback import CheckLog, Listener, Reply, b64url, form_post, json_reply, parse_basic, redirect, serve_control  # noqa: E402

AS_NONCE, RS_NONCE = "provider-dpop-nonce", "resource-dpop-nonce"

SUBJECT = "user-1"
USER = {"name": "Ada Lovelace", "email": "ada@example.com", "email_verified": True}


class Key:
    """A signing key and its public JWK."""

    def __init__(self, algorithm, kid):
        self.algorithm, self.kid = algorithm, kid
        if algorithm.startswith("ES"):
            self.private = ec.generate_private_key(ec.SECP256R1())
            self.jwk = ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        else:
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.jwk = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        self.jwk.pop("key_ops", None)
        self.signer = get_default_algorithms()[algorithm]
        self.jwk.update(use="sig", alg=algorithm)
        if kid is not None:
            self.jwk["kid"] = kid

    def sign_bytes(self, message):
        """The JWS signature of `message` (ES256's r || s, as JWS has it)."""
        return self.signer.sign(message, self.private)


CLAIMS_ACCESS_TOKEN = "claims-source-token-5b1c"
# The suite's claims source payloads (conformance-suite: OIDCCLoadUserInfoWithAggregatedClaims,
# the example of Core §5.6.2, and OIDCCLoadUserInfoWithDistributedClaims), as JSON texts.
AGGREGATED_CLAIMS = """{"address": {
"street_address": "1234 Hollywood Blvd.",
"locality": "Los Angeles",
"region": "CA",
"postal_code": "90210",
"country": "US"},
"phone_number": "+1 (310) 123-4567"
}"""
DISTRIBUTED_CLAIMS = '{"credit_score":650}'


def spoiled_signature(token):
    """`token` with one character of its signature changed."""
    head, payload, signature = token.split(".")
    flipped = bytearray(signature.encode())
    flipped[5] = ord("A") if flipped[5] != ord("A") else ord("B")
    return ".".join([head, payload, flipped.decode()])


@dataclass
class Module:
    """What a module changes in the good provider."""

    algorithm: str = "RS256"
    kid: bool = True
    extra_keys: int = 0
    claims: dict = field(default_factory=dict)
    drop: tuple = ()
    bad_signature: bool = False
    userinfo_sub: object = None
    discovery_issuer: object = None
    rotate_before_signing: bool = False
    refresh_claims: dict = field(default_factory=dict)
    logout_state: str = "correct"
    # FAPI 2.0 Security Profile: PAR, private_key_jwt, DPoP, RFC 9207 `iss`, and the
    # authorization and token responses' mutations.
    fapi: bool = False
    response_iss: str = "correct"
    response_state: str = "correct"
    expires_in: bool = True
    token_type: object = None
    dpop_nonce: bool = True
    lowercase_challenge: bool = False
    advertised: object = None  # the advertised ID token algorithm; `algorithm` unless given
    # RFC 9396: what the token response grants: the request's entries, each given an
    # identifier ("echo"), or a malformed value ("malformed").
    granted_details: str = "echo"
    # JAR (RFC 9101): request objects required, by value or pushed.
    require_par: bool = True
    jar: bool = False
    request_object_algs: tuple = ("ES256", "PS256")
    # JARM: how the signed authorization response is spoiled ({} for a good one): "claims" to
    # replace, "drop" to remove, "bad_signature", "none".
    jarm: object = None
    # Signed UserInfo (Core §5.3.2), spoiled the same way ({} for a good one).
    userinfo_signed: object = None
    # Claims held elsewhere (Core §5.6.2): "aggregated" (a JWT inside UserInfo) or "distributed"
    # (a claims endpoint, read with its own access token). The suite's own payloads, byte for byte
    # (`OIDCCLoadUserInfoWithAggregatedClaims`: Core's example claims signed with alg none;
    # `OIDCCSignClaimsEndpointResponse`: exactly {"credit_score": 650}, no iss, no sub, signed with
    # the provider's key), unless `claims_source_spoil` says otherwise: "claims" added to the
    # payload (a callable gets the run), "bad_signature", "none", "signed" (the provider's key
    # for an aggregated source, whose suite payload is unsigned).
    claims_source: object = None
    claims_source_spoil: dict = field(default_factory=dict)
    # FAPI-CIBA: {"ack": how the backchannel response is spoiled ("missing_auth_req_id",
    # "missing_expires_in", or an error code), "answers": the token endpoint's answers before the
    # tokens, "interval": seconds, "ping": "right" or "bad_bearer"}.
    ciba: object = None
    token_scope: bool = True

    def __post_init__(self):
        self.advertised = self.advertised or self.algorithm
        self.request_object_algs = list(self.request_object_algs)


def fapi(**options):
    """A FAPI 2.0 module: PS256 ID tokens unless it says otherwise."""
    options.setdefault("algorithm", "PS256")
    return Module(fapi=True, **options)


def ciba(answers=(), ack=None, interval=1, ping="right", **options):
    """A FAPI-CIBA module: PS256 ID tokens, private_key_jwt, signed authentication requests."""
    options.setdefault("algorithm", "PS256")
    return Module(ciba={"answers": list(answers), "ack": ack, "interval": interval, "ping": ping}, **options)


CIBA_GRANT = "urn:openid:params:grant-type:ciba"
PENDING = "authorization_pending"

# The modules, named as the suite names them. `claims` replaces ID token claims (a callable gets
# the run), `drop` removes them.
MODULES = {
    # RP Basic, code flow
    "oidcc-client-test": Module(),
    "oidcc-client-test-invalid-iss": Module(claims={"iss": lambda run: run.issuer + "/other"}),
    "oidcc-client-test-missing-sub": Module(drop=("sub",)),
    "oidcc-client-test-invalid-aud": Module(claims={"aud": "another-client"}),
    "oidcc-client-test-missing-iat": Module(drop=("iat",)),
    "oidcc-client-test-kid-absent-single-jwks": Module(kid=False),
    "oidcc-client-test-kid-absent-multiple-jwks": Module(kid=False, extra_keys=1),
    "oidcc-client-test-idtoken-sig-rs256": Module(algorithm="RS256"),
    "oidcc-client-test-idtoken-sig-none": Module(algorithm="none"),
    "oidcc-client-test-invalid-sig-rs256": Module(bad_signature=True),
    "oidcc-client-test-userinfo-invalid-sub": Module(userinfo_sub="another-user"),
    "oidcc-client-test-nonce-invalid": Module(claims={"nonce": "not-the-request-nonce"}),
    "oidcc-client-test-scope-userinfo-claims": Module(),
    "oidcc-client-test-client-secret-basic": Module(),
    # RP Dynamic's UserInfo modules, and the project's own refusals of them
    "oidcc-client-test-userinfo-signed": Module(userinfo_signed={}),
    "authreq-userinfo-signed-bad-signature": Module(userinfo_signed={"bad_signature": True}),
    "authreq-userinfo-signed-other-aud": Module(userinfo_signed={"claims": {"aud": "another-client"}}),
    "authreq-userinfo-signed-other-iss": Module(userinfo_signed={"claims": {"iss": "https://other.example.com"}}),
    "authreq-userinfo-signed-alg-none": Module(userinfo_signed={"none": True}),
    "authreq-userinfo-signed-expired": Module(userinfo_signed={"claims": {"exp": lambda run: int(time.time()) - 600}}),
    "oidcc-client-test-aggregated-claims": Module(claims_source="aggregated"),
    "oidcc-client-test-distributed-claims": Module(claims_source="distributed"),
    "authreq-aggregated-claims-signed": Module(claims_source="aggregated", claims_source_spoil={"signed": True, "claims": {"iss": lambda run: run.issuer}}),
    "authreq-distributed-claims-bad-signature": Module(claims_source="distributed", claims_source_spoil={"bad_signature": True}),
    "authreq-distributed-claims-other-subject": Module(claims_source="distributed", claims_source_spoil={"claims": {"iss": lambda run: run.issuer, "sub": "another-user"}}),
    "authreq-distributed-claims-expired": Module(claims_source="distributed", claims_source_spoil={"claims": {"exp": lambda run: int(time.time()) - 600}}),
    "authreq-distributed-claims-untrusted-issuer": Module(claims_source="distributed", claims_source_spoil={"claims": {"iss": "https://claims.evil.example"}}),
    "authreq-distributed-claims-file-issuer": Module(claims_source="distributed", claims_source_spoil={"claims": {"iss": "file:///etc/passwd"}}),
    # RP Config
    "oidcc-client-test-discovery-openid-config": Module(),
    "oidcc-client-test-discovery-jwks-uri-keys": Module(algorithm="ES256"),
    "oidcc-client-test-discovery-issuer-mismatch": Module(discovery_issuer="https://issuer.example.com"),
    "oidcc-client-test-signing-key-rotation-just-before-signing": Module(rotate_before_signing=True),
    "oidcc-client-test-signing-key-rotation": Module(),
    # Refresh-token profile: the refresh's new ID token breaks one rule
    "oidcc-client-test-refresh-token": Module(),
    "oidcc-client-test-refresh-token-invalid-issuer": Module(refresh_claims={"iss": "https://other.example.com"}),
    "oidcc-client-test-refresh-token-invalid-aud": Module(refresh_claims={"aud": "another-client"}),
    "oidcc-client-test-refresh-token-invalid-azp": Module(refresh_claims={"azp": "another-client"}),
    "oidcc-client-test-refresh-token-invalid-sub": Module(refresh_claims={"sub": "another-user"}),
    # RP-initiated logout
    "oidcc-client-test-rp-init-logout": Module(),
    "oidcc-client-test-rp-init-logout-other-state": Module(logout_state="wrong"),
    "oidcc-client-test-rp-init-logout-no-state": Module(logout_state="omit"),
    # FAPI 2.0 Security Profile client, private_key_jwt + DPoP
    "fapi2-security-profile-final-client-test-happy-path": fapi(),
    "fapi2-security-profile-final-client-test-happy-path-no-dpop-nonce": fapi(dpop_nonce=False),
    "fapi2-security-profile-final-client-test-discovery-issuer-mismatch": fapi(discovery_issuer="https://issuer.example.com"),
    "fapi2-security-profile-final-client-test-invalid-iss": fapi(claims={"iss": "https://other.example.com"}),
    "fapi2-security-profile-final-client-test-invalid-aud": fapi(claims={"aud": "another-client"}),
    "fapi2-security-profile-final-client-test-invalid-secondary-aud": fapi(
        claims={"aud": lambda run: [run.client_id, "another-client"]}
    ),
    "fapi2-security-profile-final-client-test-invalid-null-alg": fapi(algorithm="none"),
    "fapi2-security-profile-final-client-test-invalid-alternate-alg": fapi(algorithm="RS256", advertised="PS256"),
    "fapi2-security-profile-final-client-test-invalid-expired-exp": fapi(
        claims={"exp": lambda run: int(time.time()) - 3600, "iat": lambda run: int(time.time()) - 3700}
    ),
    "fapi2-security-profile-final-client-test-invalid-missing-exp": fapi(drop=("exp",)),
    "fapi2-security-profile-final-client-test-invalid-missing-aud": fapi(drop=("aud",)),
    "fapi2-security-profile-final-client-test-invalid-missing-iss": fapi(drop=("iss",)),
    "fapi2-security-profile-final-client-test-valid-aud-as-array": fapi(claims={"aud": lambda run: [run.client_id]}),
    "fapi2-security-profile-final-client-test-invalid-nonce": fapi(claims={"nonce": "not-the-request-nonce"}),
    "fapi2-security-profile-final-client-test-invalid-missing-nonce": fapi(drop=("nonce",)),
    "fapi2-security-profile-final-client-test-invalid-authorization-response-iss": fapi(response_iss="wrong"),
    "fapi2-security-profile-final-client-test-remove-authorization-response-iss": fapi(response_iss="omit"),
    "fapi2-security-profile-final-client-test-ensure-authorization-response-with-invalid-state-fails": fapi(
        response_state="wrong"
    ),
    "fapi2-security-profile-final-client-test-ensure-authorization-response-with-invalid-missing-state-fails": fapi(
        response_state="omit"
    ),
    "fapi2-security-profile-final-client-test-token-endpoint-response-without-expires_in": fapi(expires_in=False),
    "fapi2-security-profile-final-client-test-token-type-case-insensitivity": fapi(token_type="dpOp"),
    "fapi2-security-profile-final-client-test-rs-dpop-auth-scheme-case-insensitivity": fapi(lowercase_challenge=True),
    "fapi2-security-profile-final-client-test-es256": fapi(algorithm="ES256"),
    # RAR (RFC 9396): authorization_details in the request, by value and pushed, and granted back
    "rar-authorization-details": Module(),
    "rar-authorization-details-par": fapi(),
    "rar-malformed-granted-details": Module(granted_details="malformed"),
    # JAR (RFC 9101): signed request objects by value and through PAR
    "jar-request-object-by-value": fapi(jar=True, require_par=False),
    "jar-request-object-through-par": fapi(jar=True),
    "jar-request-object-algorithm-not-supported": fapi(jar=True, request_object_algs=("PS256",)),
    # JARM: signed authorization responses (response_mode=jwt), good and spoiled rule by rule
    "fapi2-security-profile-final-client-test-happy-path-jarm": fapi(jarm={}),
    "fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-iss-fails": fapi(jarm={"claims": {"iss": "https://other.example.com"}}),
    "fapi2-security-profile-final-client-test-ensure-jarm-without-iss-fails": fapi(jarm={"drop": ("iss",)}),
    "fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-aud-fails": fapi(jarm={"claims": {"aud": "another-client"}}),
    "fapi2-security-profile-final-client-test-ensure-jarm-without-aud-fails": fapi(jarm={"drop": ("aud",)}),
    "fapi2-security-profile-final-client-test-ensure-jarm-with-expired-exp-fails": fapi(jarm={"claims": {"exp": lambda run: int(time.time()) - 3600}}),
    "fapi2-security-profile-final-client-test-ensure-jarm-without-exp-fails": fapi(jarm={"drop": ("exp",)}),
    "fapi2-security-profile-final-client-test-ensure-jarm-with-invalid-sig-fails": fapi(jarm={"bad_signature": True}),
    "fapi2-security-profile-final-client-test-ensure-jarm-signature-is-not-none": fapi(jarm={"none": True}),
    # Key types beyond the plans' RS256
    "oidcc-client-test-idtoken-sig-es256": Module(algorithm="ES256"),
    "oidcc-client-test-idtoken-sig-ps256": Module(algorithm="PS256"),
    # FAPI-CIBA client (fapi-ciba-id1-client-test-plan), private_key_jwt, poll and ping
    "fapi-ciba-id1-client-test": ciba(),
    "fapi-ciba-id1-client-refresh-token-test": ciba(),
    "fapi-ciba-id1-client-valid-aud-as-array-test": ciba(claims={"aud": lambda run: [run.client_id]}),
    "fapi-ciba-id1-client-no-scope-in-token-endpoint-response-test": ciba(token_scope=False, expires_in=False),
    "fapi-ciba-id1-client-respects-interval-test": ciba(interval=31),
    "fapi-ciba-id1-client-slow-down-test": ciba(answers=["slow_down"], interval=5),
    "fapi-ciba-id1-client-invalid-missing-authreqid-test": ciba(ack="missing_auth_req_id"),
    "fapi-ciba-id1-client-invalid-missing-expiresin-test": ciba(ack="missing_expires_in"),
    "fapi-ciba-id1-client-invalid-expired-id-token-hint-test": ciba(ack="expired_id_token_hint"),
    "fapi-ciba-id1-client-invalid-unknown-user-id-test": ciba(ack="unknown_user_id"),
    "fapi-ciba-id1-client-invalid-id-token-hint-test": ciba(ack="invalid_id_token_hint"),
    "fapi-ciba-id1-client-invalid-request-test": ciba(answers=[PENDING, "invalid_request"]),
    "fapi-ciba-id1-client-invalid-access-denied-test": ciba(answers=[PENDING, PENDING, "access_denied"]),
    "fapi-ciba-id1-client-invalid-expired-token-test": ciba(answers=[PENDING, PENDING, "expired_token"]),
    "fapi-ciba-id1-client-invalid-iss-test": ciba(claims={"iss": "https://other.example.com"}),
    "fapi-ciba-id1-client-invalid-aud-test": ciba(claims={"aud": "another-client"}),
    "fapi-ciba-id1-client-invalid-secondary-aud-test": ciba(
        claims={"aud": lambda run: [run.client_id, "another-client"], "azp": lambda run: run.client_id}
    ),
    "fapi-ciba-id1-client-invalid-signature-test": ciba(bad_signature=True),
    "fapi-ciba-id1-client-invalid-null-alg-test": ciba(algorithm="none", advertised="PS256"),
    "fapi-ciba-id1-client-invalid-alternate-alg-test": ciba(algorithm="RS256", advertised="PS256"),
    "fapi-ciba-id1-client-invalid-expired-exp-test": ciba(
        claims={"exp": lambda run: int(time.time()) - 3600, "iat": lambda run: int(time.time()) - 3900}
    ),
    "fapi-ciba-id1-client-invalid-iat-is-week-in-past-test": ciba(claims={"iat": lambda run: int(time.time()) - 7 * 86400}),
    "fapi-ciba-id1-client-invalid-missing-aud-test": ciba(drop=("aud",)),
    "fapi-ciba-id1-client-invalid-missing-exp-test": ciba(drop=("exp",)),
    "fapi-ciba-id1-client-invalid-missing-iss-test": ciba(drop=("iss",)),
    "fapi-ciba-id1-client-ping-with-invalid-bearer-token-test": ciba(ping="bad_bearer"),
}


def certificate_thumbprint(der):
    """`x5t#S256` (RFC 8705 §3.1): base64url of the SHA-256 of the certificate's DER."""
    return b64url(hashlib.sha256(der).digest())


def pem_to_der(pem):
    body = "".join(line for line in pem.strip().splitlines() if not line.startswith("-----"))
    return base64.b64decode(body)


class Provider(CheckLog):
    def __init__(
        self, name, client_jwk=None, ciba_mode="poll", notification_endpoint=None, variant=None,
        client_certificate=None, tls=None,
    ):
        super().__init__()
        self.mtls = variant == "mtls"
        self.mtls_listener, self.mtls_url, self.client_x5t = None, None, None
        if self.mtls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls["certificate"], tls["key"])
            context.load_verify_locations(tls["trust"])
            context.verify_mode = ssl.CERT_REQUIRED
            self.mtls_listener = Listener(tls=context)
            self.mtls_listener.handle = self.handle
            self.mtls_url = self.mtls_listener.url
            self.client_x5t = certificate_thumbprint(pem_to_der(client_certificate))
        self.client_jwk = client_jwk
        self.ciba_mode, self.notification_endpoint = ciba_mode, notification_endpoint
        self.ciba_requests = {}
        self.requests, self.assertion_ids, self.proof_ids = {}, set(), set()
        self.last_id_token = None
        self.id = secrets.token_hex(8)
        self.name, self.module = name, MODULES[name]
        self.listener = Listener()
        self.listener.handle = self.handle
        self.issuer = self.listener.url
        self.client_id, self.client_secret = f"client-{secrets.token_hex(4)}", secrets.token_urlsafe(16)
        self.generation = 0
        self.key = self.new_key()
        self.extra = [Key(self.module.algorithm, None) for _ in range(self.module.extra_keys)]
        self.codes, self.tokens = {}, {}

    def new_key(self):
        self.generation += 1
        if self.module.algorithm == "none":
            return None
        return Key(self.module.algorithm, f"key-{self.generation}" if self.module.kid else None)

    def rotate(self):
        with self.lock:
            self.key = self.new_key()

    # MARK: Endpoints

    def handle(self, request):
        routes = {
            ("GET", "/.well-known/openid-configuration"): self.discovery,
            ("GET", "/jwks"): self.jwks,
            ("GET", "/authorize"): self.authorize,
            ("POST", "/token"): self.token,
            ("GET", "/userinfo"): self.userinfo,
            ("POST", "/userinfo"): self.userinfo,
            ("POST", "/par"): self.par,
            ("GET", "/resource"): self.resource,
            ("GET", "/logout"): self.logout,
            ("GET", "/claims"): self.claims_endpoint,
            ("POST", "/backchannel"): self.backchannel,
        }
        route = routes.get((request.method, request.path))
        return route(request) if route else None

    def discovery(self, request):
        self.check("discovery-requested", "INFO", "discovery document")
        algorithm = self.module.advertised
        document = {
            "issuer": self.module.discovery_issuer or self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [algorithm],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid", "profile", "email"],
            "claims_supported": ["sub", "name", "email", "email_verified"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "end_session_endpoint": f"{self.issuer}/logout",
        }
        if self.mtls:
            document.update(
                token_endpoint_auth_methods_supported=["tls_client_auth"],
                tls_client_certificate_bound_access_tokens=True,
                mtls_endpoint_aliases={
                    "token_endpoint": f"{self.mtls_url}/token",
                    "pushed_authorization_request_endpoint": f"{self.mtls_url}/par",
                    "userinfo_endpoint": f"{self.mtls_url}/userinfo",
                },
            )
        if self.module.userinfo_signed is not None:
            document["userinfo_signing_alg_values_supported"] = [algorithm]
        if self.module.fapi:
            document.update(
                pushed_authorization_request_endpoint=f"{self.issuer}/par",
                require_pushed_authorization_requests=self.module.require_par,
                request_object_signing_alg_values_supported=self.module.request_object_algs,
                require_signed_request_object=self.module.jar,
                response_modes_supported=["query", "jwt", "query.jwt", "fragment.jwt", "form_post.jwt"],
                authorization_signing_alg_values_supported=[self.module.advertised],
                token_endpoint_auth_methods_supported=["private_key_jwt"],
                token_endpoint_auth_signing_alg_values_supported=["ES256", "PS256"],
                dpop_signing_alg_values_supported=["ES256", "PS256"],
                authorization_response_iss_parameter_supported=True,
            )
            if self.mtls:
                document.update(token_endpoint_auth_methods_supported=["tls_client_auth"])
                del document["token_endpoint_auth_signing_alg_values_supported"]
                del document["dpop_signing_alg_values_supported"]
        if self.module.ciba is not None:
            document.update(
                backchannel_authentication_endpoint=f"{self.issuer}/backchannel",
                backchannel_token_delivery_modes_supported=[self.ciba_mode],
                backchannel_authentication_request_signing_alg_values_supported=["ES256", "PS256"],
                backchannel_user_code_parameter_supported=False,
                grant_types_supported=["refresh_token", CIBA_GRANT],
                token_endpoint_auth_methods_supported=["private_key_jwt"],
                token_endpoint_auth_signing_alg_values_supported=["ES256", "PS256"],
            )
        return json_reply(200, document)

    def jwks(self, request):
        self.check("jwks-requested", "INFO", "JWKS fetched", generation=self.generation)
        keys = ([self.key.jwk] if self.key else []) + [k.jwk for k in self.extra]
        return json_reply(200, {"keys": keys})

    def presented_x5t(self, request):
        """The `x5t#S256` of the certificate presented on the TLS listener, or None."""
        return certificate_thumbprint(request.client_certificate) if request.client_certificate else None

    def authenticate_client(self, request, form, endpoint):
        """client_secret_basic, or for FAPI and FAPI-CIBA private_key_jwt with the issuer as audience;
        in the mTLS variant tls_client_auth (RFC 8705 §2.1): the registered certificate, presented on
        the TLS listener, `client_id` in the body and no other credential."""
        if self.mtls:
            presented = self.presented_x5t(request)
            others = [n for n in ("client_secret", "client_assertion") if n in form] + (
                ["Authorization"] if request.header("Authorization") else [])
            ok = presented == self.client_x5t and form.get("client_id") == self.client_id and not others
            self.check(
                "tls-client-auth", ok, f"tls_client_auth at {endpoint}",
                certificate="registered" if presented == self.client_x5t else ("none" if presented is None else "another"),
                other_credentials=others)
            return ok
        if not self.module.fapi and self.module.ciba is None:
            credentials = parse_basic(request.header("Authorization"))
            ok = credentials == (self.client_id, self.client_secret)
            self.check("client-secret-basic", ok, "client_secret_basic")
            return ok
        ok, why = False, "no client assertion"
        if form.get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            try:
                key = jwt.PyJWK(self.client_jwk).key
                claims = jwt.decode(
                    form.get("client_assertion", ""), key, algorithms=["ES256", "PS256"], audience=self.issuer, leeway=5
                )
                fresh = claims.get("jti") not in self.assertion_ids
                self.assertion_ids.add(claims.get("jti"))
                ok = claims.get("iss") == self.client_id and claims.get("sub") == self.client_id and fresh
                why = "iss, sub, a new jti" if ok else f"iss {claims.get('iss')}, sub {claims.get('sub')}, fresh {fresh}"
            except jwt.PyJWTError as error:
                why = str(error)
        self.check("private-key-jwt", ok, f"private_key_jwt at {endpoint}: {why}")
        return ok

    def request_object(self, parameters):
        """The parameters of a signed request object (RFC 9101), checked; `None` when refused."""
        token = parameters.get("request")
        if token is None:
            if self.module.jar:
                self.check("jar-request-object", False, "no request object although the server requires one")
            return None if self.module.jar else parameters
        try:
            header = jwt.get_unverified_header(token)
            key = jwt.PyJWK(self.client_jwk).key
            claims = jwt.decode(
                token, key, algorithms=self.module.request_object_algs, audience=self.issuer,
                options={"require": ["exp", "iss", "aud", "iat"]},
            )
        except jwt.PyJWTError as error:
            self.check("jar-request-object", False, f"the request object does not verify: {error}")
            return None
        ok = (
            header.get("typ") == "oauth-authz-req+jwt"
            and claims.get("iss") == self.client_id
            and claims.get("client_id") == self.client_id == parameters.get("client_id")
            and claims["exp"] - claims["iat"] <= 600
        )
        self.check("jar-request-object", ok, "typ, signature, iss, aud, client_id, a short exp")
        if not ok:
            return None
        return {
            name: value if isinstance(value, str) else json.dumps(value)
            for name, value in claims.items()
            if name not in ("iss", "aud", "iat", "nbf", "exp", "jti")
        }

    def par(self, request):
        form = request.form()
        if not self.authenticate_client(request, form, "par"):
            return json_reply(401, {"error": "invalid_client"})
        form = self.request_object(form)
        if form is None:
            return json_reply(400, {"error": "invalid_request_object"})
        self.check("par-used", True, "pushed authorization request")
        request_uri = f"urn:ietf:params:oauth:request_uri:{secrets.token_urlsafe(16)}"
        self.requests[request_uri] = form
        return json_reply(201, {"request_uri": request_uri, "expires_in": 60})

    def authorize(self, request):
        query = request.query
        if self.module.fapi and (self.module.require_par or "request_uri" in query):
            pushed = self.requests.pop(query.get("request_uri", ""), None)
            self.check("par-required", pushed is not None, "the authorization request went through PAR")
            if pushed is None:
                return json_reply(400, {"error": "invalid_request", "error_description": "PAR required"})
            query = {**pushed, "client_id": query.get("client_id")}
        elif self.module.jar:
            query = self.request_object(query)
            if query is None:
                return json_reply(400, {"error": "invalid_request_object"})
        scopes = (query.get("scope") or "").split()
        self.check("openid-scope", "openid" in scopes, "openid in the authentication request", scope=query.get("scope"))
        self.check("nonce-sent", bool(query.get("nonce")), "a nonce in the authentication request")
        self.check("pkce-s256", query.get("code_challenge_method") == "S256", "PKCE S256")
        self.check("client-id", query.get("client_id") == self.client_id, "the registered client")
        details = None
        if "authorization_details" in query:
            try:
                details = json.loads(query["authorization_details"])
                ok = isinstance(details, list) and all(isinstance(d, dict) and isinstance(d.get("type"), str) for d in details)
            except ValueError:
                ok = False
            self.check("rar-authorization-request", ok, "authorization_details: an array of typed objects")
        code = secrets.token_urlsafe(16)
        self.codes[code] = {
            "nonce": query.get("nonce"),
            "scope": scopes,
            "challenge": query.get("code_challenge"),
            "details": details,
        }
        target = urllib.parse.urlsplit(query.get("redirect_uri", ""))
        parameters = urllib.parse.parse_qsl(target.query) + [("code", code)]
        state = {"correct": query.get("state"), "wrong": "not-the-request-state", "omit": None}[self.module.response_state]
        if state is not None:
            parameters.append(("state", state))
        if self.module.fapi:
            iss = {"correct": self.issuer, "wrong": "https://other.example.com", "omit": None}[self.module.response_iss]
            if iss is not None:
                parameters.append(("iss", iss))
        mode = query.get("response_mode")
        if mode in ("jwt", "query.jwt", "fragment.jwt", "form_post.jwt"):
            self.check("jarm-requested", self.module.jarm is not None, "response_mode=jwt", mode=mode)
            signed = self.signed_response(parameters, query)
            if mode == "form_post.jwt":
                return form_post(urllib.parse.urlunsplit(target), [("response", signed)])
            if mode == "fragment.jwt":
                fragment = urllib.parse.urlencode([("response", signed)])
                return redirect(urllib.parse.urlunsplit(target._replace(fragment=fragment)))
            parameters = urllib.parse.parse_qsl(target.query) + [("response", signed)]
        return redirect(urllib.parse.urlunsplit(target._replace(query=urllib.parse.urlencode(parameters))))

    def signed_response(self, parameters, query):
        """The authorization response as a JARM JWT, spoiled as the module says."""
        spoil = self.module.jarm or {}
        claims = {name: value for name, value in parameters if name in ("code", "state", "iss")}
        claims.update(iss=self.issuer, aud=self.client_id, exp=int(time.time()) + 60)
        for name, value in spoil.get("claims", {}).items():
            claims[name] = value(self) if callable(value) else value
        for name in spoil.get("drop", ()):
            claims.pop(name, None)
        if spoil.get("none") or self.key is None:
            return jwt.encode(claims, None, algorithm="none")
        headers = {"kid": self.key.kid} if self.key.kid else {}
        token = jwt.encode(claims, self.key.private, algorithm=self.key.algorithm, headers=headers)
        if spoil.get("bad_signature"):
            token = spoiled_signature(token)
        return token

    def token(self, request):
        form = request.form()
        if not self.authenticate_client(request, form, "token"):
            return json_reply(401, {"error": "invalid_client"})
        grant = form.get("grant_type")
        refreshing = grant == "refresh_token"
        if grant == "authorization_code":
            entry = self.codes.get(form.get("code", ""))
            if entry is None:
                return json_reply(400, {"error": "invalid_grant"})
            verifier = form.get("code_verifier") or ""
            self.check("pkce-verifier", b64url(hashlib.sha256(verifier.encode()).digest()) == entry["challenge"], "code_verifier")
        elif grant == CIBA_GRANT and self.module.ciba is not None:
            answer = self.ciba_token_answer(form)
            if answer is not None:
                return answer
            entry = {"scope": ["openid"], "nonce": None}
        elif refreshing:
            entry = self.tokens.get(form.get("refresh_token", ""))
            if entry is None:
                return json_reply(400, {"error": "invalid_grant"})
            self.check("refresh", "INFO", "refresh")
            entry = {**entry, "nonce": None}
        else:
            return json_reply(400, {"error": "unsupported_grant_type"})
        jkt = None
        if self.module.fapi and not self.mtls:
            try:
                jkt, claims = verify_dpop_proof(request.header("DPoP"), "POST", f"{self.issuer}/token")
            except ProofError as error:
                self.check("dpop-token-request", False, str(error))
                return json_reply(400, {"error": "invalid_dpop_proof", "error_description": str(error)})
            if self.module.dpop_nonce and claims.get("nonce") != AS_NONCE:
                self.check("dpop-nonce-challenged", "INFO", "use_dpop_nonce at the token endpoint")
                return json_reply(400, {"error": "use_dpop_nonce"}, [("DPoP-Nonce", AS_NONCE)])
            self.check("dpop-token-request", True, "a DPoP proof at the token endpoint")
        if grant == "authorization_code":
            self.codes.pop(form.get("code", ""), None)
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        x5t = self.presented_x5t(request) if self.mtls else None
        if self.mtls:
            self.check("mtls-token-request", x5t is not None, "a certificate at the token endpoint")
        self.tokens[access] = {"scope": entry["scope"], "nonce": None, "jkt": jkt, "x5t": x5t}
        self.tokens[refresh] = {"scope": entry["scope"], "nonce": None, "jkt": jkt, "details": None}
        body = {
            "access_token": access,
            "token_type": self.module.token_type or ("DPoP" if jkt else "Bearer"),
            "refresh_token": refresh,
            "id_token": self.id_token(entry, access, refreshing),
            "scope": " ".join(entry["scope"]),
        }
        if not self.module.token_scope:
            del body["scope"]
        if self.module.expires_in:
            body["expires_in"] = 300
        if entry.get("details") is not None and grant == "authorization_code":
            sent = form.get("authorization_details")
            self.check("rar-token-request", sent is not None and json.loads(sent) == entry["details"], "the same authorization_details at the code exchange")
            granted = [{**detail, "identifier": f"grant-{index}"} for index, detail in enumerate(entry["details"])]
            body["authorization_details"] = granted if self.module.granted_details == "echo" else "not-an-array"
        return json_reply(200, body)

    def id_token(self, entry, access_token, refreshing=False):
        if self.module.rotate_before_signing and self.generation == 1:
            self.rotate()  # the client's JWKS from before no longer has the signing key
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": SUBJECT, "aud": self.client_id, "exp": now + 300, "iat": now}
        if entry.get("nonce"):
            claims["nonce"] = entry["nonce"]
        if self.key is not None:
            digest = hashlib.sha256(access_token.encode()).digest()
            claims["at_hash"] = b64url(digest[: len(digest) // 2])
        changes = self.module.refresh_claims if refreshing else self.module.claims
        for name, value in changes.items():
            claims[name] = value(self) if callable(value) else value
        for name in self.module.drop:
            claims.pop(name, None)
        if self.key is None:
            token = jwt.encode(claims, None, algorithm="none")
        else:
            headers = {"kid": self.key.kid} if self.key.kid else {}
            token = jwt.encode(claims, self.key.private, algorithm=self.key.algorithm, headers=headers)
        if self.module.bad_signature:
            token = spoiled_signature(token)
        self.last_id_token = token
        return token

    def bound_to_presented(self, entry, request, where):
        """In the mTLS variant: whether the token's certificate is the one presented now."""
        if not self.mtls or entry is None:
            return True
        ok = entry.get("x5t") is not None and entry.get("x5t") == self.presented_x5t(request)
        self.check(f"{where}-mtls-binding", ok, f"the token's certificate at the {where}")
        return ok

    def userinfo(self, request):
        scheme, _, token = (request.header("Authorization") or "").partition(" ")
        self.check("userinfo-bearer-header", scheme == "Bearer", "the access token in the Authorization header")
        entry = self.tokens.get(token) if scheme == "Bearer" else None
        if not self.bound_to_presented(entry, request, "userinfo"):
            entry = None
        if entry is None:
            return json_reply(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])
        claims = {"sub": self.module.userinfo_sub or SUBJECT}
        if "profile" in entry["scope"]:
            claims["name"] = USER["name"]
        if "email" in entry["scope"]:
            claims.update(email=USER["email"], email_verified=USER["email_verified"])
        if self.module.claims_source == "aggregated":
            claims["_claim_names"] = {"address": "src1", "phone_number": "src1"}
            claims["_claim_sources"] = {"src1": {"JWT": self.claims_jwt(AGGREGATED_CLAIMS, unsigned=True)}}
        elif self.module.claims_source == "distributed":
            claims["_claim_names"] = {"credit_score": "src1"}
            claims["_claim_sources"] = {
                "src1": {"endpoint": f"{self.issuer}/claims", "access_token": CLAIMS_ACCESS_TOKEN}
            }
        spoil = self.module.userinfo_signed
        if spoil is None:
            return json_reply(200, claims)
        self.check("userinfo-signed", "SUCCESS", "a signed UserInfo response")
        claims.update(iss=self.issuer, aud=self.client_id)
        claims.update({k: (v(self) if callable(v) else v) for k, v in spoil.get("claims", {}).items()})
        return Reply(200, self.sign(claims, spoil).encode(), [("Content-Type", "application/jwt")])

    def sign(self, claims, spoil):
        """`claims` as a JWT signed with the provider's key, spoiled as `spoil` says."""
        if spoil.get("none") or self.key is None:
            return jwt.encode(claims, None, algorithm="none")
        headers = {"kid": self.key.kid} if self.key.kid else {}
        token = jwt.encode(claims, self.key.private, algorithm=self.key.algorithm, headers=headers)
        return spoiled_signature(token) if spoil.get("bad_signature") else token

    def claims_jwt(self, payload, unsigned=False):
        """The JWT of an aggregated or distributed source: the suite's payload (a JSON text, sent
        byte for byte) with the module's spoils; unsigned (alg none) where the suite's is."""
        spoil = self.module.claims_source_spoil
        if spoil.get("claims"):
            extra = {k: (v(self) if callable(v) else v) for k, v in spoil["claims"].items()}
            payload = json.dumps({**json.loads(payload), **extra})
        if (unsigned and not spoil.get("signed")) or spoil.get("none") or self.key is None:
            return b64url(json.dumps({"alg": "none"}).encode()) + "." + b64url(payload.encode()) + "."
        header = {"alg": self.key.algorithm, "typ": "JWT", **({"kid": self.key.kid} if self.key.kid else {})}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(payload.encode())
        token = signing_input + "." + b64url(self.key.sign_bytes(signing_input.encode()))
        return spoiled_signature(token) if spoil.get("bad_signature") else token

    def claims_endpoint(self, request):
        """A distributed claims endpoint (Core §5.6.2): its own access token, a JWT back."""
        ok = request.header("Authorization") == f"Bearer {CLAIMS_ACCESS_TOKEN}"
        self.check("claims-endpoint-bearer", ok, "the source's access token as a bearer token")
        if not ok:
            return json_reply(401, {"error": "invalid_token"})
        return Reply(200, self.claims_jwt(DISTRIBUTED_CLAIMS).encode(), [("Content-Type", "application/jwt")])

    def resource(self, request):
        """A FAPI resource: a DPoP-bound token with its proof, and a nonce when the module asks."""
        scheme, _, token = (request.header("Authorization") or "").partition(" ")
        entry = self.tokens.get(token)
        if self.mtls:
            # RFC 8705 §3: a bearer token, accepted only with the certificate it is bound to.
            ok = scheme.lower() == "bearer" and entry is not None and self.bound_to_presented(entry, request, "resource")
            if not ok:
                return json_reply(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])
            return json_reply(200, {"sub": SUBJECT})
        if self.module.ciba is not None:
            # FAPI-CIBA without mutual TLS (not ported): a bearer token the provider issued.
            ok = scheme.lower() == "bearer" and entry is not None
            self.check("resource-bearer", ok, "a bearer token this provider issued")
            if not ok:
                return json_reply(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])
            return json_reply(200, {"sub": SUBJECT})
        challenge_scheme = "dpop" if self.module.lowercase_challenge else "DPoP"

        def refuse(error, description, nonce=False):
            header = f'{challenge_scheme} error="{error}", error_description="{description}", algs="ES256 PS256"'
            headers = [("WWW-Authenticate", header)] + ([("DPoP-Nonce", RS_NONCE)] if nonce else [])
            return json_reply(401, {"error": error}, headers)

        if entry is None or scheme.lower() != "dpop" or entry["jkt"] is None:
            self.check("resource-dpop-scheme", entry is None, f"scheme {scheme}")
            return refuse("invalid_token", "a DPoP-bound access token is required")
        # Accepted in any casing, as RFC 9110 asks of a server; a client writes RFC 9449's spelling
        # whatever token_type said (token-type-case-insensitivity sends "dpOp").
        self.check("resource-dpop-scheme-spelling", scheme == "DPoP", "the scheme spelled DPoP", scheme=scheme)
        try:
            jkt, claims = verify_dpop_proof(request.header("DPoP"), "GET", f"{self.issuer}/resource", access_token=token)
        except ProofError as error:
            self.check("resource-dpop-proof", False, str(error))
            return refuse("invalid_dpop_proof", str(error))
        fresh = claims["jti"] not in self.proof_ids
        self.proof_ids.add(claims["jti"])
        self.check("resource-dpop-proof", jkt == entry["jkt"] and fresh, "the token's key, a new jti")
        if self.module.dpop_nonce and claims.get("nonce") != RS_NONCE:
            self.check("resource-nonce-challenged", "INFO", "use_dpop_nonce at the resource")
            return refuse("use_dpop_nonce", "nonce required", nonce=True)
        return json_reply(200, {"sub": SUBJECT})

    # MARK: CIBA

    def backchannel(self, request):
        """The backchannel authentication endpoint (CIBA Core §7): private_key_jwt, a signed
        authentication request (§7.1.1) whose claims are the parameters, the module's answer."""
        form = request.form()
        if not self.authenticate_client(request, form, "backchannel"):
            return json_reply(401, {"error": "invalid_client"})
        outside = set(form) - {"request", "client_id", "client_assertion", "client_assertion_type"}
        self.check("ciba-parameters-inside-request", not outside, "no parameter outside the signed request",
                   outside=sorted(outside))
        parameters = self.ciba_request_object(form.get("request"))
        if parameters is None:
            return json_reply(400, {"error": "invalid_request", "error_description": "a signed request is required"})
        scopes = str(parameters.get("scope", "")).split()
        self.check("ciba-openid-scope", "openid" in scopes, "openid in the scope", scope=parameters.get("scope"))
        hints = [h for h in ("login_hint", "id_token_hint", "login_hint_token") if h in parameters]
        self.check("ciba-one-hint", len(hints) == 1, "exactly one hint", hints=hints)
        if "requested_expiry" in parameters:
            self.check("ciba-requested-expiry", isinstance(parameters["requested_expiry"], int),
                       "requested_expiry a number in the signed request")
        notification = parameters.get("client_notification_token")
        if self.ciba_mode == "ping":
            # CIBA §7.1: at least 128 bits of entropy (the suite estimates it from the length).
            ok = isinstance(notification, str) and len(notification) >= 22
            self.check("ciba-notification-token", ok, "a client_notification_token of 128 bits or more")
        settings = self.module.ciba
        ack = settings["ack"]
        if ack in ("expired_id_token_hint", "unknown_user_id", "invalid_id_token_hint"):
            self.check("ciba-backchannel-error", "INFO", f"answered {ack}")
            return json_reply(400, {"error": ack, "error_description": f"The module answers {ack}."})
        auth_req_id = secrets.token_urlsafe(24)
        now = time.time()
        with self.lock:
            self.ciba_requests[auth_req_id] = {
                "issued": now, "last": now, "interval": settings["interval"], "answers": list(settings["answers"]),
                "ended": False, "scope": scopes, "notification": notification,
            }
        body = {"auth_req_id": auth_req_id, "expires_in": 120, "interval": settings["interval"]}
        if ack == "missing_auth_req_id":
            del body["auth_req_id"]
        if ack == "missing_expires_in":
            del body["expires_in"]
        if self.ciba_mode == "ping" and "auth_req_id" in body:
            threading.Timer(1.0, self.ping, args=(auth_req_id,)).start()
        return json_reply(200, body)

    def ciba_request_object(self, token):
        """The claims of a signed authentication request, checked (CIBA §7.1.1, FAPI-CIBA §5.2.2)."""
        if not token:
            self.check("ciba-signed-request", False, "no signed authentication request")
            return None
        try:
            key = jwt.PyJWK(self.client_jwk).key
            claims = jwt.decode(
                token, key, algorithms=["ES256", "PS256"], audience=self.issuer, leeway=5,
                options={"require": ["exp", "iss", "aud", "iat", "nbf", "jti"]},
            )
        except jwt.PyJWTError as error:
            self.check("ciba-signed-request", False, f"the signed request does not verify: {error}")
            return None
        ok = claims.get("iss") == self.client_id and claims["exp"] - claims["nbf"] <= 3600
        self.check("ciba-signed-request", ok, "signature, iss, aud, iat, nbf, jti, exp at most 60 minutes after nbf")
        return {k: v for k, v in claims.items() if k not in ("iss", "aud", "iat", "nbf", "exp", "jti")} if ok else None

    def ping(self, auth_req_id):
        """Notifies the client's endpoint (CIBA §10.2), with a bad bearer when the module says."""
        with self.lock:
            entry = self.ciba_requests[auth_req_id]
        bad = self.module.ciba["ping"] == "bad_bearer"
        bearer = ("not-" + entry["notification"]) if bad else entry["notification"]
        with self.lock:
            entry["pinged"] = time.time()  # before the ping: the client's token request may come at once
        ping_request = urllib.request.Request(
            self.notification_endpoint or "http://127.0.0.1:9/", data=json.dumps({"auth_req_id": auth_req_id}).encode(),
            method="POST", headers={"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(ping_request, timeout=10) as response:
                status = response.status
        except urllib.error.HTTPError as error:
            status = error.code
        except OSError:
            status = 0
        if bad:
            self.check("ciba-ping-refused", status == 401, "the client refused a ping with a bad bearer", http_status=status)
        else:
            self.check("ciba-ping-accepted", 200 <= status < 300, "the client accepted the ping", http_status=status)

    def ciba_token_answer(self, form):
        """The module's answer to a CIBA token request, or `None` for the tokens."""
        now = time.time()
        with self.lock:
            entry = self.ciba_requests.get(form.get("auth_req_id", ""))
            if entry is None:
                self.check("ciba-known-auth-req-id", False, "an auth_req_id this provider issued")
                return json_reply(400, {"error": "invalid_grant"})
            self.check("ciba-no-request-after-end", not entry["ended"], "no token request after the request ended")
            if entry["ended"]:
                return json_reply(400, {"error": "invalid_grant"})
            if self.ciba_mode == "ping":
                self.check("ciba-after-ping", "pinged" in entry, "the token request follows the ping")
            else:
                gap = now - entry["last"]
                self.check("ciba-interval", gap >= entry["interval"] - 0.2, "polled no sooner than the interval",
                           gap=round(gap, 3), interval=entry["interval"])
            entry["last"] = now
            if entry["answers"]:
                error = entry["answers"].pop(0)
                if error == "slow_down":
                    entry["interval"] += 5
                if error not in (PENDING, "slow_down"):
                    entry["ended"] = True
                self.check("ciba-token-answer", "INFO", error)
                return json_reply(400, {"error": error, "error_description": f"The module answers {error}."})
            entry["ended"] = True
            self.check("ciba-token-answer", "INFO", "tokens")
        return None

    def logout(self, request):
        """RP-Initiated Logout 1.0: the ID token as hint, then back to the client with its state."""
        query = request.query
        self.check("logout-id-token-hint", query.get("id_token_hint") == self.last_id_token, "the last ID token as hint")
        self.check("logout-client-id", query.get("client_id") == self.client_id, "client_id")
        target = query.get("post_logout_redirect_uri")
        if not target:
            self.check("logout-redirect", False, "no post_logout_redirect_uri")
            return json_reply(200, {"logged_out": True})
        parts = urllib.parse.urlsplit(target)
        parameters = urllib.parse.parse_qsl(parts.query)
        state = {"correct": query.get("state"), "wrong": "not-the-logout-state", "omit": None}[self.module.logout_state]
        if state is not None:
            parameters.append(("state", state))
        return redirect(urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(parameters))))


# MARK: Control


def start(body):
    name = body.get("module")
    if name not in MODULES:
        return json_reply(404, {"error": "unknown module", "modules": sorted(MODULES)})
    if body.get("variant") == "mtls" and not (body.get("client_certificate") and body.get("tls")):
        return json_reply(400, {"error": "the mtls variant needs client_certificate and tls"})
    provider = Provider(
        name, body.get("client_jwk"), body.get("ciba_mode", "poll"), body.get("notification_endpoint"),
        body.get("variant"), body.get("client_certificate"), body.get("tls"))
    return provider, {
        "issuer": provider.issuer, "client_id": provider.client_id, "client_secret": provider.client_secret,
        "mtls_url": provider.mtls_url,
    }


def rotate(provider, request):
    provider.rotate()
    return json_reply(200, {"generation": provider.generation})


def checks(provider, request):
    with provider.lock:
        checks = list(provider.checks)
    if provider.mtls_listener is not None and provider.mtls_listener.handshake_failures:
        failures = provider.mtls_listener.handshake_failures
        checks.append({"id": "tls-handshake-refused", "status": "INFO",
                       "description": f"{failures} TLS handshakes refused", "details": {"count": failures}})
    return json_reply(200, checks)


if __name__ == "__main__":
    serve_control(
        int(sys.argv[1]) if len(sys.argv) > 1 else 0, MODULES, start, {"rotate": rotate, "checks": checks},
        "conformance provider",
    )
