# Starts glewlwyd (Debian's package, an OpenID provider written in C) for the end-to-end tests of
# request objects, RAR and PAR against a second, independent implementation: a new SQLite
# database and configuration inside the build folder (.build/glewlwyd), a free loopback port, then
# Tests/Glewlwyd/provision.py sets it up through its administration API.
# Source this file after Scripts/mcp-server.sh (the provisioning runs in that virtual environment),
# then call: start_glewlwyd
# It sets AUTHREQ_TEST_GLEWLWYD to the JSON file the tests read and stops the server when the shell
# exits. On a machine without glewlwyd it installs Debian's `glewlwyd` package (as root).

AUTHREQ_GLEWLWYD_DIR="$AUTHREQ_ROOT/.build/glewlwyd"
AUTHREQ_GLEWLWYD_SCHEMA=/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3

install_glewlwyd() {
    # The package depends on sqlite3, which the database is created with.
    if ! command -v glewlwyd >/dev/null || ! command -v sqlite3 >/dev/null || [ ! -f "$AUTHREQ_GLEWLWYD_SCHEMA" ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "Installing glewlwyd from Debian's packages" >&2
            apt-get update -qq >&2 || return 1
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq glewlwyd >/dev/null || return 1
        else
            echo "error: the tests need glewlwyd: apt-get install glewlwyd" >&2
            return 1
        fi
    fi
}

stop_glewlwyd() { stop_process_in AUTHREQ_GLEWLWYD_PID; }

# Writes a configuration for PORT and EXTERNAL_URL into DIR with a new database, starts glewlwyd
# and waits until it answers. Usage: launch_glewlwyd DIR PORT EXTERNAL_URL PID_VARIABLE
launch_glewlwyd() {
    local dir="$1" port="$2" external_url="$3" pid_variable="$4" attempt pid
    local python="$AUTHREQ_MCP_VENV/bin/python"
    rm -rf "$dir" && mkdir -p "$dir"
    sqlite3 "$dir/glewlwyd.db" <"$AUTHREQ_GLEWLWYD_SCHEMA" || return 1
    cat >"$dir/glewlwyd.conf" <<CONF
port=$port
bind_address="127.0.0.1"
external_url="$external_url"
login_url="login.html"
static_files_path="/usr/share/glewlwyd/webapp/"
api_prefix="api"
allow_origin="*"
log_mode="console"
log_level="DEBUG"
cookie_secure=0
session_expiration=86400
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="/usr/lib/glewlwyd/user"
client_module_path="/usr/lib/glewlwyd/client"
user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
plugin_module_path="/usr/lib/glewlwyd/plugin"
use_secure_connection=false
secure_connection_key_file=""
secure_connection_pem_file=""
hash_algorithm="SHA512"
database = { type = "sqlite3" path = "$dir/glewlwyd.db" };
CONF
    glewlwyd --config-file="$dir/glewlwyd.conf" >"$dir/glewlwyd.log" 2>&1 &
    pid=$!
    eval "$pid_variable=$pid"
    for attempt in $(seq 1 100); do
        if "$python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
            "http://127.0.0.1:$port/config/" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null || [ "$attempt" = 100 ]; then
            echo "error: glewlwyd did not start; its log:" >&2
            cat "$dir/glewlwyd.log" >&2
            return 1
        fi
        sleep 0.2
    done
}

start_glewlwyd() {
    install_glewlwyd || return 1
    install_mcp_server || return 1
    local python="$AUTHREQ_MCP_VENV/bin/python" dir="$AUTHREQ_GLEWLWYD_DIR" port redirect_port
    port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    # glewlwyd compares redirect URIs exactly, port included, so the tests' loopback receiver
    # listens on one registered port. It is taken below the kernel's ephemeral range, so no
    # listener or outgoing connection of the other tests can be given it in the meantime.
    redirect_port="$("$python" - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for port in random.sample(range(max(low - 12000, 1024), low), 200):
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break
PY
)"
    [ -n "$redirect_port" ] || { echo "error: no free loopback port for glewlwyd's redirect URI" >&2; return 1; }
    authreq_on_exit stop_glewlwyd
    launch_glewlwyd "$dir" "$port" "http://127.0.0.1:$port" AUTHREQ_GLEWLWYD_PID || return 1
    "$python" "$AUTHREQ_ROOT/Tests/Glewlwyd/provision.py" "http://127.0.0.1:$port" "$dir/test-setup.json" \
        "http://127.0.0.1:$redirect_port/callback" || { cat "$dir/glewlwyd.log" >&2; return 1; }
    echo "glewlwyd $(glewlwyd --version 2>&1 | grep -o '[0-9][0-9.]*' | head -n 1) listening on http://127.0.0.1:$port" >&2
    export AUTHREQ_TEST_GLEWLWYD="$dir/test-setup.json"
}

stop_glewlwyd_mtls() { stop_process_in AUTHREQ_GLEWLWYD_MTLS_PID; }

# A second glewlwyd for mutual TLS (RFC 8705), behind nginx as its documentation says: its
# external URL is nginx's TLS origin, which asks every client for a certificate and forwards the
# one presented (PEM, in X-Client-Cert); the OpenID Connect plugin authenticates clients by it
# (tls_client_auth, self_signed_tls_client_auth) at its aliases /mtls/… and binds its tokens to
# it. nginx logs each request's path and certificate, which the tests count.
# Call after start_glewlwyd and start_authorization_server (it uses their installs and the PKI).
# It sets AUTHREQ_TEST_GLEWLWYD_MTLS to the JSON file the tests read.
start_glewlwyd_mtls() {
    local python="$AUTHREQ_MCP_VENV/bin/python" dir="$AUTHREQ_ROOT/.build/glewlwyd-mtls" port tls_port
    [ -n "${AUTHREQ_TEST_PKI:-}" ] || { echo "error: make_test_pki first (Scripts/test-pki.sh)" >&2; return 1; }
    install_nginx || return 1
    port="$(free_port)"
    tls_port="$(free_port)"
    authreq_on_exit stop_glewlwyd_mtls
    launch_glewlwyd "$dir" "$port" "https://127.0.0.1:$tls_port" AUTHREQ_GLEWLWYD_MTLS_PID || return 1
    start_tls_terminator "$tls_port" "$port" "" glewlwyd "$dir/access.log" || return 1
    AUTHREQ_MTLS_ISSUER_BASE="https://127.0.0.1:$tls_port" \
        "$python" "$AUTHREQ_ROOT/Tests/Glewlwyd/provision.py" "http://127.0.0.1:$port" "$dir/test-setup.json" \
        "http://127.0.0.1/callback" || { cat "$dir/glewlwyd.log" >&2; return 1; }
    echo "glewlwyd for mutual TLS behind nginx on https://127.0.0.1:$tls_port" >&2
    export AUTHREQ_TEST_GLEWLWYD_MTLS="$dir/test-setup.json"
}
