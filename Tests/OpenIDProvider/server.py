"""An OpenID provider on idpyoidc 5.0.0 for the end-to-end tests, wired to Flask as its
example/flask_op does: discovery, JWKS, the code flow with PKCE (S256) and nonce, refresh,
UserInfo, revocation, RP-initiated logout, private_key_jwt client authentication and pushed
authorization requests (RFC 9126).

With --dpop, idpyoidc's DPoP add-on covers the token and UserInfo endpoints (a proof is then
mandatory there, so the tests run one instance with it and one without), the metadata says
require_pushed_authorization_requests, and the script adds what idpyoidc lacks, outside its
protocol logic:
- server nonces at the token endpoint (RFC 9449 §8) for clients registered with "dpop_nonce";
- /test/dpop-resource, a strict DPoP resource (RFC 9449 §7): signature, typ, alg, htm, htu, iat
  window, jti replay, ath as base64url (idpyoidc's own check wants hex), cnf.jkt against the
  proof's key, and its own nonces (§9).

The test user is signed in without a form (idpyoidc's NoAuthn). Shims for tests, outside
idpyoidc's protocol logic:
- loopback redirect URIs match on any port (RFC 8252 §7.3), which idpyoidc does not do;
- the logout confirmation page is confirmed at once, as the user would click it, and the logout
  endpoint does not try to authenticate the client (idpyoidc 5.0.0 does, and fails);
- test routes under /test/ register clients, rotate the signing keys and count requests.

CIBA (OpenID Connect Client-Initiated Backchannel Authentication) is idpyoidc's endpoint and grant
with the shims and the scriptable authentication device of ciba.py, which says what idpyoidc lacks.

idpyoidc writes key files into its working folder: start this script in a temporary folder.

Usage: python server.py PORT [--dpop]
"""

import base64
import hashlib
import json
import secrets
import sys
import threading
import time
from collections import defaultdict
from urllib.parse import urlencode, urlsplit

from cryptojwt.jwk.jwk import key_from_jwk_dict
from cryptojwt.jws.jws import factory as jws_factory
from cryptojwt.key_issuer import build_keyissuer
from cryptojwt.exception import IssuerNotFound
from cryptojwt.key_jar import KeyJar
from flask import Flask, jsonify, make_response, redirect, request

from idpyoidc.message.oauth2 import ResponseMessage
from idpyoidc.message.oidc import AccessTokenRequest
from idpyoidc.server import Server
from idpyoidc.server.configure import OPConfiguration
from idpyoidc.server.oauth2.token_helper import validate_token_exchange_policy
from idpyoidc.server.oidc.token import Token
from idpyoidc.server.oidc.token_helper.access_token import AccessTokenHelper
from idpyoidc.server.oidc.token_helper.refresh_token import RefreshTokenHelper
from idpyoidc.server.oidc.token_helper.token_exchange import TokenExchangeHelper
from idpyoidc.server.token.id_token import IDToken
from idpyoidc.server.user_authn.authn_context import INTERNETPROTOCOLPASSWORD
from idpyoidc.server.user_authn.user import NoAuthn
from idpyoidc.server.user_info import UserInfo

import ciba
from ciba import CIBA_GRANT, CibaAuthentication, CibaGrant

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
PORT = int(sys.argv[1])
DPOP = "--dpop" in sys.argv[2:]
ISSUER = f"http://127.0.0.1:{PORT}"
LOCK = threading.RLock()
STATS = defaultdict(lambda: defaultdict(int))
LOGOUTS = {}  # state of a logout request -> client_id
KEY_DEFS = [{"type": "RSA", "key": "", "use": ["sig"]}, {"type": "EC", "crv": "P-256", "use": ["sig"]}]
CRYPT = {
    "kwargs": {
        "keys": {"key_defs": [{"type": "OCT", "use": ["enc"], "kid": "password"}, {"type": "OCT", "use": ["enc"], "kid": "salt"}]},
        "iterations": 1,
    }
}
USERS = {
    "diana": {"sub": "diana", "name": "Diana Prince", "email": "diana@example.com", "email_verified": True},
    "erin": {"sub": "erin", "name": "Erin Enterprise", "email": "erin@example.com", "email_verified": True},
}

class ClientUserAuthn(NoAuthn):
    """idpyoidc's NoAuthn (the user is signed in without a form), signing in the client's own test
    user when it was created with one ("test_user": "erin"), else diana. RP-initiated logout at
    idpyoidc ends every session of the user it names, so a test whose session must outlive the
    logout tests signs in another user. A shim outside the protocol logic."""

    def authenticated_as(self, client_id="", cookie=None, authorization="", **kwargs):
        result, when = NoAuthn.authenticated_as(self, client_id, cookie, authorization, **kwargs)
        user = server.context.cdb.get(client_id, {}).get("test_user") if client_id else None
        if user:
            result["uid"] = user
        return result, when


CONF = {
    "issuer": ISSUER,
    "httpc_params": {"verify": False, "timeout": 5},
    "preference": {
        "subject_types_supported": ["public"],
        "grant_types_supported": ["authorization_code", "refresh_token", CIBA_GRANT],
        "id_token_signing_alg_values_supported": ["RS256", "ES256"],
    },
    "keys": {"uri_path": "jwks", "key_defs": KEY_DEFS, "private_path": "private/jwks.json", "read_only": False},
    "add_on": {"pkce": {"function": "idpyoidc.server.oauth2.add_on.pkce.add_support", "kwargs": {"essential": True, "code_challenge_method": "S256"}}},
    "token_handler_args": {
        "jwks_def": {"private_path": "private/token_jwks.json", "read_only": False,
                     "key_defs": [{"type": "oct", "bytes": "24", "use": ["enc"], "kid": "code"}]},
        "code": {"lifetime": 600, "kwargs": {"crypt_conf": CRYPT}},
        "token": {"class": "idpyoidc.server.token.jwt_token.JWTToken", "kwargs": {"lifetime": 3600, "add_claims_by_scope": True}},
        # Refresh tokens are opaque (encrypted with the token keys, which are never rotated), so a
        # session outlives /test/rotate-keys as it would at a provider that keeps verifying them.
        "refresh": {"lifetime": 86400, "kwargs": {"crypt_conf": CRYPT}},
        "id_token": {"class": "idpyoidc.server.token.id_token.IDToken", "kwargs": {}},
    },
    "cookie_handler": {
        "class": "idpyoidc.server.cookie_handler.CookieHandler",
        "kwargs": {"keys": {"key_defs": [{"type": "oct", "kid": "sig", "use": ["sig"]}, {"type": "oct", "kid": "enc", "use": ["enc"]}]},
                   "name": {"session": "oidc_op", "register": "oidc_op_rp", "session_management": "sman"}},
    },
    "endpoint": {
        "provider_config": {"path": ".well-known/openid-configuration", "class": "idpyoidc.server.oidc.provider_config.ProviderConfiguration", "kwargs": {}},
        "authorization": {"path": "authorization", "class": "idpyoidc.server.oidc.authorization.Authorization",
                          "kwargs": {"response_types_supported": ["code"], "response_modes_supported": ["query"]}},
        "token": {"path": "token", "class": "idpyoidc.server.oidc.token.Token",
                  "kwargs": {"client_authn_method": ["client_secret_basic", "client_secret_post", "private_key_jwt"],
                             # idpyoidc's helpers, with the CIBA grant's shim (ciba.py).
                             "grant_types_helpers": {
                                 "authorization_code": {"class": AccessTokenHelper},
                                 "refresh_token": {"class": RefreshTokenHelper},
                                 TOKEN_EXCHANGE: {"class": TokenExchangeHelper},
                                 CIBA_GRANT: {"class": CibaGrant}}}},
        "backchannel_authentication": {"path": "backchannel", "class": CibaAuthentication,
                                       "kwargs": {"client_authn_method": ["client_secret_basic", "client_secret_post", "private_key_jwt"]}},
        "userinfo": {"path": "userinfo", "class": "idpyoidc.server.oidc.userinfo.UserInfo", "kwargs": {}},
        "revocation": {"path": "revoke", "class": "idpyoidc.server.oauth2.token_revocation.TokenRevocation",
                       "kwargs": {"client_authn_method": ["client_secret_basic", "client_secret_post", "private_key_jwt"]}},
        "pushed_authorization": {"path": "par", "class": "idpyoidc.server.oauth2.pushed_authorization.PushedAuthorization",
                                 "kwargs": {"client_authn_method": ["client_secret_basic", "client_secret_post", "private_key_jwt"]}},
        "registration": {"path": "registration", "class": "idpyoidc.server.oidc.registration.Registration",
                         "kwargs": {"client_authn_method": None}},
        "session": {"path": "end_session", "class": "idpyoidc.server.oidc.session.Session",
                    "kwargs": {"post_logout_uri_path": "post_logout", "signing_alg": "ES256",
                               "logout_verify_url": f"{ISSUER}/verify_logout", "client_authn_method": None}},
    },
    "authentication": {"anon": {"acr": INTERNETPROTOCOLPASSWORD, "class": ClientUserAuthn, "kwargs": {"user": "diana"}}},
    "userinfo": {"class": UserInfo, "kwargs": {"db": USERS}},
    "authz": {"class": "idpyoidc.server.authz.AuthzHandling", "kwargs": {"grant_config": {
        "usage_rules": {
            "authorization_code": {"expires_in": 300, "supports_minting": ["access_token", "refresh_token", "id_token"], "max_usage": 1},
            # A user's access token can be exchanged for another (RFC 8693, clients created with
            # token_exchange).
            "access_token": {"expires_in": 600, "supports_minting": ["access_token"]},
            "refresh_token": {"expires_in": 86400, "supports_minting": ["access_token", "refresh_token", "id_token"]},
        },
        "expires_in": 43200}}},
    "session_params": {"encrypter": CRYPT},
    "template_dir": "templates",
}

if DPOP:
    CONF["add_on"]["dpop"] = {"function": "idpyoidc.server.oauth2.add_on.dpop.add_support",
                              "kwargs": {"dpop_signing_alg_values_supported": ["ES256"], "dpop_endpoints": ["token", "userinfo"]}}

server = Server(OPConfiguration(conf=CONF, base_path="."), cwd=".")
# ciba.py delivers tokens by poll and ping; push mode (tokens sent to the client) is not shimmed.
server.context.provider_info["backchannel_token_delivery_modes_supported"] = ["poll", "ping"]
if DPOP:
    server.context.provider_info["require_pushed_authorization_requests"] = True
    server.context.provider_info["dpop_signing_alg_values_supported"] = ["ES256"]
# The logout endpoint is configured without client authentication, but idpyoidc 5.0.0 still
# authenticates the request and fails (KeyError 'token'); RP-Initiated Logout asks for none.
server.get_endpoint("session").client_authentication = lambda *args, **kwargs: None
# idpyoidc 5.0.0's registration logs the new client's keys before it has any (cryptojwt then
# raises IssuerNotFound), so every registration without a jwks fails; a summary of no keys is "".
_key_summary = KeyJar.key_summary


def key_summary_or_none(self, issuer_id):
    try:
        return _key_summary(self, issuer_id)
    except IssuerNotFound:
        return ""


KeyJar.key_summary = key_summary_or_none

# idpyoidc 5.0.0 gives every ID token the same lifetime (300 s); a client created with
# "id_token_lifetime" gets ID tokens of that lifetime, so a test can see one expire while the
# session's access token is still valid. A shim outside the protocol logic (the lifetime only).
_id_token_call = IDToken.__call__


def id_token_of_client_lifetime(self, session_id="", *args, **kwargs):
    _, client_id, _ = self.upstream_get("context").session_manager.decrypt_session_id(session_id)
    lifetime = server.context.cdb.get(client_id, {}).get("id_token_lifetime")
    if lifetime is None:
        return _id_token_call(self, session_id, *args, **kwargs)
    default, self.lifetime = self.lifetime, lifetime
    try:
        return _id_token_call(self, session_id, *args, **kwargs)
    finally:
        self.lifetime = default


IDToken.__call__ = id_token_of_client_lifetime
app = Flask(__name__)


def http_info():
    return {
        "headers": {k: v for k, v in request.headers.items(lower=True) if k not in ("cookie", "user-agent")},
        "method": request.method,
        "url": request.url,
        "cookie": [{"name": k, "value": v} for k, v in request.cookies.items()],
    }


def respond(endpoint, req_args, **info):
    result = endpoint.do_response(request=req_args, **info)
    placement = result.get("response_placement", endpoint.response_placement)
    if placement == "url":
        response = redirect(result["response"])
    else:
        response = make_response(result["response"], result.get("response_code", 400 if info.get("error") else 200))
    for key, value in result.get("http_headers", []):
        response.headers[key] = value
    cookies = result.get("cookie", [])
    for cookie in cookies if isinstance(cookies, list) else [cookies]:
        spec = {k: v for k, v in cookie.items() if k != "name"}
        spec.update(path="/", samesite="Lax")
        response.set_cookie(cookie["name"], **spec)
    return response


def service(name, drop=()):
    endpoint = server.get_endpoint(name)
    info = http_info()
    with LOCK:
        STATS["_server"][name] += 1
    try:
        if request.method == "GET":
            args = {k: v for k, v in request.args.to_dict().items() if k not in drop}
        else:
            args = request.get_data(as_text=True) if request.data else request.form.to_dict()
        req_args = endpoint.parse_request(args, http_info=info)
    except Exception as err:
        app.logger.warning("%s: %s", name, err)
        return make_response(json.dumps({"error": "invalid_request", "error_description": str(err)}), 400,
                             {"Content-Type": "application/json"})
    if isinstance(req_args, ResponseMessage) and "error" in req_args:
        app.logger.warning("%s: %s", name, req_args.to_json())
        return make_response(req_args.to_json(), 401 if req_args["error"] == "invalid_client" else 400,
                             {"Content-Type": "application/json"})
    try:
        if isinstance(endpoint, Token):
            with LOCK:
                STATS[req_args.get("client_id", "?")][req_args.get("grant_type", "?")] += 1
            result = endpoint.process_request(AccessTokenRequest(**req_args), http_info=info)
        else:
            result = endpoint.process_request(req_args, http_info=info)
    except Exception as err:
        app.logger.warning("%s: %s", name, err)
        return make_response(json.dumps({"error": "invalid_request", "error_description": str(err)}), 400,
                             {"Content-Type": "application/json"})
    if "redirect_location" in result:
        return redirect(result["redirect_location"])
    if "http_response" in result:
        return make_response(result["http_response"], 200)
    return respond(endpoint, req_args, **result)


@app.get("/.well-known/openid-configuration")
def provider_config():
    return service("provider_config")


@app.get("/jwks")
def jwks():
    with LOCK:
        STATS["_server"]["jwks"] += 1
        return jsonify(server.context.keyjar.export_jwks(issuer_id=""))


def register_loopback_redirect(uri, client_id):
    # RFC 8252 §7.3: a loopback redirect URI matches on any port; idpyoidc matches exactly, so the
    # port the client chose is registered for it before idpyoidc checks the request.
    client = server.context.cdb.get(client_id)
    parts = urlsplit(uri)
    if client is not None and parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.path == "/callback":
        if (uri, None) not in client["redirect_uris"]:
            client["redirect_uris"].append((uri, None))


@app.get("/authorization")
def authorization():
    register_loopback_redirect(request.args.get("redirect_uri", ""), request.args.get("client_id", ""))
    if "request_uri" in request.args:
        with LOCK:
            STATS[request.args.get("client_id", "?")]["authorization_with_request_uri"] += 1
    return service("authorization")


@app.post("/par")
def pushed_authorization():
    client_id = request.form.get("client_id", "")
    register_loopback_redirect(request.form.get("redirect_uri", ""), client_id)
    with LOCK:
        STATS[client_id or "?"]["par"] += 1
        STATS[client_id or "?"]["par_auth_" + ("basic" if request.authorization else request.form.get("client_assertion_type", "post").rsplit(":", 1)[-1])] += 1
    return service("pushed_authorization")


NONCES = {"token": secrets.token_urlsafe(16), "resource": secrets.token_urlsafe(16)}
SEEN_JTIS = set()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def proof_claims(header):
    # The claims of a proof, unverified: only to read its nonce before idpyoidc verifies it.
    try:
        payload = header.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except Exception:
        return {}


def nonce_error(kind, status, body=None, challenge=None):
    headers = {"DPoP-Nonce": NONCES[kind], "Cache-Control": "no-store"}
    if challenge:
        headers["WWW-Authenticate"] = challenge
    if body is not None:
        headers["Content-Type"] = "application/json"
    return make_response(json.dumps(body) if body is not None else "", status, headers)


@app.post("/token")
def token():
    client_id = request.form.get("client_id") or (request.authorization.username if request.authorization else "")
    client = server.context.cdb.get(client_id or "", {})
    if DPOP and client.get("dpop_nonce"):
        with LOCK:
            current = NONCES["token"]
        if proof_claims(request.headers.get("DPoP", "")).get("nonce") != current:
            with LOCK:
                STATS[client_id]["use_dpop_nonce"] += 1
            return nonce_error("token", 400, {"error": "use_dpop_nonce",
                                              "error_description": "Authorization server requires nonce in DPoP proof"})
    if request.form.get("grant_type") == TOKEN_EXCHANGE:
        with LOCK:
            STATS[client_id]["subject:" + fingerprint(request.form.get("subject_token", ""))] += 1
        if request.form.get("requested_token_type") == ID_JAG:
            return issue_id_jag(client_id, client)
    response = service("token")
    if DPOP and client.get("dpop_nonce"):
        response.headers["DPoP-Nonce"] = NONCES["token"]
    return response


@app.route("/test/dpop-resource", methods=["GET", "POST"])
def dpop_resource():
    # A resource server that checks DPoP as RFC 9449 §7 says, which idpyoidc's own check does not.
    def refuse(error, description):
        with LOCK:
            STATS["_resource"][error] += 1
        return make_response(json.dumps({"error": error, "error_description": description}), 401,
                             {"WWW-Authenticate": f'DPoP error="{error}", algs="ES256"', "Content-Type": "application/json"})

    authorization = request.headers.get("Authorization", "")
    if not authorization.startswith("DPoP "):
        return refuse("invalid_token", "a DPoP token is required")
    access_token = authorization[5:]
    proofs = request.headers.getlist("DPoP")
    if len(proofs) != 1:
        return refuse("invalid_dpop_proof", "exactly one DPoP header")
    try:
        jws = jws_factory(proofs[0])
        header = jws.jwt.headers
        if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256" or "d" in header.get("jwk", {}):
            return refuse("invalid_dpop_proof", "typ, alg or jwk")
        key = key_from_jwk_dict(header["jwk"])
        key.deserialize()
        claims = jws.verify_compact(proofs[0], keys=[key], sigalg="ES256")
    except Exception as err:
        return refuse("invalid_dpop_proof", f"signature: {err}")
    now = time.time()
    if claims.get("htm") != request.method or claims.get("htu") != request.base_url:
        return refuse("invalid_dpop_proof", "htm or htu")
    if not isinstance(claims.get("iat"), int) or abs(now - claims["iat"]) > 60:
        return refuse("invalid_dpop_proof", "iat outside the window")
    with LOCK:
        current = NONCES["resource"]
        replayed = claims.get("jti") in SEEN_JTIS
        SEEN_JTIS.add(claims.get("jti"))
    if not claims.get("jti") or replayed:
        return refuse("invalid_dpop_proof", "jti replayed")
    if claims.get("nonce") != current:
        with LOCK:
            STATS["_resource"]["use_dpop_nonce"] += 1
        return nonce_error("resource", 401, {"error": "use_dpop_nonce", "error_description": "Resource server requires nonce"},
                           'DPoP error="use_dpop_nonce", algs="ES256"')
    if claims.get("ath") != b64url(hashlib.sha256(access_token.encode()).digest()):
        return refuse("invalid_dpop_proof", "ath is not the base64url SHA-256 of the token")
    try:
        payload = server.context.session_manager.token_handler.handler["access_token"].get_payload(access_token)
    except Exception:
        return refuse("invalid_token", "unknown token")
    if payload.get("exp", 0) < now:
        return refuse("invalid_token", "expired")
    thumbprint = key.thumbprint("SHA-256").decode()
    if payload.get("cnf", {}).get("jkt") != thumbprint:
        return refuse("invalid_token", "the proof's key is not the token's cnf.jkt")
    with LOCK:
        STATS["_resource"]["ok"] += 1
    return make_response(json.dumps({"sub": payload.get("sub"), "jkt": thumbprint, "method": request.method}), 200,
                         {"Content-Type": "application/json", "DPoP-Nonce": current})


@app.post("/test/rotate-nonces")
def rotate_nonces():
    with LOCK:
        NONCES["token"] = secrets.token_urlsafe(16)
        NONCES["resource"] = secrets.token_urlsafe(16)
    return jsonify(rotated=True)


@app.post("/test/introspect-jkt")
def introspect_jkt():
    # The cnf.jkt of an access or refresh token the provider issued, for the tests to compare.
    body = request.get_json(silent=True) or {}
    handler = server.context.session_manager.token_handler.handler[body.get("kind", "access_token")]
    try:
        payload = handler.get_payload(body.get("token", ""))
    except Exception as err:
        return jsonify(error=str(err)), 400
    return jsonify(jkt=payload.get("cnf", {}).get("jkt"), sub=payload.get("sub"))


@app.route("/userinfo", methods=["GET", "POST"])
def userinfo():
    return service("userinfo")


@app.post("/revoke")
def revoke():
    return service("token_revocation")


@app.get("/end_session")
def end_session():
    target = request.args.get("post_logout_redirect_uri", "")
    client = server.context.cdb.get(request.args.get("client_id", ""))
    parts = urlsplit(target)
    if client is not None and parts.scheme == "http" and parts.hostname == "127.0.0.1":
        if [target, ""] not in client["post_logout_redirect_uri"]:
            client["post_logout_redirect_uri"] = [target, ""]
    with LOCK:
        LOGOUTS[request.args.get("state", "")] = request.args.get("client_id", "?")
    return service("session")


@app.route("/verify_logout", methods=["GET", "POST"])
def verify_logout():
    # The confirmation page idpyoidc asks for, confirmed at once as the test user would.
    endpoint = server.get_endpoint("session")
    info = endpoint.unpack_signed_jwt(request.args["sjwt"])
    endpoint.do_verified_logout(alla=False, **info)
    with LOCK:
        STATS[LOGOUTS.pop(info.get("state", ""), "?")]["logout"] += 1
    target = info["redirect_uri"]
    if info.get("state"):
        target += ("&" if "?" in target else "?") + urlencode({"state": info["state"]})
    return redirect(target)


@app.post("/registration")
def registration():
    # OpenID Connect Dynamic Client Registration (RFC 7591's registration), open.
    body = request.get_json(silent=True) or {}
    with LOCK:
        STATS["registered:" + str(body.get("client_name", "?"))]["register"] += 1
        STATS["registered:" + str(body.get("client_name", "?"))]["application_type:" + str(body.get("application_type", "missing"))] += 1
    return service("registration")


@app.get("/.well-known/oauth-protected-resource/rs/<tag>")
def protected_resource_metadata(tag):
    return jsonify(resource=f"{ISSUER}/rs/{tag}", authorization_servers=[ISSUER], scopes_supported=["openid", "profile"])


@app.get("/rs/<tag>")
def protected_resource(tag):
    # A resource this provider's tokens open: a valid, unexpired access token it issued.
    challenge = f'Bearer resource_metadata="{ISSUER}/.well-known/oauth-protected-resource/rs/{tag}"'
    authorization = request.headers.get("Authorization", "")
    payload = None
    if authorization[:7].lower() == "bearer ":
        try:
            payload = server.context.session_manager.token_handler.handler["access_token"].get_payload(authorization[7:])
        except Exception:
            payload = None
    if payload is None or payload.get("exp", 0) < time.time():
        return make_response(json.dumps({"error": "invalid_token"}), 401,
                             {"WWW-Authenticate": challenge, "Content-Type": "application/json"})
    with LOCK:
        STATS["rs:" + tag]["ok"] += 1
    return jsonify(resource=f"{ISSUER}/rs/{tag}", sub=payload.get("sub"), client_id=payload.get("client_id", ""))


ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
RETIRED_KEYS = []  # the provider's keys before each /test/rotate-keys, to verify its own ID tokens
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"


def token_error(status, error, description):
    response = make_response(json.dumps({"error": error, "error_description": description}), status)
    response.headers["Content-Type"] = "application/json"
    response.headers["Cache-Control"] = "no-store"
    return response


def issue_id_jag(client_id, client):
    """Enterprise-Managed Authorization (MCP's SEP-990; the IETF draft "Identity Assertion JWT
    Authorization Grant"): an ID token this provider issued to the client, exchanged (RFC 8693)
    for an ID-JAG for another authorization server. idpyoidc 5.0.0 cannot issue ID-JAGs, so this
    is the project's own code, on idpyoidc's keys and sessions: the client authenticates with its
    secret; the subject token must be an ID token of this provider for this client, unexpired;
    `audience` must be an authorization server the client was set up for (POST /test/clients
    {"id_jag_clients": {audience: client id there}}), whose client id goes into the ID-JAG;
    `resource` is required. The ID-JAG is signed with the provider's ES256 key, typed
    oauth-id-jag+jwt, and lives 300 s."""
    import secrets as _secrets

    from cryptojwt.jws.jws import JWS

    auth = request.authorization
    secret = auth.password if auth and auth.username else request.form.get("client_secret", "")
    if not client or not _secrets.compare_digest(client.get("client_secret", ""), secret or ""):
        return token_error(401, "invalid_client", "Client authentication failed")
    form = request.form
    if form.get("subject_token_type") != ID_TOKEN_TYPE or not form.get("subject_token"):
        return token_error(400, "invalid_request", "subject_token must be an ID token")
    audience, resource = form.get("audience"), form.get("resource")
    if not audience or not resource:
        return token_error(400, "invalid_request", "audience and resource are required")
    clients_there = client.get("id_jag_clients", {})
    if audience not in clients_there:
        return token_error(400, "invalid_target", "No client is set up at that authorization server")
    try:
        verifier = jws_factory(form["subject_token"])
        # Its own ID tokens, signed before a key rotation too (as a provider keeps verifying them).
        with LOCK:
            keys = (server.context.keyjar.get_issuer_keys(ISSUER) or server.context.keyjar.get_issuer_keys("")) + RETIRED_KEYS
        claims = verifier.verify_compact(form["subject_token"], keys=keys)
    except Exception:
        return token_error(400, "invalid_grant", "The subject token is not an ID token of this provider")
    audiences = claims.get("aud") if isinstance(claims.get("aud"), list) else [claims.get("aud")]
    if claims.get("iss") != ISSUER or client_id not in audiences:
        return token_error(400, "invalid_grant", "The ID token was not issued to this client")
    now = int(time.time())
    if int(claims.get("exp", 0)) <= now:
        with LOCK:
            STATS[client_id]["id-jag expired subject"] += 1
        return token_error(400, "invalid_grant", "The ID token has expired")
    signing = server.context.keyjar.get_signing_key("EC", issuer_id=ISSUER) or server.context.keyjar.get_signing_key("EC")
    payload = {
        "iss": ISSUER, "sub": claims["sub"], "aud": audience, "client_id": clients_there[audience],
        "resource": resource, "jti": _secrets.token_urlsafe(16), "iat": now, "exp": now + 300,
    }
    if form.get("scope"):
        payload["scope"] = form["scope"]
    jag = JWS(json.dumps(payload), alg="ES256", typ="oauth-id-jag+jwt").sign_compact(signing[:1])
    with LOCK:
        STATS[client_id]["id-jag"] += 1
    reply = {"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A", "expires_in": 300}
    if client.get("id_jag_reply") == "access_token":
        reply["issued_token_type"] = "urn:ietf:params:oauth:token-type:access_token"
        reply["token_type"] = "Bearer"
    elif client.get("id_jag_reply") == "no_type":
        del reply["issued_token_type"]
    if form.get("scope"):
        reply["scope"] = form["scope"]
    response = make_response(json.dumps(reply), 200)
    response.headers["Content-Type"] = "application/json"
    response.headers["Cache-Control"] = "no-store"
    return response


def fingerprint(token):
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def delegation_policy(request, context, subject_token, **kwargs):
    # idpyoidc 5.0.0's policy refuses every actor token. This one accepts an actor token that is
    # an access token this provider issued (delegation, RFC 8693 §1.1), records which one, and
    # applies idpyoidc's policy to the rest of the request.
    actor = request.get("actor_token")
    if actor is not None:
        try:
            context.session_manager.get_session_info_by_token(actor, handler_key="access_token")
        except Exception:
            return ResponseMessage(error="invalid_request", error_description="Unknown actor token")
        with LOCK:
            STATS[request["client_id"]]["actor:" + fingerprint(actor)] += 1
        del request["actor_token"]
        if "actor_token_type" in request:
            del request["actor_token_type"]
    return validate_token_exchange_policy(request, context, subject_token, **kwargs)


@app.post("/test/clients")
def create_client():
    body = request.get_json(silent=True) or {}
    import secrets

    client_id = f"client-{secrets.token_hex(6)}"
    secret = secrets.token_urlsafe(32)
    entry = {
        "client_id": client_id,
        "client_secret": secret,
        "redirect_uris": [],
        "client_salt": secrets.token_hex(4),
        "token_endpoint_auth_method": body.get("auth_method", "client_secret_basic"),
        "response_types_supported": ["code"],
        "post_logout_redirect_uri": ["", ""],
        "allowed_scopes": ["openid", "profile", "email", "offline_access"],
        "id_token_signed_response_alg": body.get("id_token_alg", "RS256"),
        "dpop_nonce": bool(body.get("dpop_nonce", False)),
        "id_jag_clients": body.get("id_jag_clients", {}),
        "id_jag_reply": body.get("id_jag_reply"),
        "test_user": body.get("test_user"),
    }
    if body.get("id_token_lifetime"):
        entry["id_token_lifetime"] = int(body["id_token_lifetime"])
    if body.get("ciba"):
        # CIBA (ciba.py): its grant, a refresh token for offline_access, and how the device acts.
        entry["grant_types_supported"] = ["refresh_token", CIBA_GRANT]
        entry["ciba"] = body["ciba"]
        entry["backchannel_token_delivery_mode"] = body["ciba"].get("mode", "poll")
    if body.get("token_exchange"):
        entry["grant_types_supported"] = ["authorization_code", "refresh_token", TOKEN_EXCHANGE]
        entry["token_exchange"] = {
            "requested_token_types_supported": ["urn:ietf:params:oauth:token-type:access_token"],
            "default_requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "policy": {"": {"function": delegation_policy, "kwargs": {}}},
        }
    if "jwks" in body:
        entry["jwks"] = body["jwks"]
        server.context.keyjar.import_jwks(body["jwks"], client_id)
    with LOCK:
        server.context.cdb[client_id] = entry
    return jsonify(client_id=client_id, client_secret=secret)


@app.post("/test/rotate-keys")
def rotate_keys():
    # New signing keys replace the old ones (cryptojwt's rotate_keys keeps signing with the old
    # keys it marks inactive, while no longer publishing them).
    # idpyoidc keeps the provider's keys under "" (published) and its issuer ID (signing).
    with LOCK:
        RETIRED_KEYS.extend(server.context.keyjar.get_issuer_keys(ISSUER) or [])
        keys = build_keyissuer(KEY_DEFS)
        for owner in list(server.context.keyjar.owners()):
            if owner in ("", ISSUER):
                server.context.keyjar[owner] = keys
    return jsonify(rotated=True)


@app.get("/test/stats/<client_id>")
def stats(client_id):
    with LOCK:
        return jsonify(dict(STATS[client_id]))


ciba.install(app, server, USERS, STATS, LOCK)


@app.get("/test/health")
def health():
    return jsonify(ok=True)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=PORT, threaded=False)
