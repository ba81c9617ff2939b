"""Loopback HTTP for the project's scriptable test servers (Tests/MCPServer/scenarios.py,
Tests/ConformanceProvider/provider.py): a server per port, requests and replies, on Python's
standard library only."""

import base64
import html
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Request:
    def __init__(self, method, target, headers, body, client_certificate=None):
        parts = urllib.parse.urlsplit(target)
        # The DER of the certificate the client presented in the TLS handshake (a TLS listener's).
        self.client_certificate = client_certificate
        self.method = method
        self.path = parts.path
        self.query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
        self.headers = headers
        self.body = body

    def form(self):
        return {k: v[0] for k, v in urllib.parse.parse_qs(self.body.decode(errors="replace")).items()}

    def json(self):
        try:
            value = json.loads(self.body or b"{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def header(self, name):
        return self.headers.get(name)


class Reply:
    def __init__(self, status, body=b"", headers=()):
        self.status, self.body, self.headers = status, body, list(headers)


def json_reply(status, value, headers=()):
    return Reply(status, json.dumps(value).encode(), [("Content-Type", "application/json"), *headers])


def redirect(url):
    return Reply(302, b"", [("Location", url)])


def form_post(action, fields):
    """An HTML page whose form posts `fields` to `action` as soon as it loads (OAuth 2.0 Form Post
    Response Mode), as a provider answers response_mode=form_post(.jwt)."""
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}"/>' for name, value in fields)
    page = (f'<!doctype html><html><body onload="document.forms[0].submit()">'
            f'<form method="post" action="{html.escape(action)}">{inputs}</form></body></html>')
    return Reply(200, page.encode(), [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")])


class Listener:
    """One loopback HTTP server on a port of its own; `handle(request)` answers (None: 404).

    With `tls` (an `ssl.SSLContext` for a server), it speaks HTTPS: the handshake happens in the
    request's own thread, a failed one is counted in `handshake_failures` (the client sees the
    TLS alert), and each request carries the client's certificate, if any."""

    def __init__(self, port=0, tls=None):
        self.handle = lambda request: None
        self.handshake_failures = 0
        self.failure_lock = threading.Lock()
        listener = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                if tls is not None:
                    try:
                        self.request.do_handshake()
                    except (OSError, ValueError):
                        with listener.failure_lock:
                            listener.handshake_failures += 1
                        raise
                super().setup()

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                certificate = self.connection.getpeercert(binary_form=True) if tls is not None else None
                request = Request(self.command, self.path, self.headers, body, certificate)
                try:
                    reply = listener.handle(request) or json_reply(404, {"error": "not_found"})
                except Exception as error:  # a scenario's bug shows in the reply, not as a hang
                    reply = json_reply(500, {"error": "server_error", "error_description": repr(error)})
                self.send_response(reply.status)
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = do_DELETE = do_PUT = answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True, do_handshake_on_connect=False)
            # A failed handshake is the client's answer, not a server error to print.
            self.server.handle_error = lambda request, address: None
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def parse_basic(header):
    """(client_id, secret) of an HTTP Basic header, each form-url-decoded (RFC 6749 §2.3.1)."""
    if not header or not header.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode()
    except ValueError:
        return None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        return None
    return urllib.parse.unquote_plus(client_id), urllib.parse.unquote_plus(secret)


class CheckLog:
    """What a scriptable server saw the client do, as checks the tests read: `status` SUCCESS,
    FAILURE, WARNING or INFO (`True` and `False` stand for the first two)."""

    def __init__(self):
        self.checks = []
        self.lock = threading.RLock()

    def check(self, check_id, status, description="", **details):
        if status is True or status is False:
            status = "SUCCESS" if status else "FAILURE"
        with self.lock:
            self.checks.append({"id": check_id, "status": status, "description": description, "details": details})

    def has(self, check_id):
        with self.lock:
            return any(c["id"] == check_id for c in self.checks)


def serve_control(port, catalogue, start, actions, label):
    """Runs a scriptable server's control API on `port` until the process ends: `GET /test/health`,
    `GET /runs` (the sorted `catalogue`), `POST /runs` (`start(body)` answers `(run, reply)` or a
    refusal `Reply`), and `/runs/ID/ACTION` (`actions[ACTION](run, request)`)."""
    runs = {}

    def control(request):
        if request.path == "/test/health":
            return json_reply(200, {"status": "ok"})
        if request.path == "/runs" and request.method == "GET":
            return json_reply(200, sorted(catalogue))
        if request.path == "/runs" and request.method == "POST":
            started = start(request.json())
            if isinstance(started, Reply):
                return started
            run, reply = started
            runs[run.id] = run
            return json_reply(201, {"id": run.id, **reply})
        match = re.fullmatch(r"/runs/([0-9a-f]+)/([a-z]+)", request.path)
        if match and match.group(1) in runs and match.group(2) in actions:
            return actions[match.group(2)](runs[match.group(1)], request)
        return None

    listener = Listener(port)
    listener.handle = control
    print(f"{label} on {listener.url}", flush=True)
    threading.Event().wait()
