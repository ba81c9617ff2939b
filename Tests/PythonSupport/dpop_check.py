"""DPoP proofs (RFC 9449) checked for the project's test servers, independently of the client's
code: the proof's header, signature, `htm`, `htu`, `iat`, `jti` and `ath`."""

import hashlib
import json
import time
import urllib.parse

import jwt

from loopback import b64url

ASYMMETRIC_ALGS = ["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"]


class ProofError(Exception):
    pass


def thumbprint(jwk):
    members = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
    names = members.get(jwk.get("kty"))
    if names is None:
        raise ProofError("unsupported jwk kty")
    canonical = json.dumps({k: jwk[k] for k in names}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


def normalized_htu(url):
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def verify_dpop_proof(proof, method, url, access_token=None):
    """Returns (jkt, claims) of a valid proof for `method` and `url`, or raises ProofError."""
    if not proof or "," in proof:
        raise ProofError("missing proof" if not proof else "more than one DPoP proof")
    try:
        header = jwt.get_unverified_header(proof)
    except jwt.PyJWTError:
        raise ProofError("not a well-formed JWT")
    if header.get("typ") != "dpop+jwt":
        raise ProofError("typ must be dpop+jwt")
    alg = header.get("alg")
    if alg not in ASYMMETRIC_ALGS:
        raise ProofError("alg must be asymmetric")
    jwk = header.get("jwk")
    if not isinstance(jwk, dict) or "d" in jwk:
        raise ProofError("jwk missing or private")
    try:
        key = jwt.PyJWK(jwk, algorithm=alg).key
        claims = jwt.decode(proof, key, algorithms=[alg], options={"verify_aud": False, "verify_exp": False})
    except jwt.PyJWTError as error:
        raise ProofError(f"signature does not verify: {error}")
    if not isinstance(claims.get("jti"), str):
        raise ProofError("missing jti")
    if claims.get("htm") != method:
        raise ProofError(f"htm is not {method}")
    htu = claims.get("htu")
    if not isinstance(htu, str) or "?" in htu or "#" in htu or normalized_htu(htu) != normalized_htu(url):
        raise ProofError("htu does not match")
    if not isinstance(claims.get("iat"), int) or abs(time.time() - claims["iat"]) > 300:
        raise ProofError("iat outside the window")
    if access_token is not None:
        expected = b64url(hashlib.sha256(access_token.encode()).digest())
        if claims.get("ath") != expected:
            raise ProofError("ath does not match the access token")
    return thumbprint(jwk), claims
