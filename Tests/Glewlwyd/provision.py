"""Provisions a freshly started glewlwyd (Debian's 2.7.5) for the end-to-end tests, through its
administration API: an OpenID Connect plugin with PAR, request objects, RAR and JARM allowed and
its own RS256 key; a user who has granted the test clients their scopes and RAR type; and the test
clients. Writes what the tests need (issuer, the user's credentials, the clients and their keys) as
JSON to the file named by the second argument.

Usage: provision.py BASE_URL OUTPUT_JSON REDIRECT_URI
"""

import http.cookiejar
import json
import sys
import urllib.error
import urllib.request

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

base, output, redirect_uri = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
api = base + "/api"
issuer = api + "/oidc"


class Session:
    """A browser's cookie jar against the administration and profile APIs."""

    def __init__(self):
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def call(self, method, path, body=None, expected=(200,)):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            api + path, method=method, data=data, headers={"Content-Type": "application/json"})
        try:
            with self.opener.open(request) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        if status not in expected:
            sys.exit(f"glewlwyd: {method} {path} answered {status}: {text}")
        return text

    def sign_in(self, username, password):
        self.call("POST", "/auth/", {"username": username, "password": password})


def pem_private(key):
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


def pem_public(key):
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def ec_jwk(key, kid):
    numbers = key.public_key().public_numbers()
    encode = lambda n: __import__("base64").urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()
    return {"kty": "EC", "crv": "P-256", "x": encode(numbers.x), "y": encode(numbers.y), "kid": kid,
            "alg": "ES256", "use": "sig"}


server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
client_key = ec.generate_private_key(ec.SECP256R1())

admin = Session()
admin.sign_in("admin", "password")
admin.call("POST", "/mod/plugin/", {
    "module": "oidc", "name": "oidc", "display_name": "OpenID Connect", "enabled": True,
    "parameters": {
        "iss": issuer, "jwt-type": "rsa", "jwt-key-size": "256",
        "key": pem_private(server_key), "cert": pem_public(server_key),
        "access-token-duration": 3600, "refresh-token-duration": 1209600, "code-duration": 600,
        "refresh-token-rolling": True, "allow-non-oidc": False,
        "auth-type-code-enabled": True, "auth-type-refresh-enabled": True,
        "request-parameter-allow": True, "client-jwks-parameter": "jwks", "client-pubkey-parameter": "",
        "allowed-scope": ["openid", "payments"],
        "pkce-allowed": True, "pkce-method-plain-allowed": False,
        "oauth-dpop-allowed": True, "oauth-dpop-iat-duration": 60,
        "oauth-rar-allowed": True, "rar-types-client-property": "authorization_details_types",
        "rar-allow-auth-unsigned": True, "rar-allow-auth-unencrypted": True,
        "rar-types": {"payment_initiation": {
            "scopes": ["payments"], "locations": ["https://bank.example/payments"],
            "actions": ["initiate", "status"], "datatypes": ["sepa"], "enriched": []}},
        "oauth-par-allowed": True, "oauth-par-required": False, "oauth-par-duration": 90,
        "oauth-par-request_uri-prefix": "urn:ietf:params:oauth:request_uri:",
        "oauth-fapi-allow-jarm": True,
    }})
# Glewlwyd lets a session use a scope only once the user has authenticated for it: a password.
for scope in ["openid", "payments"]:
    admin.call("POST", "/scope/", {
        "name": scope, "display_name": scope, "description": scope, "password_required": True,
        "password_max_age": 0, "scheme": {}}, expected=(200, 400))
    admin.call("PUT", f"/scope/{scope}", {
        "display_name": scope, "description": scope, "password_required": True, "password_max_age": 0,
        "scheme": {}})
admin.call("POST", "/user/", {
    "username": "user-1", "password": "user-1-password", "name": "User One",
    "scope": ["openid", "payments", "g_profile"], "enabled": True})
clients = {
    "secret": {"client_id": "authreq-secret", "client_secret": "authreq-secret-password",
               "token_endpoint_auth_method": ["client_secret_basic"]},
    "private-key-jwt": {"client_id": "authreq-private-key-jwt",
                        "token_endpoint_auth_method": ["private_key_jwt"],
                        "jwks": {"keys": [ec_jwk(client_key, "authreq-test")]}},
}
for client in clients.values():
    registration = {
        "client_id": client["client_id"], "name": client["client_id"], "confidential": True,
        "redirect_uri": [redirect_uri], "authorization_type": ["code", "refresh_token"], "scope": [],
        "token_endpoint_auth_method": client["token_endpoint_auth_method"],
        "authorization_details_types": ["payment_initiation"], "enabled": True}
    if "client_secret" in client:
        registration["password"] = client["client_secret"]
    if "jwks" in client:
        registration["jwks"] = client["jwks"]
    admin.call("POST", "/client/", registration)

user = Session()
user.sign_in("user-1", "user-1-password")
for client in clients.values():
    user.call("PUT", f"/auth/grant/{client['client_id']}", {"scope": "openid payments"})
    # RAR draft 11 as glewlwyd implements it: the user consents to each type for each client.
    user.call("PUT", f"/oidc/rar/{client['client_id']}/payment_initiation/1")

with open(output, "w") as file:
    json.dump({
        "issuer": issuer, "redirect_uri": redirect_uri, "username": "user-1", "password": "user-1-password",
        "clients": {name: {"client_id": c["client_id"], "client_secret": c.get("client_secret")}
                    for name, c in clients.items()},
        "client_private_key_pem": pem_private(client_key), "client_key_id": "authreq-test",
    }, file, indent=2)
