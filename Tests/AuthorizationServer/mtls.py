"""RFC 8705 (OAuth 2.0 mutual-TLS client authentication and certificate-bound access tokens) for
the test authorization server, as a shim on Authlib's classes: Authlib 1.9.8 has none of it.

The deployment is the usual one: a TLS terminator (nginx, started by Scripts/authorization-server.sh
with `ssl_verify_client optional_no_ca`) asks every client for a certificate without judging it,
and forwards the one presented, URL-encoded PEM (`$ssl_client_escaped_cert`), in
`X-Client-Certificate`, with `X-Proxy-Secret` proving the header came from it (a client that
reaches the plain port directly cannot forge a certificate). This file judges the certificate.

What it implements:
- `tls_client_auth` (§2.1): a certificate issued by the test CA, within its validity, whose subject
  DN is the client's registered `tls_client_auth_subject_dn`.
- `self_signed_tls_client_auth` (§2.2): a certificate that is the `x5c` of a key in the client's
  registered `jwks`.
- Certificate-bound access tokens (§3): a token issued to a request that came with a certificate
  records its `x5t#S256`; introspection answers it as `cnf`; `/mtls/resource` (behind the
  terminator) accepts a bound token only with the same certificate, and counts what it decided
  (`/test/stats/mtls:resource:<client_id>`).
- `mtls_endpoint_aliases` (§5): token, revocation, introspection and device authorization on the
  terminator's origin; every request to them is counted per client and path
  (`/test/stats/endpoints:<client_id>`: `mtls:/token`, …; `plain:/token` for the plain port).

What it does not: Authlib has no PAR endpoint, so there is no PAR alias; its tokens are opaque
(not JWTs), so a client learns the binding from introspection only. The refresh token of a
confidential client is not bound (§4 binds only public clients' refresh tokens); the access token
of a refresh is bound to the certificate of the refresh request, so a rotated certificate binds
the next token to the new one.
"""

import base64
import datetime
import hashlib
import hmac
import os
import urllib.parse

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from flask import jsonify, request

METHODS = ["tls_client_auth", "self_signed_tls_client_auth"]
ALIASED = {
    "token_endpoint": "/token",
    "revocation_endpoint": "/revoke",
    "introspection_endpoint": "/introspect",
    "device_authorization_endpoint": "/device_authorization",
}


class MutualTLS:
    def __init__(self, base, ca_file, secret, lock, stats):
        self.base, self.secret, self.lock, self.stats = base, secret, lock, stats
        with open(ca_file, "rb") as f:
            self.ca = x509.load_pem_x509_certificate(f.read())

    # MARK: The forwarded certificate

    def through_terminator(self):
        """Whether the request came through the TLS terminator (its secret header)."""
        sent = request.headers.get("X-Proxy-Secret", "")
        return bool(self.secret) and hmac.compare_digest(sent.encode(), self.secret.encode())

    def certificate(self):
        """The certificate the client presented to the terminator, or None."""
        if not self.through_terminator():
            return None
        pem = urllib.parse.unquote(request.headers.get("X-Client-Certificate", ""))
        if not pem:
            return None
        try:
            return x509.load_pem_x509_certificate(pem.encode())
        except ValueError:
            return None

    @staticmethod
    def thumbprint(certificate):
        der = certificate.public_bytes(serialization.Encoding.DER)
        return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()

    def count(self, client_id):
        """Counts the request under `endpoints:<client_id>` (the client's own counts by grant type
        stay as other tests read them)."""
        where = "mtls" if self.through_terminator() else "plain"
        with self.lock:
            self.stats[f"endpoints:{client_id}"][f"{where}:{request.path}"] += 1

    # MARK: Client authentication (§2)

    def issued_by_ca(self, certificate):
        try:
            certificate.verify_directly_issued_by(self.ca)
        except Exception:
            return False
        now = datetime.datetime.now(datetime.timezone.utc)
        return certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc

    def tls_client_auth(self, query_client, req):
        client = query_client(req.payload.client_id) if req.payload.client_id else None
        certificate = self.certificate()
        if client is None or certificate is None or req.payload.data.get("client_secret"):
            return None
        subject = certificate.subject.rfc4514_string()
        if not self.issued_by_ca(certificate) or subject != getattr(client, "tls_client_auth_subject_dn", None):
            return None
        return client

    def self_signed_tls_client_auth(self, query_client, req):
        client = query_client(req.payload.client_id) if req.payload.client_id else None
        certificate = self.certificate()
        if client is None or certificate is None or req.payload.data.get("client_secret"):
            return None
        der = base64.b64encode(certificate.public_bytes(serialization.Encoding.DER)).decode()
        registered = [key.get("x5c", [None])[0] for key in (client.jwks or {}).get("keys", [])]
        now = datetime.datetime.now(datetime.timezone.utc)
        valid = certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc
        return client if der in registered and valid else None

    def install(self, server, grant_classes, endpoint_classes):
        server.register_client_auth_method("tls_client_auth", self.tls_client_auth)
        server.register_client_auth_method("self_signed_tls_client_auth", self.self_signed_tls_client_auth)
        for grant in grant_classes:
            grant.TOKEN_ENDPOINT_AUTH_METHODS = list(grant.TOKEN_ENDPOINT_AUTH_METHODS) + METHODS
        for endpoint in endpoint_classes:
            endpoint.CLIENT_AUTH_METHODS = list(endpoint.CLIENT_AUTH_METHODS) + METHODS

    # MARK: Metadata (§3.3, §5)

    def metadata(self, document):
        document["token_endpoint_auth_methods_supported"] = document["token_endpoint_auth_methods_supported"] + METHODS
        document["tls_client_certificate_bound_access_tokens"] = True
        document["mtls_endpoint_aliases"] = {name: self.base + path for name, path in ALIASED.items()}
        return document

    # MARK: Bound tokens (§3)

    def bind(self, record):
        """Binds a token being issued to the certificate of its request, if any."""
        certificate = self.certificate()
        record.x5t = self.thumbprint(certificate) if certificate is not None else None

    def resource(self, tokens):
        """A resource that checks the binding: a bound token only with its certificate."""
        header = request.headers.get("Authorization", "")
        with self.lock:
            token = tokens.get(header[7:]) if header[:7].lower() == "bearer " else None
        certificate = self.certificate()
        presented = self.thumbprint(certificate) if certificate is not None else None
        bound = getattr(token, "x5t", None)
        counts = f"mtls:resource:{token.client_id if token is not None else '?'}"
        if token is None or token.is_expired() or token.is_revoked() or bound is None or bound != presented:
            with self.lock:
                self.stats[counts]["refused"] += 1
            challenge = 'Bearer error="invalid_token", error_description="a token bound to the presented certificate"'
            return jsonify(error="invalid_token"), 401, {"WWW-Authenticate": challenge}
        with self.lock:
            self.stats[counts]["accepted"] += 1
            self.stats[counts][f"x5t:{presented}"] += 1
        return jsonify(client_id=token.client_id, x5t=presented)


def from_environment(lock, stats):
    """The shim when the terminator runs (AUTHREQ_MTLS_BASE, AUTHREQ_MTLS_CA, AUTHREQ_PROXY_SECRET)."""
    base = os.environ.get("AUTHREQ_MTLS_BASE")
    if not base:
        return None
    return MutualTLS(base, os.environ["AUTHREQ_MTLS_CA"], os.environ["AUTHREQ_PROXY_SECRET"], lock, stats)
