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
- `POST /runs` with `{"module": NAME}` starts a provider on a new port with that module's
  mutation and answers `{"id", "issuer", "client_id", "client_secret"}`.
- `POST /runs/ID/rotate` rotates the signing key (the next ID token is signed with a new key,
  which the JWKS then publishes instead of the old one).
- `GET /runs/ID/checks` answers the checks: `[{"id", "status", "description", "details"}]`.
- `GET /runs` lists the modules; `GET /test/health` answers when the server is up.

Usage: provider.py PORT
"""

import hashlib
import os
import re
import secrets
import sys
import threading
import time
import urllib.parse

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))
from loopback import Listener, b64url, json_reply, parse_basic, redirect  # noqa: E402

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
        self.jwk.update(use="sig", alg=algorithm)
        if kid is not None:
            self.jwk["kid"] = kid


class Module:
    """What a module changes in the good provider."""

    def __init__(
        self,
        algorithm="RS256",
        kid=True,
        extra_keys=0,
        claims=None,
        drop=(),
        bad_signature=False,
        userinfo_sub=None,
        discovery_issuer=None,
        rotate_before_signing=False,
    ):
        self.algorithm, self.kid, self.extra_keys = algorithm, kid, extra_keys
        self.claims, self.drop, self.bad_signature = claims or {}, drop, bad_signature
        self.userinfo_sub, self.discovery_issuer = userinfo_sub, discovery_issuer
        self.rotate_before_signing = rotate_before_signing


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
    # RP Config
    "oidcc-client-test-discovery-openid-config": Module(),
    "oidcc-client-test-discovery-jwks-uri-keys": Module(algorithm="ES256"),
    "oidcc-client-test-discovery-issuer-mismatch": Module(discovery_issuer="https://issuer.example.com"),
    "oidcc-client-test-signing-key-rotation-just-before-signing": Module(rotate_before_signing=True),
    "oidcc-client-test-signing-key-rotation": Module(),
    # Key types beyond the plans' RS256
    "oidcc-client-test-idtoken-sig-es256": Module(algorithm="ES256"),
    "oidcc-client-test-idtoken-sig-ps256": Module(algorithm="PS256"),
}


class Provider:
    def __init__(self, name):
        self.id = secrets.token_hex(8)
        self.name, self.module = name, MODULES[name]
        self.listener = Listener()
        self.listener.handle = self.handle
        self.issuer = self.listener.url
        self.client_id, self.client_secret = f"client-{secrets.token_hex(4)}", secrets.token_urlsafe(16)
        self.checks, self.lock = [], threading.RLock()
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

    def check(self, check_id, status, description="", **details):
        if status is True or status is False:
            status = "SUCCESS" if status else "FAILURE"
        with self.lock:
            self.checks.append({"id": check_id, "status": status, "description": description, "details": details})

    # MARK: Endpoints

    def handle(self, request):
        routes = {
            ("GET", "/.well-known/openid-configuration"): self.discovery,
            ("GET", "/jwks"): self.jwks,
            ("GET", "/authorize"): self.authorize,
            ("POST", "/token"): self.token,
            ("GET", "/userinfo"): self.userinfo,
            ("POST", "/userinfo"): self.userinfo,
        }
        route = routes.get((request.method, request.path))
        return route(request) if route else None

    def discovery(self, request):
        self.check("discovery-requested", "INFO", "discovery document")
        algorithm = self.module.algorithm
        return json_reply(
            200,
            {
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
            },
        )

    def jwks(self, request):
        self.check("jwks-requested", "INFO", "JWKS fetched", generation=self.generation)
        keys = ([self.key.jwk] if self.key else []) + [k.jwk for k in self.extra]
        return json_reply(200, {"keys": keys})

    def authorize(self, request):
        query = request.query
        scopes = (query.get("scope") or "").split()
        self.check("openid-scope", "openid" in scopes, "openid in the authentication request", scope=query.get("scope"))
        self.check("nonce-sent", bool(query.get("nonce")), "a nonce in the authentication request")
        self.check("pkce-s256", query.get("code_challenge_method") == "S256", "PKCE S256")
        self.check("client-id", query.get("client_id") == self.client_id, "the registered client")
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"nonce": query.get("nonce"), "scope": scopes, "challenge": query.get("code_challenge")}
        target = urllib.parse.urlsplit(query.get("redirect_uri", ""))
        parameters = urllib.parse.parse_qsl(target.query) + [("code", code)]
        if "state" in query:
            parameters.append(("state", query["state"]))
        return redirect(urllib.parse.urlunsplit(target._replace(query=urllib.parse.urlencode(parameters))))

    def token(self, request):
        credentials = parse_basic(request.header("Authorization"))
        authenticated = credentials == (self.client_id, self.client_secret)
        self.check("client-secret-basic", authenticated, "client_secret_basic at the token endpoint")
        if not authenticated:
            return json_reply(401, {"error": "invalid_client"})
        form = request.form()
        grant = form.get("grant_type")
        if grant == "authorization_code":
            entry = self.codes.pop(form.get("code", ""), None)
            if entry is None:
                return json_reply(400, {"error": "invalid_grant"})
            verifier = form.get("code_verifier") or ""
            self.check("pkce-verifier", b64url(hashlib.sha256(verifier.encode()).digest()) == entry["challenge"], "code_verifier")
        elif grant == "refresh_token":
            entry = self.tokens.get(form.get("refresh_token", ""))
            if entry is None:
                return json_reply(400, {"error": "invalid_grant"})
            entry = {**entry, "nonce": None}
        else:
            return json_reply(400, {"error": "unsupported_grant_type"})
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.tokens[access] = self.tokens[refresh] = {"scope": entry["scope"], "nonce": None}
        body = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 300,
            "refresh_token": refresh,
            "id_token": self.id_token(entry, access),
            "scope": " ".join(entry["scope"]),
        }
        return json_reply(200, body)

    def id_token(self, entry, access_token):
        if self.module.rotate_before_signing and self.generation == 1:
            self.rotate()  # the client's JWKS from before no longer has the signing key
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": SUBJECT, "aud": self.client_id, "exp": now + 300, "iat": now}
        if entry.get("nonce"):
            claims["nonce"] = entry["nonce"]
        if self.key is not None:
            digest = hashlib.sha256(access_token.encode()).digest()
            claims["at_hash"] = b64url(digest[: len(digest) // 2])
        for name, value in self.module.claims.items():
            claims[name] = value(self) if callable(value) else value
        for name in self.module.drop:
            claims.pop(name, None)
        if self.key is None:
            return jwt.encode(claims, None, algorithm="none")
        headers = {"kid": self.key.kid} if self.key.kid else {}
        token = jwt.encode(claims, self.key.private, algorithm=self.key.algorithm, headers=headers)
        if self.module.bad_signature:
            head, payload, signature = token.split(".")
            flipped = bytearray(signature.encode())
            flipped[5] = ord("A") if flipped[5] != ord("A") else ord("B")
            token = ".".join([head, payload, flipped.decode()])
        return token

    def userinfo(self, request):
        scheme, _, token = (request.header("Authorization") or "").partition(" ")
        self.check("userinfo-bearer-header", scheme == "Bearer", "the access token in the Authorization header")
        entry = self.tokens.get(token) if scheme == "Bearer" else None
        if entry is None:
            return json_reply(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])
        claims = {"sub": self.module.userinfo_sub or SUBJECT}
        if "profile" in entry["scope"]:
            claims["name"] = USER["name"]
        if "email" in entry["scope"]:
            claims.update(email=USER["email"], email_verified=USER["email_verified"])
        return json_reply(200, claims)


# MARK: Control

RUNS = {}


def control(request):
    if request.path == "/test/health":
        return json_reply(200, {"status": "ok"})
    if request.path == "/runs" and request.method == "GET":
        return json_reply(200, sorted(MODULES))
    if request.path == "/runs" and request.method == "POST":
        name = request.json().get("module")
        if name not in MODULES:
            return json_reply(404, {"error": "unknown module", "modules": sorted(MODULES)})
        provider = Provider(name)
        RUNS[provider.id] = provider
        return json_reply(
            201,
            {"id": provider.id, "issuer": provider.issuer, "client_id": provider.client_id, "client_secret": provider.client_secret},
        )
    match = re.fullmatch(r"/runs/([0-9a-f]+)/(checks|rotate)", request.path)
    if match and match.group(1) in RUNS:
        provider = RUNS[match.group(1)]
        if match.group(2) == "rotate" and request.method == "POST":
            provider.rotate()
            return json_reply(200, {"generation": provider.generation})
        with provider.lock:
            return json_reply(200, list(provider.checks))
    return None


def main():
    listener = Listener(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    listener.handle = control
    print(f"conformance provider on {listener.url}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
