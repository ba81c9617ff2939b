"""OpenID Connect CIBA Core 1.0 for the test provider (server.py), on idpyoidc 5.0.0's
`backchannel_authentication` endpoint and CIBA grant, with a scriptable authentication device.

idpyoidc 5.0.0 has the endpoint and a token helper for `urn:openid:params:grant-type:ciba`, but
neither works as the specification says, so this file adds the smallest shims on its classes:
- the endpoint answers in the URL's query (its `response_placement` is "url"); §7.3 wants JSON
  in the body, which the Flask route writes from idpyoidc's `response_args`;
- an unknown `login_hint` is `invalid_request` there; §13 says `unknown_user_id`;
- the token helper compares a client's session keys with a bare grant id, so it never finds the
  user's authentication (it answers "No authentication found" or "More then one authentication
  found"), and it reads a `branch_id` it never sets, so no CIBA token request can succeed; it
  has no `authorization_pending`, `slow_down`, `expired_token` or `access_denied` (§11) and
  lets an `auth_req_id` be redeemed twice. `CibaGrant` keeps idpyoidc's minting and answers
  §11's errors from the state this file keeps per request;
- idpyoidc's PKCE add-on reads every token request that is not one of its known kinds as a code
  exchange ("Unknown access grant"): a CIBA token request passes it by;
- idpyoidc sends no ping (§10.2): the device sends it when the user decides, to the client's
  `backchannel_client_notification_endpoint`, with the request's `client_notification_token`.

The user's side is the test routes: POST /test/ciba/decide approves or denies every pending
request of a client, as the user would on their phone (with a ping in ping mode, or a wrong one);
GET /test/ciba/requests/<client_id> shows what the provider received and every poll's time.
Neither shows an `auth_req_id` or a notification token. A client is set up for CIBA with
{"ciba": {"mode": "poll" | "ping", "notification_endpoint": URL, "slow_down": N (the first N
polls answer slow_down), "expires_in": S, "interval": S}} at POST /test/clients.
"""

import json
import threading
import time
import urllib.error
import urllib.request

from idpyoidc.message.oauth2 import ResponseMessage
from idpyoidc.server.authn_event import create_authn_event
from idpyoidc.server.oidc.backchannel_authentication import BackChannelAuthentication, CIBATokenHelper
from idpyoidc.server.user_authn.authn_context import INTERNETPROTOCOLPASSWORD

CIBA_GRANT = "urn:openid:params:grant-type:ciba"
LOCK = threading.RLock()
REQUESTS = {}  # auth_req_id -> the request's state (below)
USERS = {}  # login_hint -> user id, set by install()


class CibaAuthentication(BackChannelAuthentication):
    """idpyoidc's endpoint, with the user found by `login_hint` (a user name or e-mail address)
    and §13's `unknown_user_id` for a hint that names nobody."""

    def do_request_user(self, request):
        hint = request.get("login_hint")
        if hint is not None and "id_token_hint" not in request and "login_hint_token" not in request:
            return USERS[hint]  # KeyError: unknown_user_id (below)
        user = BackChannelAuthentication.do_request_user(self, request)
        if "id_token_hint" in request:
            # idpyoidc takes the hint's `sub` for the user id; its subjects are hashes of user ids.
            manager = self.upstream_get("context").session_manager
            subjects = {manager.sub_func["public"](uid, salt=manager.get_salt(), sector_identifier=""): uid
                        for uid in set(USERS.values())}
            return subjects[user]
        return user

    def process_request(self, request=None, http_info=None, **kwargs):
        try:
            if not self.do_request_user(request):
                raise KeyError("no user")
        except KeyError:
            return ResponseMessage(error="unknown_user_id", error_description="The hint names no user this provider knows.")
        return BackChannelAuthentication.process_request(self, request, http_info, **kwargs)


class CibaGrant(CIBATokenHelper):
    """The CIBA grant (§10.1, §11): idpyoidc's minting, with the request's state from REQUESTS."""

    def post_parse_request(self, request, client_id="", **kwargs):
        now = time.time()
        with LOCK:
            entry = REQUESTS.get(request.get("auth_req_id", ""))
            if entry is None or entry["client_id"] != request.get("client_id"):
                return self.error_cls(error="invalid_grant", error_description="Unknown auth_req_id.")
            entry["polls"].append(now)
            if entry["redeemed"]:
                return self.error_cls(error="invalid_grant", error_description="The auth_req_id was already redeemed.")
            if now >= entry["expires_at"]:
                entry["answers"].append("expired_token")
                return self.error_cls(error="expired_token", error_description="The request expired.")
            if entry["state"] == "denied":
                entry["answers"].append("access_denied")
                return self.error_cls(error="access_denied", error_description="The user denied the request.")
            if entry["state"] == "pending":
                if entry["slow_down"] > 0:
                    entry["slow_down"] -= 1
                    entry["answers"].append("slow_down")
                    return self.error_cls(error="slow_down", error_description="Poll less often.")
                entry["answers"].append("authorization_pending")
                return self.error_cls(error="authorization_pending", error_description="The user has not decided yet.")
            entry["redeemed"] = True
            entry["answers"].append("tokens")
            session_id = entry["approved_session"]
        manager = self.endpoint.upstream_get("context").session_manager
        request["_session_path"] = list(manager.decrypt_session_id(session_id))
        request["_session_id"] = session_id
        return request

    def _get_session_info(self, request, session_manager):
        info, grant = CIBATokenHelper._get_session_info(self, request, session_manager)
        info["branch_id"] = request["_session_id"]  # idpyoidc 5.0.0 reads it and never sets it
        return info, grant


def install(app, server, users, stats, stats_lock):
    """Adds the endpoint's route and the device's test routes to `app`."""
    from flask import jsonify, make_response, request

    token = server.get_endpoint("token")

    def passing_ciba(check):
        def checked(request, client_id="", **kwargs):
            if request.get("grant_type") == CIBA_GRANT:
                return request
            return check(request, client_id, **kwargs)
        return checked

    token.post_parse_request = [
        check if check == token._post_parse_request else passing_ciba(check) for check in token.post_parse_request]

    for user_id, claims in users.items():
        USERS[user_id] = user_id
        USERS[claims["email"]] = user_id

    def json_response(body, status):
        response = make_response(json.dumps(body), status)
        response.headers["Content-Type"] = "application/json"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.post("/backchannel")
    def backchannel_authentication():
        endpoint = server.get_endpoint("backchannel_authentication")
        form = request.form.to_dict()
        client_id = form.get("client_id") or (request.authorization.username if request.authorization else "")
        client = server.context.cdb.get(client_id or "", {})
        settings = client.get("ciba", {})
        with stats_lock:
            stats[client_id or "?"]["backchannel"] += 1
        info = {"headers": {k.lower(): v for k, v in request.headers.items()}, "method": "POST", "url": request.url}
        mode = settings.get("mode", "poll")
        try:
            parsed = endpoint.parse_request(dict(form), http_info=info, verify_args={"mode": mode})
        except Exception as err:
            return json_response({"error": "invalid_request", "error_description": str(err)}, 400)
        if isinstance(parsed, ResponseMessage) and "error" in parsed:
            status = 401 if parsed["error"] == "invalid_client" else 400
            return json_response(parsed.to_dict(), status)
        if "openid" not in (parsed.get("scope") or []):
            return json_response({"error": "invalid_scope", "error_description": "CIBA needs openid."}, 400)
        result = endpoint.process_request(parsed, http_info=info)
        if isinstance(result, ResponseMessage):
            return json_response(result.to_dict(), 400)
        args = result["response_args"]
        expires_in = int(settings.get("expires_in", args["expires_in"]))
        if form.get("requested_expiry", "").isdigit():
            expires_in = min(expires_in, int(form["requested_expiry"]))
        interval = int(settings.get("interval", args["interval"]))
        try:
            details = json.loads(form["authorization_details"]) if "authorization_details" in form else None
        except ValueError:
            return json_response({"error": "invalid_authorization_details", "error_description": "Not JSON."}, 400)
        with LOCK:
            REQUESTS[args["auth_req_id"]] = {
                "client_id": parsed["client_id"], "user": endpoint.do_request_user(parsed), "request": parsed,
                "state": "pending", "redeemed": False, "mode": mode,
                "expires_at": time.time() + expires_in, "interval": interval,
                "slow_down": int(settings.get("slow_down", 0)), "polls": [], "answers": [],
                "notification_token": form.get("client_notification_token"),
                "received": {
                    "login_hint": form.get("login_hint"), "scope": form.get("scope"),
                    "binding_message": form.get("binding_message"), "user_code": form.get("user_code"),
                    "requested_expiry": form.get("requested_expiry"), "acr_values": form.get("acr_values"),
                    "authorization_details": details, "mode": mode,
                    "has_notification_token": "client_notification_token" in form,
                    "has_id_token_hint": "id_token_hint" in form,
                },
                "received_at": time.time(),
            }
        return json_response({"auth_req_id": args["auth_req_id"], "expires_in": expires_in, "interval": interval}, 200)

    def ping(entry, auth_req_id, kind):
        """Notifies the client (§10.2); `kind` "right", "wrong_bearer" or "unknown_id". Returns
        the status the client's endpoint answered."""
        target = server.context.cdb[entry["client_id"]].get("ciba", {}).get("notification_endpoint")
        bearer = entry["notification_token"] if kind != "wrong_bearer" else entry["notification_token"][::-1] + "x"
        body = {"auth_req_id": auth_req_id if kind != "unknown_id" else auth_req_id[::-1] + "x"}
        ping_request = urllib.request.Request(
            target, data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer " + bearer})
        try:
            with urllib.request.urlopen(ping_request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code
        except Exception:
            return 0

    @app.post("/test/ciba/decide")
    def decide():
        """The user decides on their device: {"client_id", "action": "approve" | "deny",
        "ping": "right" (default) | "wrong_bearer" | "unknown_id" | "none"}. A wrong ping leaves
        the request pending and undecided."""
        body = request.get_json(silent=True) or {}
        action, ping_kind = body.get("action", "approve"), body.get("ping", "right")
        with LOCK:
            pending = [(i, e) for i, e in REQUESTS.items() if e["client_id"] == body.get("client_id") and e["state"] == "pending"]
        decided, pings = 0, []
        for auth_req_id, entry in pending:
            if ping_kind in ("right", "none"):
                if action == "approve":
                    authn = create_authn_event(entry["user"], authn_info=INTERNETPROTOCOLPASSWORD)
                    session_id = server.context.session_manager.create_session(
                        authn, entry["request"], entry["user"], client_id=entry["client_id"])
                    with LOCK:
                        entry["approved_session"], entry["state"] = session_id, "approved"
                else:
                    with LOCK:
                        entry["state"] = "denied"
                decided += 1
            if entry["mode"] == "ping" and ping_kind != "none":
                pings.append(ping(entry, auth_req_id, ping_kind))
        return jsonify(decided=decided, pings=pings)

    @app.get("/test/ciba/payment")
    def payment():
        """A resource that needs an approved payment: a token of this provider whose CIBA request
        carried an authorization detail of type payment_initiation; else 403
        insufficient_authorization_details with the detail it needs."""
        authorization = request.headers.get("Authorization", "")
        try:
            token = authorization[7:] if authorization[:7].lower() == "bearer " else ""
            manager = server.context.session_manager
            info = manager.get_session_info_by_token(token, handler_key="access_token")
        except Exception:
            return make_response("", 401, {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        with LOCK:
            approved = [e for e in REQUESTS.values() if e.get("approved_session") == info["branch_id"]]
        details = (approved[0]["received"]["authorization_details"] or []) if approved else []
        if not any(d.get("type") == "payment_initiation" for d in details):
            needed = json.dumps([{"type": "payment_initiation", "instructedAmount": {"currency": "EUR", "amount": "120.00"}}])
            challenge = 'Bearer error="insufficient_authorization_details", authorization_details="{}"'.format(
                needed.replace("\\", "\\\\").replace('"', '\\"'))
            return make_response("", 403, {"WWW-Authenticate": challenge})
        return jsonify(paid=True, sub=info.get("user_id"))

    @app.get("/test/ciba/requests/<client_id>")
    def received(client_id):
        """What the provider received from the client, oldest first, with each request's polls
        (seconds after it was received) and what each poll was answered."""
        with LOCK:
            entries = sorted((e for e in REQUESTS.values() if e["client_id"] == client_id), key=lambda e: e["received_at"])
            return jsonify([
                dict(e["received"], state=e["state"], redeemed=e["redeemed"], answers=list(e["answers"]),
                     polls=[round(t - e["received_at"], 3) for t in e["polls"]],
                     expires_in=round(e["expires_at"] - e["received_at"], 3), interval=e["interval"])
                for e in entries])
