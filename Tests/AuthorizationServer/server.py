"""A real OAuth 2.0 authorization server for the end-to-end tests, on Authlib and Flask.

All protocol logic is Authlib's; this script supplies in-memory storage, clients, one user and
routes, and narrows a few Authlib defaults (the README's "Test servers"): refresh tokens
rotate, public clients must use PKCE with S256, device codes are single-use, and fast polling gets
`slow_down`. A client created with `reuse_detection` behaves as Auth0, Okta and Keycloak do: a
rotated-out refresh token presented again revokes every token of its grant (its family).

Test-only routes under /test/ create isolated clients and report what the server saw, so tests
that run in parallel never share state.

OpenID Connect: Authlib's OpenIDCode extension signs ID tokens with RS256 or ES256 (per client,
`id_token_signed_response_alg`), with keys published at /jwks that /test/rotate-keys replaces;
/.well-known/openid-configuration, /userinfo and an RP-initiated logout endpoint (/logout) go with
it.

Protected resources (RFC 9728, RFC 8707): /rs/<tag> answers a request without a valid token for
it with a 401 whose WWW-Authenticate names its metadata, serves that metadata at
/.well-known/oauth-protected-resource/rs/<tag>, and accepts only tokens issued for exactly
<issuer>/rs/<tag> (the `resource` of the authorization and token requests). /register is an
RFC 7591 registration endpoint (open, no initial access token); /test/stats/registered:<name>
counts the registrations of a client_name. Step-up: /rs/<tag>/admin… answers 403
insufficient_scope (scope admin) to a token without that scope, /rs/<tag>/mfa… 401
insufficient_user_authentication (RFC 9470: acr_values urn:test:mfa, max_age 60) to a token
whose sign-in did not ask for that acr, and /rs/<tag>/unreachable… refuses every token.

Client ID Metadata Documents: a client id that is an https URL is fetched and checked (its
client_id must be that URL; a public client; loopback redirect URIs), as
client_id_metadata_document_supported says. The documents are served over TLS (a self-signed
certificate made at start) by the same app on a second port: POST /test/cimd {name, document}
publishes one at GET /test/cimd-base + /cimd/<name>.json.

Mutual TLS (RFC 8705): mtls.py, behind a TLS terminator, when AUTHREQ_MTLS_BASE names one.

Usage: python server.py PORT [--access-token-lifetime SECONDS]
"""

import argparse
import re
import secrets
import threading
import time
from collections import defaultdict

from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.oauth2.rfc6749 import ClientMixin, TokenMixin, AuthorizationCodeMixin, grants
from authlib.oauth2.rfc6749.errors import InvalidClientError
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7523 import JWTBearerGrant as BaseJWTBearerGrant
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint, DeviceCodeGrant, DeviceCredentialDict
from authlib.oauth2.rfc9207 import IssuerParameter
from authlib.oidc.core.grants import OpenIDCode
from flask import Flask, jsonify, redirect, request
from joserfc import jwt as jose_jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

import mtls

LOCK = threading.RLock()
CLIENTS = {}  # client_id -> Client
TOKENS = {}  # access_token -> Token
REFRESH = {}  # refresh_token -> Token
CODES = {}  # code -> AuthorizationCode
DEVICE = {}  # device_code -> dict
USER_GRANTS = {}  # user_code -> approved (bool)
LAST_POLL = {}  # device_code -> time of last poll
STATS = defaultdict(lambda: defaultdict(int))  # client_id -> grant_type -> count
USER = {"id": "1", "name": "Ada Lovelace", "email": "ada@example.com"}
SIGNING_KEYS = {}  # alg -> private key (joserfc), replaced by /test/rotate-keys
RETIRED_KEYS = []  # public JWKs still published after a rotation
ALL_GRANTS = [
    "client_credentials",
    "authorization_code",
    "refresh_token",
    "urn:ietf:params:oauth:grant-type:device_code",
    "urn:ietf:params:oauth:grant-type:jwt-bearer",
]


class Client(ClientMixin):
    jwks = None  # public keys of a private_key_jwt client
    enterprise_issuer = None  # the identity provider whose ID-JAGs are grants for this client
    workload_key = None  # the platform key of a workload's JWT bearer grant

    def __init__(
        self,
        client_id,
        secret,
        auth_methods,
        device_code_lifetime=600,
        device_interval=1,
        reuse_detection=False,
        access_token_lifetime=None,
        id_token_alg="RS256",
    ):
        self.client_id = client_id
        self.client_secret = secret
        self.auth_methods = auth_methods
        self.device_code_lifetime = device_code_lifetime
        self.device_interval = device_interval
        self.reuse_detection = reuse_detection
        self.access_token_lifetime = access_token_lifetime
        self.id_token_signed_response_alg = id_token_alg

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return None

    def get_allowed_scope(self, scope):
        return scope or ""

    def check_redirect_uri(self, redirect_uri):
        # RFC 8252 §7.3: a loopback redirect URI matches on any port.
        from urllib.parse import urlsplit

        parts = urlsplit(redirect_uri)
        return parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.path == "/callback"

    def check_client_secret(self, client_secret):
        return self.client_secret is not None and secrets.compare_digest(
            self.client_secret.encode(), (client_secret or "").encode()
        )

    def check_endpoint_auth_method(self, method, endpoint):
        return method in self.auth_methods

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in ALL_GRANTS


class Token(TokenMixin):
    def __init__(self, client_id, data, lifetime):
        self.client_id = client_id
        self.access_token = data["access_token"]
        self.refresh_token = data.get("refresh_token")
        self.scope = data.get("scope", "")
        self.issued_at = time.time()
        self.expires_in = lifetime
        self.access_revoked = False
        self.refresh_revoked = False
        self.family = secrets.token_hex(8)  # one grant: the token and every token refreshed from it
        self.resources = []  # RFC 8707 resources the token is for (its audience)
        self.grant_resources = []  # the resources of its grant (the authorization request's)
        self.acr, self.auth_time = None, None  # of the sign-in behind the token (RFC 9470)

    def check_client(self, client):
        return client.get_client_id() == self.client_id

    def get_scope(self):
        return self.scope

    def get_expires_in(self):
        return self.expires_in

    def is_expired(self):
        return time.time() >= self.issued_at + self.expires_in

    def is_revoked(self):
        return self.access_revoked

    def get_user(self):
        return USER

    def get_client(self):
        return CLIENTS.get(self.client_id)


class AuthorizationCode(AuthorizationCodeMixin):
    def __init__(self, code, client_id, redirect_uri, scope, challenge, method, nonce=None, resources=()):
        self.code, self.client_id, self.redirect_uri, self.scope = code, client_id, redirect_uri, scope
        self.resources = list(resources)
        # RFC 9470: the test user meets the first acr asked for, and signs in now.
        self.acr = (request.args.get("acr_values") or "").split(" ")[0] or None
        self.code_challenge, self.code_challenge_method = challenge, method
        self.nonce = nonce
        self.created = time.time()

    def get_nonce(self):
        return self.nonce

    def get_auth_time(self):
        return int(self.created)

    def get_acr(self):
        return self.acr

    def get_amr(self):
        return None

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope


def token_expires_in(client, grant_type):
    # A resource named .../rs/<name>-ttl<seconds> asks for tokens of that lifetime: tests whose
    # processes must outlast a token on a loaded machine give it the margin they need.
    for resource in request.form.getlist("resource"):
        match = re.search(r"-ttl(\d+)$", resource)
        if match:
            return int(match.group(1))
    return getattr(client, "access_token_lifetime", None) or ARGS.access_token_lifetime


def save_token(token, req):
    with LOCK:
        record = Token(req.client.get_client_id(), token, token.get("expires_in", ARGS.access_token_lifetime))
        previous = getattr(req, "refresh_token", None)
        if isinstance(previous, Token):
            record.family = previous.family
        asked = request.form.getlist("resource")
        code = getattr(req, "authorization_code", None)
        if isinstance(code, AuthorizationCode):
            record.acr, record.auth_time = code.acr, code.created
            record.grant_resources = code.resources or asked
        elif isinstance(previous, Token):
            record.acr, record.auth_time = previous.acr, previous.auth_time
            record.grant_resources = previous.grant_resources
        else:
            record.grant_resources = asked
        record.resources = asked or record.grant_resources
        record.x5t = None
        if MTLS is not None:
            MTLS.bind(record)
        TOKENS[record.access_token] = record
        if record.refresh_token:
            REFRESH[record.refresh_token] = record


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def save_authorization_code(self, code, req):
        with LOCK:
            CODES[code] = AuthorizationCode(
                code,
                req.client.get_client_id(),
                req.payload.redirect_uri,
                req.payload.scope,
                req.payload.data.get("code_challenge"),
                req.payload.data.get("code_challenge_method"),
                req.payload.data.get("nonce"),
                request.args.getlist("resource"),
            )

    def query_authorization_code(self, code, client):
        with LOCK:
            item = CODES.get(code)
        if item and item.client_id == client.get_client_id() and time.time() - item.created < 300:
            return item
        return None

    def delete_authorization_code(self, authorization_code):
        with LOCK:
            CODES.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code):
        return USER


class S256CodeChallenge(CodeChallenge):
    """PKCE narrowed: S256 only, and required of public clients (Authlib accepts plain and none)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant, redirect_uri):
        from authlib.oauth2.rfc6749.errors import InvalidRequestError

        data = grant.request.payload.data
        if grant.request.client.client_secret is None and not data.get("code_challenge"):
            raise InvalidRequestError("Public clients must send a code_challenge (S256).")
        if data.get("code_challenge") and data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("Only code_challenge_method=S256 is supported.")
        return super().validate_code_challenge(grant, redirect_uri)

    def get_authorization_code_challenge(self, authorization_code):
        return authorization_code.code_challenge

    def get_authorization_code_challenge_method(self, authorization_code):
        return authorization_code.code_challenge_method


def make_signing_keys():
    """A new RS256 and ES256 key, each with a kid of its own."""
    suffix = secrets.token_hex(4)
    return {
        "RS256": RSAKey.generate_key(2048, parameters={"kid": f"rsa-{suffix}", "use": "sig", "alg": "RS256"}),
        "ES256": ECKey.generate_key("P-256", parameters={"kid": f"ec-{suffix}", "use": "sig", "alg": "ES256"}),
    }


class TestOpenIDCode(OpenIDCode):
    """ID tokens for the code flow: signed with the client's algorithm, nonce required."""

    def resolve_client_private_key(self, client):
        with LOCK:
            return SIGNING_KEYS[client.id_token_signed_response_alg]

    def get_client_algorithm(self, client):
        return client.id_token_signed_response_alg

    def get_client_claims(self, client):
        return {"iss": ISSUER, "aud": [client.get_client_id()], "exp": int(time.time()) + 300}

    def get_encode_header(self, client):
        alg = client.id_token_signed_response_alg
        with LOCK:
            return {"alg": alg, "kid": SIGNING_KEYS[alg].kid}

    def exists_nonce(self, nonce, req):
        with LOCK:
            return any(code.nonce == nonce for code in CODES.values())

    def generate_user_info(self, user, scope):
        info = {"sub": user["id"], "name": user["name"]}
        if "email" in scope.split():
            info["email"] = user["email"]
        return info


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation

    def authenticate_refresh_token(self, refresh_token):
        with LOCK:
            token = REFRESH.get(refresh_token)
            if token and token.refresh_revoked and getattr(CLIENTS.get(token.client_id), "reuse_detection", False):
                # Reuse of a rotated-out refresh token: the grant may be stolen; end all of it.
                for other in list(TOKENS.values()) + list(REFRESH.values()):
                    if other.family == token.family:
                        other.access_revoked = True
                        other.refresh_revoked = True
                STATS[token.client_id]["reuse_detected"] += 1
        if token and not token.refresh_revoked:
            return token
        return None

    def authenticate_user(self, credential):
        return USER

    def revoke_old_credential(self, credential):
        with LOCK:
            credential.refresh_revoked = True
            # The access token that came with the old refresh token ends with it, unless the grant
            # is for several resources: that token is for another resource, still in use (as
            # with multi-resource refresh tokens elsewhere, e.g. Auth0's).
            if len(credential.grant_resources) <= 1:
                credential.access_revoked = True


class ClientCredentialsGrant(grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


class PrivateKeyJWTAuthentication(JWTBearerClientAssertion):
    """RFC 7523 §2.2 client authentication (`private_key_jwt`), Authlib's, held to RFC 10070
    (November 2026, updating RFC 7523): the assertion is verified with the public keys the test
    registered for the client (POST /test/clients with `jwks`), its `iss` and `sub` the client id,
    its `aud` this server's issuer identifier alone (a single string; the token endpoint's URL is
    refused), its `typ` header `client-authentication+jwt`, and each `jti` accepted once. Authlib
    checks the audience against `get_audiences`; the single value and the type are this file's."""

    CLIENT_AUTH_METHOD = "private_key_jwt"
    SEEN = set()

    def get_audiences(self):
        return [ISSUER]

    def process_assertion_claims(self, assertion, resolve_key):
        header = jwt_part(assertion, 0)
        if header.get("typ") != "client-authentication+jwt":
            raise InvalidClientError(description="RFC 10070: the assertion's typ must be client-authentication+jwt.")
        if jwt_part(assertion, 1).get("aud") != ISSUER:
            raise InvalidClientError(description="RFC 10070: the assertion's aud must be the issuer, as a single string.")
        return super().process_assertion_claims(assertion, resolve_key)

    def resolve_client_public_key(self, client):
        return KeySet.import_key_set(client.jwks)

    def validate_jti(self, claims, jti):
        with LOCK:
            key = (claims["sub"], jti)
            if key in self.SEEN:
                return False
            self.SEEN.add(key)
            return True


# RFC 7523 §2.1: a workload's token, issued by a platform the test registered for a client
# (POST /test/clients with workload_issuer and workload_jwk), is a grant for that client.
WORKLOAD_ISSUERS = {}  # the platform's issuer -> client_id


class JWTBearerGrant(BaseJWTBearerGrant):
    def resolve_issuer_client(self, issuer):
        with LOCK:
            client_id = WORKLOAD_ISSUERS.get(issuer)
            return CLIENTS.get(client_id) if client_id else None

    def resolve_client_public_key(self, client):
        return client.workload_key

    def authenticate_user(self, subject):
        return subject

    def has_granted_permission(self, client, user):
        # The test reads which workload token each grant presented.
        with LOCK:
            STATS[client.client_id][f"jwt-bearer sub:{user}"] += 1
        return True

    def get_audiences(self):
        return [ISSUER + "/token", ISSUER]


# Enterprise-Managed Authorization (MCP's SEP-990; the IETF draft "Identity Assertion JWT
# Authorization Grant"): an ID-JAG that an enterprise identity provider issued for one of this
# server's clients is a JWT bearer grant for that client. Authlib has no ID-JAG support, so this is
# the project's own code on Authlib's grant classes. The test trusts a provider for a client with
# POST /test/clients {"enterprise_issuer", "enterprise_jwks_uri"}.
ENTERPRISE_ISSUERS = {}  # the provider's issuer -> its JWKS URL
ID_JAG_TYPE = "oauth-id-jag+jwt"


def jwt_part(token, index):
    """Part `index` of a compact JWT (0 the header, 1 the claims) as a dict, not verified; {} when
    it is none."""
    import base64
    import json

    try:
        part = token.split(".")[index]
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        return value if isinstance(value, dict) else {}
    except Exception:
        return {}


class IDJAGGrant(grants.BaseGrant, grants.TokenEndpointMixin):
    """The JWT bearer grant (RFC 7523 §2.1) for an assertion typed `oauth-id-jag+jwt`, checked as
    SEP-990 asks: the client authenticates; the ID-JAG is signed by a provider trusted for that
    client (its published keys), its `aud` is this server, its `client_id` is the authenticated
    client, its `resource` is the request's `resource`, and it has not expired. A refused ID-JAG
    is `invalid_grant`."""

    GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]

    @classmethod
    def check_token_endpoint(cls, request):
        return (
            request.payload.grant_type == cls.GRANT_TYPE
            and jwt_part(request.form.get("assertion", ""), 0).get("typ") == ID_JAG_TYPE
        )

    def refuse(self, client, reason):
        from authlib.oauth2.rfc6749 import InvalidGrantError

        with LOCK:
            STATS[client.client_id]["id-jag refused"] += 1
            STATS[client.client_id][f"id-jag refused:{reason}"] += 1
        raise InvalidGrantError(description=f"The ID-JAG was refused: {reason}")

    def validate_token_request(self):
        import json
        import urllib.request

        client = self.authenticate_token_endpoint_client()
        assertion = self.request.form.get("assertion", "")
        issuer = jwt_part(assertion, 1).get("iss")
        jwks_uri = ENTERPRISE_ISSUERS.get(issuer) if client.enterprise_issuer == issuer else None
        if not jwks_uri:
            self.refuse(client, "an issuer not trusted for this client")
        with urllib.request.urlopen(jwks_uri, timeout=5) as reply:
            keys = KeySet.import_key_set(json.load(reply))
        try:
            token = jose_jwt.decode(assertion, keys, algorithms=["ES256", "RS256", "PS256"])
        except Exception:
            self.refuse(client, "signature")
        claims = token.claims
        registry = jose_jwt.JWTClaimsRegistry(leeway=5, exp={"essential": True}, iat={"essential": True})
        try:
            registry.validate(claims)
        except Exception:
            self.refuse(client, "expired")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if ISSUER not in audiences and ISSUER + "/" not in audiences:
            self.refuse(client, "audience")
        if claims.get("client_id") != client.client_id:
            self.refuse(client, "client_id")
        asked = self.request.form.getlist("resource")
        if not claims.get("resource") or (asked and claims.get("resource") not in asked):
            self.refuse(client, "resource")
        self.request.client = client
        self.request.user = claims.get("sub")
        with LOCK:
            STATS[client.client_id]["id-jag"] += 1
            STATS[client.client_id][f"id-jag sub:{claims.get('sub')}"] += 1

    def create_token_response(self):
        token = self.generate_token(scope=self.request.payload.scope, user=self.request.user, include_refresh_token=False)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER


class DeviceGrant(DeviceCodeGrant):
    def query_device_credential(self, device_code):
        with LOCK:
            data = DEVICE.get(device_code)
        return DeviceCredentialDict(data) if data else None

    def query_user_grant(self, user_code):
        with LOCK:
            if user_code not in USER_GRANTS:
                return None
            return USER, USER_GRANTS[user_code]

    def should_slow_down(self, credential):
        code = credential["device_code"]
        now = time.time()
        with LOCK:
            last = LAST_POLL.get(code)
            LAST_POLL[code] = now
        return last is not None and now - last < credential["interval"] * 0.8

    def create_token_response(self):
        # Single use: the device code is consumed once a token is issued (Authlib never does).
        result = super().create_token_response()
        with LOCK:
            DEVICE.pop(self.request.credential["device_code"], None)
        return result


class DeviceEndpoint(DeviceAuthorizationEndpoint):
    def get_verification_uri(self):
        return f"{ISSUER}/device"

    def create_endpoint_response(self, req):
        status, data, headers = super().create_endpoint_response(req)
        client = req.client
        data["expires_in"] = client.device_code_lifetime
        data["interval"] = client.device_interval
        with LOCK:
            DEVICE[data["device_code"]]["expires_at"] = time.time() + client.device_code_lifetime
            DEVICE[data["device_code"]]["interval"] = client.device_interval
        return status, data, headers

    def save_device_credential(self, client_id, scope, data):
        with LOCK:
            DEVICE[data["device_code"]] = dict(data, client_id=client_id, scope=scope)


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def query_token(self, token_string, token_type_hint):
        with LOCK:
            if token_type_hint != "refresh_token" and token_string in TOKENS:
                return TOKENS[token_string]
            return REFRESH.get(token_string) or TOKENS.get(token_string)

    def revoke_token(self, token, req):
        with LOCK:
            if req.form.get("token_type_hint") == "access_token" or req.form.get("token") == token.access_token:
                token.access_revoked = True
            else:
                token.refresh_revoked = True
                token.access_revoked = True


class Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token_string, token_type_hint):
        with LOCK:
            return TOKENS.get(token_string) or REFRESH.get(token_string)

    def introspect_token(self, token):
        active = not token.is_revoked() and not token.is_expired()
        return {
            "active": active, "client_id": token.client_id, "scope": token.scope, "sub": USER["id"],
            "aud": token.resources, "exp": int(token.issued_at + token.expires_in),
            **({"cnf": {"x5t#S256": token.x5t}} if getattr(token, "x5t", None) else {}),
        }

    def check_permission(self, token, client, req):
        return True


class Issuer(IssuerParameter):
    def get_issuer(self):
        return ISSUER


class Validator(BearerTokenValidator):
    def authenticate_token(self, token_string):
        with LOCK:
            return TOKENS.get(token_string)


app = Flask(__name__)
server = AuthorizationServer()
require_oauth = ResourceProtector()
ARGS = None
ISSUER = None
MTLS = None  # mtls.MutualTLS when a TLS terminator runs in front


def client_of_token_request():
    if request.authorization and request.authorization.username:
        from urllib.parse import unquote

        return unquote(request.authorization.username)
    if request.form.get("client_assertion"):
        return jwt_part(request.form["client_assertion"], 1).get("sub", "?")
    return request.form.get("client_id", "?")


CIMD = {}  # name -> published document (JSON text)
CIMD_BASE = None  # https://127.0.0.1:<tls port>, set at start


def client_by_id(client_id):
    """A registered client, or one described by its Client ID Metadata Document."""
    with LOCK:
        client = CLIENTS.get(client_id)
    if client is not None or not client_id or not client_id.startswith("https://"):
        return client
    import json
    import ssl
    import urllib.request

    try:
        # The test documents come from this server's own self-signed listener.
        context = ssl._create_unverified_context()
        with urllib.request.urlopen(client_id, timeout=5, context=context) as reply:
            document = json.loads(reply.read(64 * 1024))
    except Exception:
        return None
    with LOCK:
        STATS[f"cimd:{client_id}"]["fetched"] += 1
    method = document.get("token_endpoint_auth_method", "none")
    redirects = document.get("redirect_uris")
    if document.get("client_id") != client_id or method != "none" or not isinstance(redirects, list) or not redirects:
        with LOCK:
            STATS[f"cimd:{client_id}"]["refused"] += 1
        return None
    client = Client(client_id, None, ["none"])
    with LOCK:
        CLIENTS[client_id] = client
    return client


@app.post("/test/cimd")
def publish_cimd():
    import json

    body = request.get_json(silent=True) or {}
    with LOCK:
        CIMD[str(body.get("name"))] = json.dumps(body.get("document"))
    return jsonify(url=f"{CIMD_BASE}/cimd/{body.get('name')}.json")


@app.get("/test/cimd-base")
def cimd_base():
    return jsonify(base=CIMD_BASE)


@app.get("/cimd/<name>.json")
def cimd_document(name):
    with LOCK:
        document = CIMD.get(name)
    if document is None:
        return jsonify(error="not_found"), 404
    return document, 200, {"Content-Type": "application/json"}


def start_cimd_listener():
    """Serves this app over TLS on a free loopback port, with a certificate made now."""
    import datetime
    import ipaddress
    import ssl
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    from werkzeug.serving import make_server

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    folder = tempfile.mkdtemp(prefix="authreq-cimd-")
    with open(f"{folder}/cert.pem", "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(f"{folder}/key.pem", "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(f"{folder}/cert.pem", f"{folder}/key.pem")
    listener = make_server("127.0.0.1", 0, app, threaded=True, ssl_context=context)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    return f"https://127.0.0.1:{listener.server_port}"


def metadata():
    return jsonify(
        issuer=ISSUER,
        authorization_endpoint=f"{ISSUER}/authorize",
        token_endpoint=f"{ISSUER}/token",
        device_authorization_endpoint=f"{ISSUER}/device_authorization",
        revocation_endpoint=f"{ISSUER}/revoke",
        introspection_endpoint=f"{ISSUER}/introspect",
        registration_endpoint=f"{ISSUER}/register",
        response_types_supported=["code"],
        grant_types_supported=ALL_GRANTS,
        token_endpoint_auth_methods_supported=["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
        revocation_endpoint_auth_methods_supported=["client_secret_basic", "client_secret_post", "none"],
        code_challenge_methods_supported=["S256"],
        authorization_response_iss_parameter_supported=True,
        client_id_metadata_document_supported=True,
        scopes_supported=["profile", "email"],
    )


@app.get("/.well-known/oauth-authorization-server")
def metadata_document():
    document = metadata().get_json()
    return jsonify(MTLS.metadata(document) if MTLS is not None else document)


@app.get("/.well-known/openid-configuration")
def openid_configuration():
    document = metadata().get_json()
    document.update(
        jwks_uri=f"{ISSUER}/jwks",
        userinfo_endpoint=f"{ISSUER}/userinfo",
        end_session_endpoint=f"{ISSUER}/logout",
        subject_types_supported=["public"],
        id_token_signing_alg_values_supported=["RS256", "ES256"],
        scopes_supported=["openid", "profile", "email"],
        claims_supported=["sub", "name", "email", "nonce", "auth_time", "at_hash"],
    )
    return jsonify(MTLS.metadata(document) if MTLS is not None else document)


@app.get("/jwks")
def jwks():
    with LOCK:
        STATS["_server"]["jwks"] += 1
        keys = [key.as_dict(private=False) for key in SIGNING_KEYS.values()] + RETIRED_KEYS
    return jsonify(keys=keys)


@app.post("/test/rotate-keys")
def rotate_keys():
    global SIGNING_KEYS
    with LOCK:
        RETIRED_KEYS.extend(key.as_dict(private=False) for key in SIGNING_KEYS.values())
        SIGNING_KEYS = make_signing_keys()
        return jsonify(kids={alg: key.kid for alg, key in SIGNING_KEYS.items()})


@app.get("/userinfo")
@require_oauth("openid")
def userinfo():
    return jsonify(sub=USER["id"], name=USER["name"], email=USER["email"])


@app.get("/logout")
def logout():
    """RP-initiated logout: checks the id_token_hint against the server's keys and the client,
    then redirects to the loopback post_logout_redirect_uri with the state."""
    from urllib.parse import urlencode, urlsplit

    hint = request.args.get("id_token_hint", "")
    client_id = request.args.get("client_id", "")
    target = request.args.get("post_logout_redirect_uri")
    with LOCK:
        keys = [key for key in SIGNING_KEYS.values()]
    claims = None
    for key in keys:
        try:
            claims = jose_jwt.decode(hint, key).claims
            break
        except Exception:
            continue
    if claims is None or client_id not in ([claims.get("aud")] if isinstance(claims.get("aud"), str) else claims.get("aud", [])):
        return jsonify(error="invalid_request", error_description="bad id_token_hint"), 400
    with LOCK:
        STATS[client_id]["logout"] += 1
    if not target:
        return jsonify(logged_out=True)
    parts = urlsplit(target)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1":
        return jsonify(error="invalid_request", error_description="post_logout_redirect_uri not registered"), 400
    state = request.args.get("state")
    return redirect(target + ("?" + urlencode({"state": state}) if state else ""), code=302)


@app.get("/authorize")
def authorize():
    # The test user approves, unless the request asks for a denial (test_decision=deny).
    grant_user = None if request.args.get("test_decision") == "deny" else USER
    with LOCK:
        for resource in request.args.getlist("resource"):
            STATS[f"authorize:{resource}"]["requests"] += 1
            if request.args.get("acr_values"):
                STATS[f"authorize:{resource}"]["acr_values:" + request.args["acr_values"]] += 1
    return server.create_authorization_response(grant_user=grant_user)


def invalid_target():
    """RFC 8707 §2: a token request may name only resources of its grant (the authorization
    request's); each token is then for what it names (its audience)."""
    grant_type = request.form.get("grant_type")
    asked = request.form.getlist("resource")
    with LOCK:
        if grant_type == "authorization_code":
            code = CODES.get(request.form.get("code", ""))
            return code is not None and bool(code.resources) and not set(asked) <= set(code.resources)
        if grant_type == "refresh_token":
            token = REFRESH.get(request.form.get("refresh_token", ""))
            return token is not None and not set(asked) <= set(token.grant_resources or asked)
    return False


@app.post("/token")
def issue_token():
    client_id = client_of_token_request()
    grant_type = request.form.get("grant_type", "?")
    if MTLS is not None:
        MTLS.count(client_id)
    with LOCK:
        STATS[client_id][grant_type] += 1
        for resource in request.form.getlist("resource"):
            STATS[f"resource:{resource}"][grant_type] += 1
    if invalid_target():
        return jsonify(error="invalid_target", error_description="resource differs from the grant's"), 400
    response = server.create_token_response()
    if response.status_code == 400 and b"invalid_grant" in response.get_data():
        with LOCK:
            STATS[client_id]["invalid_grant"] += 1
    return response


@app.post("/device_authorization")
def device_authorization():
    if MTLS is not None:
        MTLS.count(client_of_token_request())
    return server.create_endpoint_response(DeviceEndpoint.ENDPOINT_NAME)


@app.route("/device", methods=["GET", "POST"])
def device_verification():
    user_code = request.values.get("user_code", "")
    with LOCK:
        known = any(d["user_code"] == user_code for d in DEVICE.values())
        if known:
            USER_GRANTS[user_code] = request.values.get("action", "approve") == "approve"
    return (jsonify(user_code=user_code, recorded=known), 200 if known else 404)


@app.post("/revoke")
def revoke():
    if MTLS is not None:
        MTLS.count(client_of_token_request())
    return server.create_endpoint_response(Revocation.ENDPOINT_NAME)


@app.post("/introspect")
def introspect():
    if MTLS is not None:
        MTLS.count(client_of_token_request())
    return server.create_endpoint_response(Introspection.ENDPOINT_NAME)


@app.get("/mtls/resource")
def mtls_resource():
    if MTLS is None:
        return jsonify(error="not_found"), 404
    return MTLS.resource(TOKENS)


@app.get("/api/me")
@require_oauth()
def me():
    return jsonify(sub=USER["id"], name=USER["name"])


@app.post("/api/notes")
@require_oauth()
def create_note():
    body = request.get_json(silent=True) or {}
    return jsonify(author=USER["id"], text=str(body.get("text", ""))), 201


def resource_metadata_url(tag):
    return f"{ISSUER}/.well-known/oauth-protected-resource/rs/{tag}"


@app.get("/.well-known/oauth-protected-resource/rs/<tag>")
def protected_resource_metadata(tag):
    return jsonify(
        resource=f"{ISSUER}/rs/{tag}",
        authorization_servers=[ISSUER],
        scopes_supported=["profile"],
        bearer_methods_supported=["header"],
        resource_name=f"Test resource {tag}",
    )


@app.route("/rs/<tag>", methods=["GET", "POST"])
@app.route("/rs/<tag>/<path:rest>", methods=["GET", "POST"])
def protected_resource(tag, rest=""):
    """Accepts a bearer token issued for exactly this resource; otherwise a 401 naming the
    resource's metadata (RFC 9728 §5.1)."""
    resource = f"{ISSUER}/rs/{tag}"
    header = request.headers.get("Authorization", "")
    token = None
    if header[:7].lower() == "bearer ":
        with LOCK:
            token = TOKENS.get(header[7:])
    challenge = f'Bearer resource_metadata="{resource_metadata_url(tag)}"'
    if token is None:
        return jsonify(error="unauthorized"), 401, {"WWW-Authenticate": challenge}
    if token.is_expired() or token.is_revoked() or resource not in token.resources:
        with LOCK:
            STATS[f"rs:{tag}"]["rejected"] += 1
        challenge += ', error="invalid_token"'
        return jsonify(error="invalid_token"), 401, {"WWW-Authenticate": challenge}
    # Step-up (RFC 6750 §3.1, RFC 9470): admin/* needs the scope admin; mfa/* an acr of
    # urn:test:mfa from a sign-in at most 60 s old; unreachable/* refuses every token.
    metadata_parameter = f'resource_metadata="{resource_metadata_url(tag)}"'
    if rest.startswith("admin") and "admin" not in (token.scope or "").split():
        with LOCK:
            STATS[f"rs:{tag}"]["insufficient_scope"] += 1
        header = f'Bearer error="insufficient_scope", scope="admin", {metadata_parameter}'
        return jsonify(error="insufficient_scope"), 403, {"WWW-Authenticate": header}
    if rest.startswith("unreachable"):
        header = f'Bearer error="insufficient_scope", scope="profile", {metadata_parameter}'
        return jsonify(error="insufficient_scope"), 403, {"WWW-Authenticate": header}
    if rest.startswith("mfa") and (token.acr != "urn:test:mfa" or time.time() - (token.auth_time or 0) > 60):
        header = (
            'Bearer error="insufficient_user_authentication", acr_values="urn:test:mfa", max_age="60", '
            + metadata_parameter
        )
        return jsonify(error="insufficient_user_authentication"), 401, {"WWW-Authenticate": header}
    with LOCK:
        STATS[f"rs:{tag}"]["ok"] += 1
        STATS[f"rs:{tag}"][f"client:{token.client_id}"] += 1
    return jsonify(
        resource=resource, path=rest, sub=USER["id"], client_id=token.client_id, scope=token.scope, acr=token.acr
    )


class Registration(ClientRegistrationEndpoint):
    """RFC 7591, open: no initial access token. A public client (token_endpoint_auth_method
    none) gets no secret."""

    def authenticate_token(self, request):
        return {"open": True}

    def get_server_metadata(self):
        return metadata().get_json()

    def generate_client_secret(self, request):
        if (request.payload.data or {}).get("token_endpoint_auth_method") == "none":
            return None
        return super().generate_client_secret(request)

    def save_client(self, client_info, client_metadata, request):
        method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
        client = Client(client_info["client_id"], client_info["client_secret"], [method])
        name = client_metadata.get("client_name", "?")
        with LOCK:
            CLIENTS[client.client_id] = client
            STATS[f"registered:{name}"]["register"] += 1
            kind = (request.payload.data or {}).get("application_type", "missing")
            STATS[f"registered:{name}"][f"application_type:{kind}"] += 1
        return client


@app.post("/register")
def register():
    return server.create_endpoint_response(Registration.ENDPOINT_NAME)


@app.post("/test/clients")
def create_client():
    body = request.get_json(silent=True) or {}
    client_id = f"client-{secrets.token_hex(6)}"
    public = bool(body.get("public"))
    secret = None if public else f"s3cret {secrets.token_urlsafe(8)}&+/é"
    methods = ["none"] if public else ["client_secret_basic", "client_secret_post"]
    if body.get("jwks"):
        methods = ["private_key_jwt"]
    if body.get("tls_client_auth_subject_dn"):
        methods, secret = ["tls_client_auth"], None
    if body.get("self_signed_tls_client_auth"):
        methods, secret = ["self_signed_tls_client_auth"], None
    client = Client(
        client_id,
        secret,
        methods,
        body.get("device_code_lifetime", 600),
        body.get("device_interval", 1),
        reuse_detection=bool(body.get("reuse_detection")),
        access_token_lifetime=body.get("access_token_lifetime"),
        id_token_alg=body.get("id_token_alg", "RS256"),
    )
    client.workload_key = None
    client.tls_client_auth_subject_dn = body.get("tls_client_auth_subject_dn")
    client.jwks = body.get("jwks")
    client.enterprise_issuer = body.get("enterprise_issuer")
    if client.enterprise_issuer:
        with LOCK:
            ENTERPRISE_ISSUERS[client.enterprise_issuer] = body["enterprise_jwks_uri"]
    if body.get("workload_issuer"):
        client.workload_key = ECKey.import_key(body["workload_jwk"])
    with LOCK:
        CLIENTS[client_id] = client
        if body.get("workload_issuer"):
            WORKLOAD_ISSUERS[body["workload_issuer"]] = client_id
    return jsonify(client_id=client_id, client_secret=secret)


@app.get("/test/stats/<path:client_id>")
def stats(client_id):
    with LOCK:
        return jsonify(dict(STATS[client_id]))


@app.get("/test/health")
def health():
    return jsonify(ok=True)


def main():
    global ARGS, ISSUER
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--access-token-lifetime", type=int, default=3600)
    ARGS = parser.parse_args()
    ISSUER = f"http://127.0.0.1:{ARGS.port}"
    # Per client when it asks (access_token_lifetime at creation), else the command line's.
    app.config["OAUTH2_TOKEN_EXPIRES_IN"] = "__main__.token_expires_in"
    app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
    server.init_app(app, query_client=client_by_id, save_token=save_token)
    global SIGNING_KEYS
    SIGNING_KEYS = make_signing_keys()
    server.register_grant(AuthorizationCodeGrant, [S256CodeChallenge(required=True), TestOpenIDCode(require_nonce=True)])
    server.register_grant(RefreshTokenGrant)
    server.register_grant(ClientCredentialsGrant)
    server.register_grant(DeviceGrant)
    server.register_grant(IDJAGGrant)
    server.register_grant(JWTBearerGrant)
    server.register_client_auth_method(PrivateKeyJWTAuthentication.CLIENT_AUTH_METHOD, PrivateKeyJWTAuthentication())
    server.register_endpoint(DeviceEndpoint)
    server.register_endpoint(Revocation)
    server.register_endpoint(Introspection)
    server.register_endpoint(Registration)
    server.register_extension(Issuer())
    global MTLS
    MTLS = mtls.from_environment(LOCK, STATS)
    if MTLS is not None:
        MTLS.install(
            server, [AuthorizationCodeGrant, RefreshTokenGrant, ClientCredentialsGrant, DeviceGrant],
            [Revocation, Introspection, DeviceEndpoint])
    require_oauth.register_token_validator(Validator())
    global CIMD_BASE
    CIMD_BASE = start_cimd_listener()
    # The fleet-at-scale test opens up to a thousand connections at once (200 replicas in 25
    # processes); werkzeug's listen backlog of 128 once overflowed under load and refused some.
    import werkzeug.serving

    werkzeug.serving.BaseWSGIServer.request_queue_size = 4096
    app.run(host="127.0.0.1", port=ARGS.port, threaded=True)


if __name__ == "__main__":
    main()
