"""A protected MCP server built on the MCP Python SDK (PyPI `mcp`, pinned in requirements.txt),
for the end-to-end tests of MCPAuthentication.

It is the SDK's own stack, used as an MCP server author would use it: `MCPServer` with its
streamable-HTTP transport, its authorization-server routes (RFC 8414 metadata, RFC 7591
registration, authorize with PKCE S256, token, revocation), its RFC 9728 protected resource
metadata and its bearer middleware, which checks the token's scope and its RFC 8707 resource.
Only the provider (where codes and tokens are kept) is ours, as the SDK expects:

- consent is automatic: `/authorize` redirects straight back with a code;
- access tokens live `--access-token-lifetime` seconds, so expiry in the tests is real;
- refresh tokens rotate, and a rotated one used again is counted (`refresh_reuse`); a client
  whose registered name contains `no-rotate` keeps its refresh token across refreshes (a server
  that does not rotate);
- `/test/health` answers when the server is up; `/test/stats` counts registrations,
  authorizations, code exchanges and refreshes, also per client name (`refresh:<name>`).

With --authorization-server URL the server is a resource server only, as an MCP server behind
an organisation's authorization server is: its metadata names that server (the Authlib test
server), and its bearer middleware checks each token by RFC 7662 introspection there (as the
SDK's own examples do), with the scope and the RFC 8707 resource the introspection reports. The
introspection client is created through the authorization server's /test/clients.

Usage: server.py PORT [--access-token-lifetime SECONDS] [--authorization-server URL]
"""

import argparse
import hashlib
import json
import os
import secrets
import time
from collections import Counter

import uvicorn
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

from mcp.server.auth.provider import (
    AccessToken,
    TokenVerifier,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPE = "mcp"


class TestProvider:
    """In-memory codes and tokens, with automatic consent."""

    def __init__(self, issuer: str, lifetime: int):
        self.issuer = issuer
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access_tokens: dict[str, AccessToken] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.rotated: set[str] = set()
        self.stats: Counter = Counter()
        self.token_log: dict[str, dict] = {}

    def name_of(self, client_id: str) -> str:
        client = self.clients.get(client_id)
        return (client.client_name if client else None) or client_id

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info
        self.stats["registrations"] += 1
        self.stats[f"registered:{client_info.client_name}"] += 1

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="alice",
        )
        self.stats["authorizations"] += 1
        self.stats[f"authorize:{self.name_of(client.client_id)}"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code and code.client_id == client.client_id else None

    def issue(self, client_id: str, scopes: list[str], resource: str | None, refresh: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(32)
        # The server's own record of the token (by its SHA-256, no secret): whom it was issued to,
        # when it expires, and how each presentation of it went. Tests judge timing from this.
        self.token_log[hashlib.sha256(access.encode()).hexdigest()] = {
            "client": self.name_of(client_id), "expires_at": int(time.time()) + self.lifetime,
            "accepted": 0, "refused_expired": 0,
        }
        self.access_tokens[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.lifetime,
            resource=resource,
            subject="alice",
        )
        if refresh is None:
            refresh = secrets.token_urlsafe(32)
            self.refresh_tokens[refresh] = RefreshToken(
                token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject="alice"
            )
        return OAuthToken(
            access_token=access, expires_in=self.lifetime, scope=" ".join(scopes), refresh_token=refresh
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.stats["code_exchanges"] += 1
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource, None)

    async def load_refresh_token(self, client, refresh_token: str) -> RefreshToken | None:
        if refresh_token in self.rotated:
            self.stats["refresh_reuse"] += 1
            return None
        token = self.refresh_tokens.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.stats["refreshes"] += 1
        self.stats[f"refresh:{self.name_of(client.client_id)}"] += 1
        if "no-rotate" in (client.client_name or ""):
            return self.issue(client.client_id, scopes, refresh_token.resource, refresh_token.token)
        self.refresh_tokens.pop(refresh_token.token, None)
        self.rotated.add(refresh_token.token)
        return self.issue(client.client_id, scopes, refresh_token.resource, None)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access_tokens.get(token)
        record = self.token_log.get(hashlib.sha256(token.encode()).hexdigest())
        if access is None or (access.expires_at and access.expires_at < time.time()):
            if record is not None:
                record["refused_expired"] += 1
            return None
        if record is not None:
            record["accepted"] += 1
        return access

    async def revoke_token(self, token) -> None:
        self.access_tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)


class IntrospectingVerifier(TokenVerifier):
    """Checks a token by introspection (RFC 7662) at the authorization server; the token's
    `aud` (its RFC 8707 resources) must include this server, which the SDK's middleware checks."""

    def __init__(self, authorization_server: str, resource: str):
        import urllib.request

        self.endpoint = f"{authorization_server}/introspect"
        self.resource = resource
        request = urllib.request.Request(
            f"{authorization_server}/test/clients", data=b"{}", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            client = json.load(reply)
        self.client_id, self.client_secret = client["client_id"], client["client_secret"]
        self.stats: Counter = Counter()

    async def verify_token(self, token: str) -> AccessToken | None:
        import anyio
        import urllib.parse
        import urllib.request

        body = urllib.parse.urlencode(
            {"token": token, "client_id": self.client_id, "client_secret": self.client_secret}
        ).encode()

        def introspect():
            request = urllib.request.Request(
                self.endpoint, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
            )
            with urllib.request.urlopen(request, timeout=10) as reply:
                return json.load(reply)

        info = await anyio.to_thread.run_sync(introspect)
        if not info.get("active"):
            self.stats["refused"] += 1
            return None
        audiences = info.get("aud") or []
        audiences = audiences if isinstance(audiences, list) else [audiences]
        self.stats["accepted"] += 1
        self.stats[f"accepted:{info.get('client_id')}"] += 1
        return AccessToken(
            token=token,
            client_id=info.get("client_id", ""),
            scopes=(info.get("scope") or "").split(),
            expires_at=info.get("exp"),
            resource=self.resource if self.resource in audiences else (audiences[0] if audiences else None),
            subject=str(info.get("sub", "")),
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--access-token-lifetime", type=int, default=3600)
    parser.add_argument("--authorization-server")
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    provider = TestProvider(base, args.access_token_lifetime)
    if args.authorization_server:
        verifier = IntrospectingVerifier(args.authorization_server, f"{base}/mcp")
        provider.stats = verifier.stats
        server = MCPServer(
            "authreq-test-mcp-resource",
            token_verifier=verifier,
            auth=AuthSettings(
                issuer_url=args.authorization_server,
                resource_server_url=f"{base}/mcp",
                required_scopes=[SCOPE],
                validate_token_resource=True,
            ),
        )
    else:
        server = MCPServer(
            "authreq-test-mcp",
            auth_server_provider=provider,
            auth=AuthSettings(
                issuer_url=base,
                resource_server_url=f"{base}/mcp",
                client_registration_options=ClientRegistrationOptions(
                    enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
                ),
                revocation_options=RevocationOptions(enabled=True),
                required_scopes=[SCOPE],
                validate_token_resource=True,
            ),
        )

    @server.tool()
    def echo(text: str) -> str:
        """Returns the text it is given."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @server.custom_route("/test/health", methods=["GET"])
    async def health(request: Request):
        return PlainTextResponse("ok")

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request):
        return JSONResponse(dict(provider.stats))

    @server.custom_route("/test/token/{digest}", methods=["GET"])
    async def token_record(request: Request):
        record = provider.token_log.get(request.path_params["digest"])
        return JSONResponse(record, status_code=200) if record else JSONResponse({"error": "unknown"}, status_code=404)

    # JSON responses: the Swift SDK's HTTP transport reads server-sent events only where
    # URLSession streams bytes (Apple platforms), not on Linux.
    app = server.streamable_http_app(json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level=os.environ.get("MCP_TEST_LOG_LEVEL", "warning"))


if __name__ == "__main__":
    main()
