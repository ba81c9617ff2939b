"""The client authorization scenarios of the MCP conformance suite, ported: a scriptable MCP
server and authorization server for the end-to-end tests of MCPAuthentication.

The suite (modelcontextprotocol/conformance, `src/scenarios/client/auth/`) is TypeScript run
through npm, which these machines cannot reach; this is a port of the same behaviours in Python's
standard library (and PyJWT, which the MCP server's virtual environment already has). Each
scenario is one MCP server and one or more authorization servers, each on a loopback port of its
own, that behave as the scenario says and record what the client did as checks.

Control API (on the port given on the command line):
- `POST /runs` with `{"scenario": NAME}` starts a run of that scenario on new ports and answers
  `{"id", "server_url", "context"}` (`context`: what a pre-registered client needs, as the suite's
  `context`).
- `POST /runs/ID/session` (`expired-session` only) answers a session signed in earlier:
  `{"client_id", "access_token", "refresh_token", "token_endpoint", "issuer"}`.
- `GET /runs/ID/checks` answers the run's checks, `[{"id", "status", "description", "details"}]`,
  `status` one of SUCCESS, FAILURE, WARNING, INFO; the scenario's final checks (what did not
  happen) are added when asked.
- `GET /runs` lists the scenarios; `GET /test/health` answers when the server is up.

Usage: scenarios.py PORT
"""

import hashlib
import os
import secrets
import sys
import urllib.parse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))
from dpop_check import ProofError, verify_dpop_proof  # noqa: E402
from loopback import CheckLog, Listener, Reply, b64url, json_reply, parse_basic, redirect, serve_control  # noqa: E402

CIMD_URL = "https://conformance-test.local/client-metadata.json"
AS_DPOP_NONCE = "conformance-as-dpop-nonce"
RS_DPOP_NONCE = "conformance-rs-dpop-nonce"


# MARK: A run and its checks


class Run(CheckLog):
    def __init__(self, scenario):
        super().__init__()
        self.id = secrets.token_hex(8)
        self.scenario = scenario
        self.tokens = {}  # access token -> {"scopes": [...], "jkt": str | None, "server": name}
        self.context = {}
        self.server_url = None
        self.finish = lambda run: None
        self.state = {}

    def final_checks(self):
        with self.lock:
            finished = list(self.checks)
            saved, self.checks = self.checks, finished
            self.finish(self)
            finished, self.checks = self.checks, saved
            return finished


# MARK: The authorization server


class AuthServer:
    """The suite's `createAuthServer`: metadata, authorize (automatic consent), token and
    registration, each with the options a scenario turns."""

    def __init__(
        self,
        run,
        listener=None,
        name="as",
        metadata_path="/.well-known/oauth-authorization-server",
        openid=False,
        route_prefix="",
        issuer_path=None,
        metadata_issuer=None,
        scopes_supported=None,
        grant_types=("authorization_code", "refresh_token"),
        auth_methods=("none",),
        signing_algs=None,
        cimd=None,
        registration=True,
        iss_supported=True,
        iss_in_redirect="correct",
        dpop=False,
        dpop_nonce=False,
        on_authorize=None,
        on_token=None,
        on_register=None,
        advertise_https=False,
        lifetime=3600,
        rotate=True,
    ):
        self.run, self.name = run, name
        self.listener = listener or Listener()
        if listener is None:
            self.listener.handle = self.handle
        # An https URL in the metadata for a client that refuses http even to loopback; the test
        # client maps it back to this plain-http port.
        self.base = self.listener.url.replace("http://", "https://") if advertise_https else self.listener.url
        self.lifetime, self.rotate = lifetime, rotate
        self.metadata_path, self.openid, self.prefix = metadata_path, openid, route_prefix
        self.identifier = self.base + (route_prefix if issuer_path is None else issuer_path)
        self.issuer = metadata_issuer or self.identifier
        self.scopes_supported, self.grant_types, self.auth_methods = scopes_supported, grant_types, auth_methods
        self.signing_algs, self.cimd, self.registration = signing_algs, cimd, registration
        self.iss_supported, self.iss_in_redirect = iss_supported, iss_in_redirect
        self.dpop, self.dpop_nonce = dpop, dpop_nonce
        self.on_authorize, self.on_token, self.on_register = on_authorize, on_token, on_register
        self.codes, self.refresh_tokens, self.jtis = {}, {}, set()

    def endpoint(self, name):
        return f"{self.base}{self.prefix}/{name}"

    def metadata(self):
        document = {
            "issuer": self.issuer,
            "authorization_endpoint": self.endpoint("authorize"),
            "token_endpoint": self.endpoint("token"),
            "response_types_supported": ["code"],
            "grant_types_supported": list(self.grant_types),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(self.auth_methods),
        }
        if self.registration:
            document["registration_endpoint"] = self.endpoint("register")
        if self.iss_supported is not None:
            document["authorization_response_iss_parameter_supported"] = self.iss_supported
        if self.signing_algs:
            document["token_endpoint_auth_signing_alg_values_supported"] = self.signing_algs
        if self.dpop:
            document["dpop_signing_alg_values_supported"] = ["ES256"]
        if self.scopes_supported is not None:
            document["scopes_supported"] = self.scopes_supported
        if self.cimd is not None:
            document["client_id_metadata_document_supported"] = self.cimd
        if self.openid:
            document.update(
                jwks_uri=f"{self.base}/.well-known/jwks.json",
                subject_types_supported=["public"],
                id_token_signing_alg_values_supported=["RS256"],
            )
        return document

    def handle(self, request):
        if request.method == "GET" and self.metadata_path and request.path == self.metadata_path:
            self.run.check("authorization-server-metadata", "SUCCESS", "metadata requested", path=request.path, server=self.name)
            return json_reply(200, self.metadata())
        if request.method == "GET" and request.path == f"{self.prefix}/authorize":
            return self.authorize(request)
        if request.method == "POST" and request.path == f"{self.prefix}/token":
            return self.token(request)
        if request.method == "POST" and request.path == f"{self.prefix}/register" and self.registration:
            return self.register(request)
        if request.path.startswith("/.well-known/"):
            self.run.check("authorization-server-metadata-probe", "INFO", "a metadata URL without a document", path=request.path)
        return None

    def authorize(self, request):
        query = request.query
        run = self.run
        run.check("authorization-request", "SUCCESS", "authorization request", server=self.name, query=query)
        challenge, method = query.get("code_challenge"), query.get("code_challenge_method")
        run.check("pkce-code-challenge-sent", challenge is not None, "code_challenge in the authorization request")
        run.check("pkce-s256-method-used", method == "S256", "S256 code challenge method", method=method)
        if self.on_authorize:
            self.on_authorize(run, query)
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"challenge": challenge, "scope": query.get("scope"), "client_id": query.get("client_id")}
        target = urllib.parse.urlsplit(query.get("redirect_uri", ""))
        parameters = urllib.parse.parse_qsl(target.query)
        parameters.append(("code", code))
        if "state" in query:
            parameters.append(("state", query["state"]))
        iss = {"correct": self.issuer, "wrong": "https://evil.example.com", "normalized": self.issuer + "/"}.get(
            self.iss_in_redirect
        )
        if iss is not None:
            parameters.append(("iss", iss))
        return redirect(urllib.parse.urlunsplit(target._replace(query=urllib.parse.urlencode(parameters))))

    def token(self, request):
        form = request.form()
        run = self.run
        grant = form.get("grant_type")
        run.check("token-request", "SUCCESS", "token request", server=self.name, grant_type=grant)
        if grant not in self.grant_types:
            return json_reply(400, {"error": "unsupported_grant_type"})
        scopes = (form.get("scope") or "").split()
        refresh = None
        if grant == "authorization_code":
            entry = self.codes.pop(form.get("code", ""), None)
            if entry is None:
                return json_reply(400, {"error": "invalid_grant", "error_description": "unknown or used code"})
            verifier = form.get("code_verifier")
            run.check("pkce-code-verifier-sent", verifier is not None, "code_verifier in the token request")
            computed = b64url(hashlib.sha256(verifier.encode()).digest()) if verifier else None
            run.check("pkce-verifier-matches-challenge", computed is not None and computed == entry["challenge"], "S256(code_verifier) == code_challenge")
            scopes = (entry["scope"] or "").split()
        elif grant == "refresh_token":
            entry = self.refresh_tokens.get(form.get("refresh_token", ""))
            run.check("refresh-request", "INFO" if entry is not None else "FAILURE", "refresh")
            if entry is None:
                return json_reply(400, {"error": "invalid_grant"})
            scopes = scopes or entry
        jkt = None
        if self.dpop and request.header("DPoP") is not None:
            try:
                jkt, claims = verify_dpop_proof(request.header("DPoP"), "POST", self.endpoint("token"))
            except ProofError as error:
                if grant == "authorization_code":
                    run.check("dpop-token-request-proof", False, str(error))
                return json_reply(400, {"error": "invalid_dpop_proof", "error_description": str(error)})
            if grant == "authorization_code":
                run.check("dpop-token-request-proof", True, "a valid DPoP proof at the token request")
            if self.dpop_nonce and claims.get("nonce") != AS_DPOP_NONCE:
                if grant == "authorization_code":
                    run.check("dpop-as-nonce-challenged", "INFO", "use_dpop_nonce at the token endpoint")
                    self.codes[form["code"]] = entry  # the code stays usable for the retry
                return json_reply(
                    400,
                    {"error": "use_dpop_nonce", "error_description": "Authorization server requires a DPoP nonce"},
                    [("DPoP-Nonce", AS_DPOP_NONCE)],
                )
            if self.dpop_nonce and grant == "authorization_code":
                run.check("dpop-as-nonce-honored", True, "the retried token request carried the nonce")
        elif self.dpop and grant == "authorization_code":
            run.check("dpop-token-request-proof", False, "no DPoP proof in the token request")
        if self.on_token:
            outcome = self.on_token(run, self, request, form)
            if isinstance(outcome, Reply):
                return outcome
            if outcome is not None:
                scopes = outcome
        token = f"{self.name}-token-{secrets.token_hex(8)}"
        run.tokens[token] = {"scopes": scopes, "jkt": jkt, "server": self.name}
        body = {"access_token": token, "token_type": "DPoP" if jkt else "Bearer", "expires_in": self.lifetime}
        if scopes:
            body["scope"] = " ".join(scopes)
        if "refresh_token" in self.grant_types and (grant == "authorization_code" or (grant == "refresh_token" and self.rotate)):
            refresh = f"{self.name}-refresh-{secrets.token_hex(8)}"
            self.refresh_tokens[refresh] = scopes
            body["refresh_token"] = refresh
        return json_reply(200, body)

    def register(self, request):
        body = request.json()
        outcome = (self.on_register(self.run, body) if self.on_register else None) or {}
        client_id = outcome.get("client_id", f"{self.name}-client-{secrets.token_hex(4)}")
        secret = outcome.get("client_secret", "test-client-secret")
        method = outcome.get("token_endpoint_auth_method")
        application_type = body.get("application_type")
        self.run.check("client-registration", "SUCCESS", "registration", server=self.name, client_name=body.get("client_name"))
        self.run.check(
            "application-type-present", application_type in ("native", "web"), "application_type in the registration", application_type=application_type
        )
        reply = {"client_id": client_id, "client_name": body.get("client_name"), "redirect_uris": body.get("redirect_uris", [])}
        reply["grant_types"] = body.get("grant_types", ["authorization_code"])
        if secret:
            reply["client_secret"] = secret
        if method:
            reply["token_endpoint_auth_method"] = method
        return json_reply(201, reply)


# MARK: The MCP server (the protected resource)


class Resource:
    """The suite's `createServer`: an MCP endpoint at /mcp with one tool, `test-tool`, behind a
    bearer check (or a scenario's own guard), and its protected resource metadata."""

    def __init__(
        self,
        run,
        authorization_servers,
        listener=None,
        prm_path="/.well-known/oauth-protected-resource/mcp",
        scopes_supported=None,
        required_scopes=(),
        prm_in_challenge=True,
        scope_in_challenge=False,
        guard=None,
        prm_resource=None,
        fallback=None,
        trap_root_prm=False,
    ):
        self.run = run
        self.listener = listener or Listener()
        self.listener.handle = self.handle
        self.base = self.listener.url
        self.authorization_servers = authorization_servers
        self.prm_path, self.scopes_supported, self.required = prm_path, scopes_supported, list(required_scopes)
        self.prm_in_challenge, self.scope_in_challenge = prm_in_challenge, scope_in_challenge
        self.guard = guard or Resource.bearer
        self.prm_resource, self.fallback, self.trap_root_prm = prm_resource, fallback, trap_root_prm
        run.server_url = f"{self.base}/mcp"

    @property
    def metadata_url(self):
        return f"{self.base}{self.prm_path}"

    def handle(self, request):
        if request.method == "GET" and self.prm_path and request.path == self.prm_path:
            self.run.check("prm-requested", "SUCCESS", "protected resource metadata requested", path=request.path)
            root = self.prm_path == "/.well-known/oauth-protected-resource"
            metadata = {
                "resource": self.prm_resource or (self.base if root else f"{self.base}/mcp"),
                "authorization_servers": self.authorization_servers(),
            }
            if self.scopes_supported is not None:
                metadata["scopes_supported"] = self.scopes_supported
            return json_reply(200, metadata)
        if self.trap_root_prm and request.path == "/.well-known/oauth-protected-resource":
            self.run.check("prm-root-not-requested", False, "root metadata requested although the challenge named another")
            return None
        if request.path == "/mcp":
            message = request.json() if request.method == "POST" else {}
            refusal = self.guard(self, request, message.get("method"))
            if refusal is not None:
                return refusal
            return self.mcp(request, message)
        return self.fallback(request) if self.fallback else None

    def challenge(self, status, error, description, scheme="Bearer", scope=None):
        parameters = [f'error="{error}"', f'error_description="{description}"']
        scope = scope or (" ".join(self.required) if self.scope_in_challenge and self.required else None)
        if scope:
            parameters.append(f'scope="{scope}"')
        if self.prm_in_challenge and self.prm_path:
            parameters.append(f'resource_metadata="{self.metadata_url}"')
        return json_reply(status, {"error": error, "error_description": description}, [("WWW-Authenticate", f"{scheme} " + ", ".join(parameters))])

    def bearer(self, request, method):
        info = bearer_token(self.run, request)
        if info is None:
            return self.challenge(401, "invalid_token", "Missing or unknown access token")
        if self.scope_in_challenge and not set(self.required) <= set(info["scopes"]):
            return self.challenge(403, "insufficient_scope", "Token has insufficient scope")
        return None

    def mcp(self, request, message):
        if request.method != "POST":
            return Reply(405, b"", [("Allow", "POST")])
        if "id" not in message:
            return Reply(202)
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "conformance-scenario", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "test-tool", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call" and params.get("name") == "test-tool":
            result = {"content": [{"type": "text", "text": "test"}]}
        elif method == "ping":
            result = {}
        else:
            return json_reply(200, {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
        return json_reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


def lifecycle_is_free(method):
    """The scenarios with guards of their own let initialize and notifications through."""
    return method == "initialize" or (method or "").startswith("notifications/")


def bearer_token(run, request):
    """The run's record of the request's bearer token, or None."""
    scheme, _, token = (request.header("Authorization") or "").partition(" ")
    return run.tokens.get(token) if scheme.lower() == "bearer" else None


# MARK: Scenarios


SCENARIOS = {}


def scenario(name):
    def register(build):
        SCENARIOS[name] = build
        return build

    return register


def standard(run, resource_options=None, **auth_options):
    auth = AuthServer(run, **auth_options)
    resource = Resource(run, lambda: [auth.identifier], **(resource_options or {}))
    return auth, resource


def require_no(run, check_id, forbidden, description):
    """A final check: passes when none of `forbidden` checks happened."""

    def finish(run):
        happened = [c["id"] for c in run.checks if c["id"] in forbidden]
        run.check(check_id, not happened, description, happened=happened)

    return finish


def require(run, check_id, wanted, description):
    def finish(run):
        run.check(check_id, run.has(wanted), description)

    return finish


def metadata_scenario(name, prm_path, in_challenge, metadata_path, prefix="", openid=False, trap=False):
    @scenario(name)
    def build(run):
        auth = AuthServer(run, metadata_path=metadata_path, openid=openid, route_prefix=prefix)
        if prefix:
            original = auth.handle

            def handle(request):
                if request.path == "/.well-known/oauth-authorization-server" and request.method == "GET":
                    run.check("authorization-server-metadata-wrong-path", False, "metadata read at the root of a server with a path")
                return original(request)

            auth.listener.handle = handle
        Resource(run, lambda: [auth.identifier], prm_path=prm_path, prm_in_challenge=in_challenge, trap_root_prm=trap)
        run.finish = require(run, "token-request-made", "token-request", "the client reached the token endpoint")


metadata_scenario("metadata-default", "/.well-known/oauth-protected-resource/mcp", True, "/.well-known/oauth-authorization-server", trap=True)
metadata_scenario("metadata-var1", "/.well-known/oauth-protected-resource/mcp", False, "/.well-known/openid-configuration", openid=True)
metadata_scenario("metadata-var2", "/.well-known/oauth-protected-resource", False, "/.well-known/oauth-authorization-server/tenant1", prefix="/tenant1")
metadata_scenario("metadata-var3", "/custom/metadata/location.json", True, "/tenant1/.well-known/openid-configuration", prefix="/tenant1", openid=True)


@scenario("2025-03-26-oauth-metadata-backcompat")
def metadata_backcompat(run):
    shared = Listener()
    auth = AuthServer(run, listener=shared, route_prefix="/oauth", issuer_path="")
    Resource(run, lambda: [], listener=shared, prm_path=None, fallback=auth.handle)
    run.finish = require(run, "token-request-made", "token-request", "the client used the root metadata's endpoints")


@scenario("2025-03-26-oauth-endpoint-fallback")
def endpoint_fallback(run):
    shared = Listener()
    auth = AuthServer(run, listener=shared, metadata_path=None, iss_supported=None, iss_in_redirect="omit")
    Resource(run, lambda: [], listener=shared, prm_path=None, fallback=auth.handle)
    run.finish = require(run, "token-request-made", "token-request", "the client used /authorize, /token and /register")


@scenario("basic-cimd")
def basic_cimd(run):
    def on_authorize(run, query):
        run.check("cimd-client-id-used", query.get("client_id") == CIMD_URL, "URL client id", client_id=query.get("client_id"))

    standard(run, cimd=True, on_authorize=on_authorize)
    run.context = {"client_metadata_url": CIMD_URL}
    run.finish = require_no(run, "cimd-no-registration", {"client-registration"}, "no dynamic registration when CIMD is offered")


@scenario("scope-from-www-authenticate")
def scope_from_challenge(run):
    def on_authorize(run, query):
        scopes = (query.get("scope") or "").split()
        run.check("scope-from-www-authenticate", "mcp:basic" in scopes, "the challenge's scope", scope=query.get("scope"))

    standard(run, {"required_scopes": ["mcp:basic"], "scope_in_challenge": True}, on_authorize=on_authorize)


@scenario("scope-from-scopes-supported")
def scope_from_scopes_supported(run):
    supported = ["mcp:basic", "mcp:read", "mcp:write"]

    def on_authorize(run, query):
        scopes = (query.get("scope") or "").split()
        run.check("scope-from-scopes-supported", set(supported) <= set(scopes), "all of scopes_supported", scope=query.get("scope"))

    standard(run, {"required_scopes": supported, "scopes_supported": supported}, on_authorize=on_authorize)


@scenario("scope-omitted-when-undefined")
def scope_omitted(run):
    def on_authorize(run, query):
        run.check("scope-omitted-when-undefined", "scope" not in query, "no scope parameter", scope=query.get("scope"))

    standard(run, on_authorize=on_authorize)


@scenario("scope-step-up")
def scope_step_up(run):
    run.state["authorizations"] = 0

    def on_authorize(run, query):
        run.state["authorizations"] += 1
        scopes = (query.get("scope") or "").split()
        if run.state["authorizations"] == 1:
            run.check("scope-step-up-initial", "mcp:basic" in scopes, "the challenge's scope first", scope=query.get("scope"))
        elif run.state["authorizations"] == 2:
            run.check("scope-step-up-escalation", "mcp:write" in scopes, "the challenged scope", scope=query.get("scope"))
            run.check("scope-union-on-reauthorization", "mcp:basic" in scopes, "the earlier scope kept", scope=query.get("scope"))
        else:
            run.check("scope-step-up-bounded", False, "a third authorization")

    def guard(resource, request, method):
        if lifecycle_is_free(method):
            return None
        info = bearer_token(run, request)
        if info is None:
            return resource.challenge(401, "invalid_token", "Missing Authorization header", scope="mcp:basic")
        needed = "mcp:write" if method == "tools/call" else "mcp:basic"
        if needed not in info["scopes"]:
            return resource.challenge(403, "insufficient_scope", "Token has insufficient scope", scope="mcp:write")
        return None

    standard(run, {"scopes_supported": ["mcp:profile"], "guard": guard}, on_authorize=on_authorize)


@scenario("scope-retry-limit")
def scope_retry_limit(run):
    run.state.update(authorizations=0, requests=0)

    def on_authorize(run, query):
        run.state["authorizations"] += 1
        run.check("scope-retry-auth-attempt", "INFO", f"authorization attempt {run.state['authorizations']}")

    def guard(resource, request, method):
        if lifecycle_is_free(method):
            return None
        if not (request.header("Authorization") or "").startswith("Bearer "):
            return resource.challenge(401, "invalid_token", "Missing Authorization header", scope="mcp:admin")
        run.state["requests"] += 1
        if run.state["requests"] > 3:
            return json_reply(410, {"error": "test_complete", "error_description": "the client exceeded the retry limit"})
        return resource.challenge(403, "insufficient_scope", "Scope upgrade will never succeed", scope="mcp:admin")

    def finish(run):
        attempts = run.state["authorizations"]
        run.check("scope-retry-limit", 0 < attempts <= 3, f"{attempts} authorization attempts (at most 3)", attempts=attempts)

    standard(run, {"scopes_supported": ["mcp:admin"], "guard": guard}, on_authorize=on_authorize)
    run.finish = finish


def token_endpoint_auth(name, expected):
    @scenario(name)
    def build(run):
        def on_authorize(run, query):
            run.state["authorization_resource"] = query.get("resource")

        def on_token(run, auth, request, form):
            basic = request.header("Authorization")
            actual = "client_secret_basic" if basic else "client_secret_post" if "client_secret" in form else "none"
            well_formed = not basic or parse_basic(basic) is not None
            run.check("token-endpoint-auth-method", actual == expected and well_formed, f"used {actual}", expected=expected, actual=actual)
            run.state["token_resource"] = form.get("resource")
            return None

        def on_register(run, body):
            return {
                "client_secret": None if expected == "none" else f"secret-{secrets.token_hex(4)}",
                "token_endpoint_auth_method": expected,
            }

        _, resource = standard(run, auth_methods=[expected], on_authorize=on_authorize, on_token=on_token, on_register=on_register)

        def finish(run):
            expected_resource = f"{resource.base}/mcp"
            authorization, token = run.state.get("authorization_resource"), run.state.get("token_resource")
            run.check("resource-parameter-in-authorization", authorization == expected_resource, "RFC 8707 resource", value=authorization)
            run.check("resource-parameter-in-token", token == expected_resource, "RFC 8707 resource at the token endpoint", value=token)
            run.check("resource-parameter-consistent", authorization == token, "the same resource in both requests")
            if not run.has("token-endpoint-auth-method"):
                run.check("token-endpoint-auth-method", False, "no token request")

        run.finish = finish


token_endpoint_auth("token-endpoint-auth-basic", "client_secret_basic")
token_endpoint_auth("token-endpoint-auth-post", "client_secret_post")
token_endpoint_auth("token-endpoint-auth-none", "none")


@scenario("pre-registration")
def pre_registration(run):
    client_id, secret = "pre-registered-client", "pre-registered-secret"

    def on_token(run, auth, request, form):
        ok = parse_basic(request.header("Authorization")) == (client_id, secret)
        run.check("pre-registration-auth", ok, "pre-registered credentials over HTTP Basic")
        return None if ok else json_reply(401, {"error": "invalid_client"})

    auth, _ = standard(run, registration=False, auth_methods=["client_secret_basic"], on_token=on_token)
    run.context = {"client_id": client_id, "client_secret": secret, "issuer": auth.issuer}
    run.finish = require(run, "pre-registration-used", "pre-registration-auth", "the client reached the token endpoint")


@scenario("client-credentials-jwt")
def client_credentials_jwt(run):
    client_id = "conformance-test-client"
    private_key = ec.generate_private_key(ec.SECP256R1())
    public_key = private_key.public_key()

    def on_token(run, auth, request, form):
        run.check("client-credentials-grant-type", form.get("grant_type") == "client_credentials", "client_credentials grant")
        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            run.check("client-credentials-assertion-type", False, "wrong client_assertion_type")
            return json_reply(401, {"error": "invalid_client"})
        issuer = auth.issuer.rstrip("/")
        try:
            claims = jwt.decode(form.get("client_assertion", ""), public_key, algorithms=["ES256"], audience=[issuer, issuer + "/"], leeway=30)
        except jwt.PyJWTError as error:
            run.check("client-credentials-jwt-verified", False, f"assertion does not verify: {error}")
            return json_reply(401, {"error": "invalid_client", "error_description": str(error)})
        ok = claims.get("iss") == client_id and claims.get("sub") == client_id
        run.check("client-credentials-jwt-verified", ok, "signed assertion, aud the issuer, iss and sub the client id", aud=claims.get("aud"))
        return None if ok else json_reply(401, {"error": "invalid_client"})

    auth, _ = standard(run, grant_types=["client_credentials"], auth_methods=["private_key_jwt"], signing_algs=["ES256"], on_token=on_token)
    pem = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    run.context = {"client_id": client_id, "private_key_pem": pem.decode(), "signing_algorithm": "ES256", "issuer": auth.issuer}
    run.finish = require(run, "client-credentials-jwt-made", "client-credentials-jwt-verified", "the client made a client_credentials request")


@scenario("client-credentials-basic")
def client_credentials_basic(run):
    client_id, secret = "conformance-test-client", "conformance-test-secret"

    def on_token(run, auth, request, form):
        run.check("client-credentials-grant-type", form.get("grant_type") == "client_credentials", "client_credentials grant")
        ok = parse_basic(request.header("Authorization")) == (client_id, secret)
        run.check("client-credentials-basic-auth", ok, "client credentials over HTTP Basic")
        return None if ok else json_reply(401, {"error": "invalid_client"})

    auth, _ = standard(run, grant_types=["client_credentials"], auth_methods=["client_secret_basic"], on_token=on_token)
    run.context = {"client_id": client_id, "client_secret": secret, "issuer": auth.issuer}
    run.finish = require(run, "client-credentials-basic-made", "client-credentials-basic-auth", "the client made a client_credentials request")


JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
WIF_TRIGGER_UNAUTHORIZED_SCOPE = "wif.trigger-unauthorized"
WIF_REJECTED_SCOPE = "wif.rejected"


def es256_key():
    return ec.generate_private_key(ec.SECP256R1())


@scenario("wif-jwt-bearer")
def wif_jwt_bearer(run):
    """SEP-1933: the JWT bearer grant with a workload's token, no registration, no client
    authentication. The client must send the grant and the assertion, and give up (neither retry
    nor switch grants) after a refusal. Context: a valid token, one for another audience, one
    expired (the suite's `createWorkloadJwt`)."""
    key = es256_key()
    state = {"requested": False, "failed": False}

    def on_token(run, auth, request, form):
        grant = form.get("grant_type")
        if state["requested"] and state["failed"]:
            if grant != JWT_BEARER:
                run.check("wif-grant-fallback", "WARNING", f"fell back to {grant} after a JWT bearer refusal")
                return json_reply(400, {"error": "unsupported_grant_type"})
            run.check("wif-no-retry", "WARNING", "retried the JWT bearer grant after a refusal")
            return json_reply(400, {"error": "invalid_request", "error_description": "Retry not allowed"})
        state["requested"] = True
        assertion = form.get("assertion")
        if not assertion:
            run.check("wif-assertion-missing", False, "no assertion in the JWT bearer request")
            state["failed"] = True
            return json_reply(400, {"error": "invalid_request", "error_description": "Missing assertion parameter"})
        issuer = auth.issuer.rstrip("/")
        try:
            claims = jwt.decode(assertion, key.public_key(), algorithms=["ES256"], audience=[issuer, issuer + "/"], leeway=5)
        except jwt.ExpiredSignatureError as error:
            run.check("wif-assertion-expired", False, f"an expired assertion was sent: {error}")
            state["failed"] = True
            return json_reply(400, {"error": "invalid_grant", "error_description": "JWT assertion is expired"})
        except jwt.InvalidAudienceError as error:
            # The client sent what its source gave; the server refuses it, and the client must
            # end there (the final checks see no retry).
            run.check("wif-assertion-audience", "INFO", f"assertion for another audience refused: {error}")
            state["failed"] = True
            return json_reply(400, {"error": "invalid_grant", "error_description": "JWT assertion audience is invalid"})
        except jwt.PyJWTError as error:
            run.check("wif-assertion-malformed", False, f"malformed or badly signed assertion: {error}")
            state["failed"] = True
            return json_reply(400, {"error": "invalid_grant", "error_description": str(error)})
        run.check("wif-assertion-verified", True, "workload assertion verified: signature, audience, expiry", sub=claims.get("sub"))
        scopes = (form.get("scope") or "").split()
        if WIF_TRIGGER_UNAUTHORIZED_SCOPE in scopes:
            state["failed"] = True
            return json_reply(400, {"error": "unauthorized_client", "error_description": "Client not authorized for JWT-bearer grant"})
        if WIF_REJECTED_SCOPE in scopes:
            state["failed"] = True
            return json_reply(400, {"error": "invalid_scope", "error_description": "Requested scope is not permitted"})
        return None

    auth, _ = standard(run, grant_types=[JWT_BEARER], auth_methods=["none"], registration=False, on_token=on_token)
    issuer = auth.issuer.rstrip("/")

    def workload_jwt(audience, expires_in=300):
        now = int(__import__("time").time())
        claims = {"iss": "https://idp.conformance-test.local", "sub": "conformance-workload", "aud": audience,
                  "iat": now, "exp": now + expires_in, "jti": secrets.token_hex(8)}
        return jwt.encode(claims, key, algorithm="ES256")

    run.context = {
        "client_id": "conformance-wif-workload", "issuer": auth.issuer,
        "valid_jwt": workload_jwt(issuer), "wrong_audience_jwt": workload_jwt("https://wrong.example"),
        "expired_jwt": workload_jwt(issuer, expires_in=-60),
    }

    def finish(run):
        if not state["requested"]:
            run.check("wif-assertion-verified", False, "the client made no JWT bearer request")

    run.finish = finish


@scenario("enterprise-managed-authorization")
def enterprise_managed_authorization(run):
    """SEP-990: an ID token from the enterprise's identity provider, exchanged there (RFC 8693)
    for an ID-JAG, which the MCP server's authorization server grants an access token for (RFC
    7523, client_secret_basic). Context: the client at the authorization server, the client at the
    provider, the provider's issuer and token endpoint, and an ID token it issued."""
    client_id, secret = "conformance-test-xaa-client", "conformance-test-xaa-secret"
    idp_client_id, user = "conformance-test-idp-client", "demo-user@example.com"
    idp_key = es256_key()
    grant_keys = {}  # user -> the public key of the ID-JAGs issued for them
    idp = Listener()
    holder = {}

    def idp_handle(request):
        base = idp.url
        if request.method == "GET" and request.path == "/.well-known/openid-configuration":
            return json_reply(200, {"issuer": base, "authorization_endpoint": f"{base}/authorize", "token_endpoint": f"{base}/token",
                                    "jwks_uri": f"{base}/.well-known/jwks.json", "grant_types_supported": [TOKEN_EXCHANGE]})
        if request.method != "POST" or request.path != "/token":
            return None
        form = request.form()
        if form.get("grant_type") != TOKEN_EXCHANGE:
            run.check("complete-flow-token-exchange", False, f"the provider expected token-exchange, got {form.get('grant_type')}")
            return json_reply(400, {"error": "unsupported_grant_type"})
        missing = []
        if not form.get("subject_token"):
            missing.append("subject_token")
        if form.get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token":
            missing.append("subject_token_type")
        if form.get("requested_token_type") != ID_JAG:
            missing.append("requested_token_type")
        for name in ("audience", "resource"):
            if not form.get(name):
                missing.append(name)
        if missing:
            run.check("complete-flow-token-exchange", False, "missing or invalid: " + ", ".join(missing))
            return json_reply(400, {"error": "invalid_request", "error_description": ", ".join(missing)})
        try:
            claims = jwt.decode(form["subject_token"], idp_key.public_key(), algorithms=["ES256"], audience=idp_client_id, issuer=base)
        except jwt.PyJWTError as error:
            run.check("complete-flow-token-exchange", False, f"the ID token does not verify: {error}")
            return json_reply(400, {"error": "invalid_grant", "error_description": "Invalid ID token"})
        run.check("complete-flow-token-exchange", True, "ID token exchanged for an ID-JAG with every required parameter")
        grant_key = es256_key()
        grant_keys[claims["sub"]] = grant_key.public_key()
        now = int(__import__("time").time())
        id_jag = jwt.encode(
            {"iss": base, "sub": claims["sub"], "aud": form["audience"], "resource": form["resource"], "client_id": client_id,
             "iat": now, "exp": now + 300, "jti": secrets.token_hex(8)},
            grant_key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        return json_reply(200, {"access_token": id_jag, "issued_token_type": ID_JAG, "token_type": "N_A"})

    idp.handle = idp_handle

    def on_token(run, auth, request, form):
        if parse_basic(request.header("Authorization")) != (client_id, secret):
            run.check("complete-flow-jwt-bearer", False, "client_secret_basic authentication missing or wrong")
            return json_reply(401, {"error": "invalid_client"})
        assertion = form.get("assertion")
        if not assertion:
            run.check("complete-flow-jwt-bearer", False, "no assertion in the JWT bearer grant")
            return json_reply(400, {"error": "invalid_request"})
        if jwt.get_unverified_header(assertion).get("typ") != "oauth-id-jag+jwt":
            run.check("complete-flow-jwt-bearer", False, "the assertion is not typed oauth-id-jag+jwt")
            return json_reply(400, {"error": "invalid_grant"})
        issuer = auth.issuer.rstrip("/")
        try:
            unverified = jwt.decode(assertion, options={"verify_signature": False})
            claims = jwt.decode(assertion, grant_keys[unverified["sub"]], algorithms=["ES256"], audience=[issuer, issuer + "/"], leeway=30)
        except (KeyError, jwt.PyJWTError) as error:
            run.check("complete-flow-jwt-bearer", False, f"the ID-JAG does not verify: {error!r}")
            return json_reply(400, {"error": "invalid_grant"})
        if claims.get("client_id") != client_id:
            run.check("complete-flow-jwt-bearer", False, "the ID-JAG's client_id is not the authenticated client")
            return json_reply(400, {"error": "invalid_grant"})
        if claims.get("resource") != holder["resource"].base + "/mcp":
            run.check("complete-flow-jwt-bearer", False, f"the ID-JAG's resource {claims.get('resource')} is not the MCP server")
            return json_reply(400, {"error": "invalid_grant"})
        run.check("complete-flow-jwt-bearer", True, "client authenticated, ID-JAG verified, access token issued")
        return None

    auth, resource = standard(run, grant_types=[JWT_BEARER], auth_methods=["client_secret_basic"], on_token=on_token)
    holder["resource"] = resource
    now = int(__import__("time").time())
    id_token = jwt.encode({"iss": idp.url, "sub": user, "email": user, "aud": idp_client_id, "iat": now, "exp": now + 3600},
                          idp_key, algorithm="ES256")
    run.context = {
        "client_id": client_id, "client_secret": secret, "issuer": auth.issuer, "idp_client_id": idp_client_id,
        "idp_id_token": id_token, "idp_issuer": idp.url, "idp_token_endpoint": f"{idp.url}/token",
    }

    def finish(run):
        for check_id, what in (("complete-flow-token-exchange", "token exchange"), ("complete-flow-jwt-bearer", "JWT bearer grant")):
            if not run.has(check_id):
                run.check(check_id, False, f"the client made no {what}")

    run.finish = finish


def dpop_scenario(name, nonce):
    @scenario(name)
    def build(run):
        jtis = set()

        def guard(resource, request, method):
            scheme, _, token = (request.header("Authorization") or "").partition(" ")
            info = run.tokens.get(token)
            if info is None:
                return resource.challenge(401, "invalid_token", "Missing or unknown access token", scheme="DPoP")
            run.check("dpop-auth-scheme", scheme == "DPoP", "the DPoP scheme, not Bearer", scheme=scheme)
            try:
                jkt, claims = verify_dpop_proof(request.header("DPoP"), request.method, resource.base + "/mcp", access_token=token)
            except ProofError as error:
                run.check("dpop-fresh-proof", False, str(error))
                return resource.challenge(401, "invalid_dpop_proof", str(error), scheme="DPoP")
            if jkt != info["jkt"]:
                run.check("dpop-fresh-proof", False, "proof key is not the token's")
                return resource.challenge(401, "invalid_token", "token bound to another key", scheme="DPoP")
            fresh = claims["jti"] not in jtis
            jtis.add(claims["jti"])
            run.check("dpop-fresh-proof", fresh, "a fresh proof (new jti) on each request")
            if nonce and claims.get("nonce") != RS_DPOP_NONCE:
                run.check("dpop-rs-nonce-challenged", "INFO", "use_dpop_nonce at the MCP server")
                refusal = resource.challenge(401, "use_dpop_nonce", "Resource server requires a DPoP nonce", scheme="DPoP")
                refusal.headers.append(("DPoP-Nonce", RS_DPOP_NONCE))
                return refusal
            if nonce:
                run.check("dpop-rs-nonce-honored", True, "the retried request carried the nonce")
            return None

        def finish(run):
            run.check("dpop-token-acquired", run.has("dpop-token-request-proof"), "a DPoP-bound token was requested")
            if nonce:
                for check_id in ("dpop-as-nonce-honored", "dpop-rs-nonce-honored"):
                    run.check(check_id + "-seen", run.has(check_id), f"{check_id} happened")

        standard(run, {"guard": guard}, dpop=True, dpop_nonce=nonce)
        run.finish = finish


dpop_scenario("dpop", nonce=False)
dpop_scenario("dpop-nonce", nonce=True)


@scenario("resource-mismatch")
def resource_mismatch(run):
    standard(run, {"prm_resource": "https://evil.example.com/mcp"})
    run.finish = require_no(run, "resource-mismatch-rejected", {"authorization-request", "client-registration"}, "nothing done with a mismatched resource")


@scenario("offline-access-scope")
def offline_access_scope(run):
    def on_register(run, body):
        grant_types = body.get("grant_types") or []
        run.check("client-metadata-grant-types", "refresh_token" in grant_types, "refresh_token in grant_types", grant_types=grant_types)
        return {"client_secret": None, "token_endpoint_auth_method": "none"}

    def on_authorize(run, query):
        scopes = (query.get("scope") or "").split()
        run.check("offline-access-requested", "offline_access" in scopes, "offline_access when the server lists it", scope=query.get("scope"))

    standard(
        run,
        {"required_scopes": ["mcp:basic"], "scopes_supported": ["mcp:basic"]},
        scopes_supported=["mcp:basic", "offline_access"],
        on_register=on_register,
        on_authorize=on_authorize,
    )


@scenario("offline-access-not-supported")
def offline_access_not_supported(run):
    def on_authorize(run, query):
        scopes = (query.get("scope") or "").split()
        run.check("offline-access-not-requested", "offline_access" not in scopes, "no offline_access the server does not list", scope=query.get("scope"))

    standard(
        run,
        {"required_scopes": ["mcp:basic", "mcp:read"], "scopes_supported": ["mcp:basic", "mcp:read"]},
        scopes_supported=["mcp:basic", "mcp:read"],
        on_authorize=on_authorize,
    )


@scenario("authorization-server-migration")
def authorization_server_migration(run):
    leaked = "as1-client-id-LEAKED-IF-SEEN-AT-AS2"
    as1 = AuthServer(run, name="as1", on_register=lambda run, body: {"client_id": leaked, "client_secret": "as1-client-secret"})

    def as2_authorize(run, query):
        if query.get("client_id") == leaked:
            run.check("no-reuse-of-previous-client", False, "AS1's client id at AS2's authorization endpoint")

    def as2_token(run, auth, request, form):
        basic = parse_basic(request.header("Authorization"))
        if form.get("client_id") == leaked or (basic and basic[0] == leaked):
            run.check("no-reuse-of-previous-client", False, "AS1's client id at AS2's token endpoint")
        return None

    def as2_register(run, body):
        run.check("reregister-on-as-change", True, "registered at AS2")
        return {"client_id": "as2-client-id", "client_secret": "as2-client-secret"}

    as2 = AuthServer(run, name="as2", on_register=as2_register, on_authorize=as2_authorize, on_token=as2_token)
    run.state["migrated"] = False

    def guard(resource, request, method):
        if lifecycle_is_free(method):
            return None
        info = bearer_token(run, request)
        if info is None:
            return resource.challenge(401, "invalid_token", "Missing or unknown access token", scope="mcp:basic")
        if not run.state["migrated"]:
            run.state["migrated"] = True  # the next request finds the resource moved to AS2
            return None
        if info["server"] != "as2":
            return resource.challenge(401, "invalid_token", "authorization server has changed", scope="mcp:basic")
        return None

    Resource(run, lambda: [as2.identifier if run.state["migrated"] else as1.identifier], guard=guard)

    def finish(run):
        if not run.has("reregister-on-as-change"):
            run.check("reregister-on-as-change", False, "no registration at AS2")
        if not run.has("no-reuse-of-previous-client"):
            run.check("no-reuse-of-previous-client", True, "AS1's client never seen at AS2")

    run.finish = finish


def iss_scenario(name, supported, in_redirect, accept):
    @scenario(name)
    def build(run):
        standard(run, iss_supported=supported, iss_in_redirect=in_redirect)
        if accept:
            run.finish = require(run, "iss-accepted", "token-request", "the client went on to the token endpoint")
        else:
            run.finish = require_no(run, "iss-rejected", {"token-request"}, "the code was not redeemed")


iss_scenario("iss-supported", True, "correct", accept=True)
iss_scenario("iss-not-advertised", None, "omit", accept=True)
iss_scenario("iss-supported-missing", True, "omit", accept=False)
iss_scenario("iss-wrong-issuer", True, "wrong", accept=False)
iss_scenario("iss-unexpected", None, "wrong", accept=False)
iss_scenario("iss-normalized", True, "normalized", accept=False)


@scenario("metadata-issuer-mismatch")
def metadata_issuer_mismatch(run):
    standard(run, metadata_issuer="https://attacker.example.com", route_prefix="/mismatched-as", issuer_path="")
    run.finish = require_no(
        run,
        "metadata-issuer-validated",
        {"client-registration", "authorization-request", "token-request"},
        "nothing of the mismatched metadata was used",
    )


@scenario("expired-session")
def expired_session(run):
    """Not from the suite: a session whose access tokens live 36 s, at a server that does not
    rotate refresh tokens, for the side-by-side test with the MCP Swift SDK's own authorizer
    (which takes loopback authorization servers over https only, hence the https metadata)."""
    auth, _ = standard(run, advertise_https=True, lifetime=36, rotate=False)
    run.state["auth"] = auth


def earlier_session(run):
    """A session signed in before this run (a client resumed after a relaunch): a registered
    client id, an access token and a refresh token of the run's authorization server."""
    auth = run.state["auth"]
    token, refresh = f"{auth.name}-token-{secrets.token_hex(8)}", f"{auth.name}-refresh-{secrets.token_hex(8)}"
    run.tokens[token] = {"scopes": [], "jkt": None, "server": auth.name}
    auth.refresh_tokens[refresh] = []
    reply = {"client_id": "earlier-client", "access_token": token, "refresh_token": refresh}
    return json_reply(201, {**reply, "token_endpoint": auth.endpoint("token"), "issuer": auth.issuer})


# MARK: The project's own scenarios (not in the suite): what a real server does that a probe misses


@scenario("authreq-get-405-metadata-only-in-challenge")
def get_405_metadata_only_in_challenge(run):
    """A Streamable HTTP server without an event stream: GET of the MCP endpoint is 405 whatever
    the credential, its metadata lives only at the URL its 401 names, and the 401's scope differs
    from the metadata's. Only a client that reads the 401 it got signs in, asking for its scope."""

    def on_authorize(run, query):
        scopes = (query.get("scope") or "").split()
        run.check(
            "scope-from-the-401", "mcp:tools" in scopes and "mcp:other" not in scopes,
            "the scope of the challenge the server sent", scope=query.get("scope"))

    auth = AuthServer(run, on_authorize=on_authorize)

    def guard(resource, request, method):
        if request.method == "GET":
            if not request.header("Authorization"):
                run.check("no-probe-of-the-mcp-endpoint", False, "the client sent a GET of its own without a credential")
            return Reply(405, b"", [("Allow", "POST")])
        return Resource.bearer(resource, request, method)

    Resource(
        run, lambda: [auth.identifier], prm_path="/private/prm.json", scopes_supported=["mcp:other", "mcp:tools"],
        required_scopes=["mcp:tools"], scope_in_challenge=True, guard=guard)
    run.finish = require(run, "token-request-made", "token-request", "the client reached the token endpoint")


@scenario("authreq-redirect-to-another-origin")
def redirect_to_another_origin(run):
    """After the sign-in, the MCP server answers tools/list with a 307 to another origin, which
    records every credential that reaches it."""
    other = Listener()

    def elsewhere(request):
        for name in ("Authorization", "DPoP"):
            if request.header(name):
                run.check("credential-at-another-origin", False, f"{name} reached another origin", path=request.path)
        run.check("redirect-followed", "INFO", "a request reached the other origin", path=request.path)
        return json_reply(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])

    other.handle = elsewhere
    auth = AuthServer(run)

    def guard(resource, request, method):
        refusal = Resource.bearer(resource, request, method)
        if refusal is None and method == "tools/list":
            run.check("redirected", "SUCCESS", "tools/list answered with a 307 to another origin")
            return Reply(307, b"", [("Location", f"{other.url}/mcp")])
        return refusal

    Resource(run, lambda: [auth.identifier], guard=guard)
    run.context = {"other_origin": other.url}
    run.finish = require(run, "token-request-made", "token-request", "the client signed in before the redirect")


@scenario("authreq-redirect-outside-the-endpoint")
def redirect_outside_the_endpoint(run):
    """After the sign-in, the MCP server answers tools/list with a 307 to a path of its own origin
    outside /mcp (`/admin/mcp`; the first request after that, `/mcp/%2e%2e/admin/mcp`), and records
    every credential that reaches a path outside /mcp."""
    auth = AuthServer(run)
    targets = ["/admin/mcp", "/mcp/%2e%2e/admin/mcp"]

    def outside(request):
        for name in ("Authorization", "DPoP"):
            if request.header(name):
                run.check("credential-outside-the-endpoint", False, f"{name} reached {request.path}", path=request.path)
        run.check("redirect-followed", "INFO", "a request reached a path outside /mcp", path=request.path)
        return json_reply(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])

    def guard(resource, request, method):
        refusal = Resource.bearer(resource, request, method)
        if refusal is None and method == "tools/list":
            target = targets[0] if len(targets) == 1 else targets.pop(0)
            run.check("redirected", "SUCCESS", f"tools/list answered with a 307 to {target} on the same origin")
            return Reply(307, b"", [("Location", target)])
        return refusal

    Resource(run, lambda: [auth.identifier], guard=guard, fallback=outside)
    run.finish = require(run, "token-request-made", "token-request", "the client signed in before the redirect")


# MARK: Control


def start(body):
    name = body.get("scenario")
    if name not in SCENARIOS:
        return json_reply(404, {"error": "unknown scenario", "scenarios": sorted(SCENARIOS)})
    run = Run(name)
    SCENARIOS[name](run)
    return run, {"server_url": run.server_url, "context": run.context}


def session(run, request):
    if request.method != "POST" or "auth" not in run.state:
        return json_reply(404, {"error": "this scenario has no earlier session"})
    return earlier_session(run)


if __name__ == "__main__":
    serve_control(
        int(sys.argv[1]) if len(sys.argv) > 1 else 0, SCENARIOS, start,
        {"checks": lambda run, request: json_reply(200, run.final_checks()), "session": session},
        "conformance scenarios",
    )
