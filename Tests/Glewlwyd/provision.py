"""Provisions a freshly started glewlwyd (Debian's 2.7.5) for the end-to-end tests, through its
administration API: an OpenID Connect plugin with PAR, request objects, RAR and JARM allowed and
its own RS256 key; a user who has granted the test clients their scopes and RAR type; and the test
clients. Writes what the tests need (issuer, the user's credentials, the clients and their keys) as
JSON to the file named by the second argument.

With AUTHREQ_MTLS_ISSUER_BASE set (the origin of the TLS terminator in front of this glewlwyd),
it provisions for mutual TLS (RFC 8705) instead: the plugin reads the client certificate from the
terminator's X-Client-Cert header, serves its /mtls/ aliases, allows self-signed certificates and
the client credentials grant; the clients authenticate with tls_client_auth (the test PKI's client
subject DN) and self_signed_tls_client_auth (the PKI's self-signed certificate, as a JWK with x5c,
in the client's jwks). Certificates come from AUTHREQ_TEST_PKI. What glewlwyd 2.7.5 lacks there:
it reads the certificate from a header only when nginx puts it on one line (nginx's perl module;
glewlwyd's HTTP server does not read a folded header); it has no protected resource for a client's
own tokens, so the resource that checks `x5t#S256` is the Authlib server's; its aliases are
token, PAR, introspection and revocation (device authorization and CIBA only when those are on).

Usage: provision.py BASE_URL OUTPUT_JSON REDIRECT_URI
"""

import base64
import http.cookiejar
import json
import os
import sys
import urllib.error
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

base, output, redirect_uri = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
api = base + "/api"
mtls_base = os.environ.get("AUTHREQ_MTLS_ISSUER_BASE")
issuer = (mtls_base or base) + "/api/oidc"


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
    """The public JWK of an EC key, private or public."""
    numbers = (key.public_key() if hasattr(key, "private_numbers") else key).public_numbers()
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
        **({
            "client-cert-source": "header", "client-cert-header-name": "X-Client-Cert",
            "client-cert-use-endpoint-aliases": True, "client-cert-self-signed-allowed": True,
            "auth-type-client-enabled": True, "allow-non-oidc": True,
            "introspection-revocation-allowed": True, "introspection-revocation-allow-target-client": True,
            "introspection-revocation-auth-scope": [],
        } if mtls_base else {}),
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
if mtls_base:
    # The client database keeps only the properties its data format names: add RFC 8705's.
    module = json.loads(admin.call("GET", "/mod/client/database"))
    module["parameters"]["data-format"]["tls_client_auth_subject_dn"] = {"multiple": False, "read": True, "write": True}
    admin.call("PUT", "/mod/client/database", {
        "display_name": module["display_name"], "parameters": module["parameters"],
        "order_rank": module["order_rank"], "readonly": module["readonly"]})
    admin.call("PUT", "/mod/client/database/reset")
    pki = os.environ["AUTHREQ_TEST_PKI"]
    with open(os.path.join(pki, "self-signed.pem"), "rb") as f:
        self_signed = x509.load_pem_x509_certificate(f.read())
    self_signed_jwk = {
        **ec_jwk(self_signed.public_key(), "self-signed"),
        "x5c": [base64.b64encode(self_signed.public_bytes(serialization.Encoding.DER)).decode()],
    }
    clients = {
        "tls": {"client_id": "authreq-tls-client-auth", "token_endpoint_auth_method": ["tls_client_auth"],
                "tls_client_auth_subject_dn": "CN=authreq-mtls-client,O=AuthenticatedRequests tests"},
        "self-signed": {"client_id": "authreq-self-signed-tls-client-auth",
                        "token_endpoint_auth_method": ["self_signed_tls_client_auth"],
                        "jwks": {"keys": [self_signed_jwk]}},
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
    if mtls_base:
        registration["authorization_type"] = ["client_credentials"]
        registration["scope"] = ["payments"]
    if "tls_client_auth_subject_dn" in client:
        registration["tls_client_auth_subject_dn"] = client["tls_client_auth_subject_dn"]
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
