# Starts the test authorization server (Tests/AuthorizationServer) on a free loopback port.
# Source this file, then call: start_authorization_server [ACCESS_TOKEN_LIFETIME_SECONDS]
# It sets AUTHREQ_TEST_SERVER to the server's URL and stops the server when the shell exits.
#
# On a fresh machine it creates a virtual environment inside the build folder
# (.build/authorization-server-venv) and installs the pinned requirements from PyPI.

AUTHREQ_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AUTHREQ_VENV="$AUTHREQ_ROOT/.build/authorization-server-venv"
AUTHREQ_REQUIREMENTS="$AUTHREQ_ROOT/Tests/AuthorizationServer/requirements.txt"

install_authorization_server() {
    local python="${PYTHON:-python3}"
    command -v "$python" >/dev/null || { echo "error: $python is needed for the test authorization server" >&2; return 1; }
    if [ ! -x "$AUTHREQ_VENV/bin/python" ]; then
        echo "Creating a Python virtual environment in .build/authorization-server-venv" >&2
        mkdir -p "$AUTHREQ_ROOT/.build"
        "$python" -m venv "$AUTHREQ_VENV" || return 1
    fi
    if ! cmp -s "$AUTHREQ_REQUIREMENTS" "$AUTHREQ_VENV/installed-requirements.txt"; then
        echo "Installing the authorization server's pinned requirements" >&2
        "$AUTHREQ_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$AUTHREQ_REQUIREMENTS" || return 1
        cp "$AUTHREQ_REQUIREMENTS" "$AUTHREQ_VENV/installed-requirements.txt"
    fi
}

# Runs every registered command when the shell exits, however it exits (the servers the test
# scripts start are stopped together).
AUTHREQ_EXIT_COMMANDS="${AUTHREQ_EXIT_COMMANDS:-}"
authreq_on_exit() {
    AUTHREQ_EXIT_COMMANDS="$1; $AUTHREQ_EXIT_COMMANDS"
    trap 'eval "$AUTHREQ_EXIT_COMMANDS"' EXIT
    trap 'eval "$AUTHREQ_EXIT_COMMANDS"; trap - EXIT; exit 130' INT TERM
}

stop_authorization_server() {
    if [ -n "${AUTHREQ_SERVER_PID:-}" ]; then
        kill "$AUTHREQ_SERVER_PID" 2>/dev/null || true
        wait "$AUTHREQ_SERVER_PID" 2>/dev/null || true
        AUTHREQ_SERVER_PID=""
    fi
}

start_authorization_server() {
    local lifetime="${1:-3600}"
    install_authorization_server || return 1
    local port
    port="$("$AUTHREQ_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    local log="$AUTHREQ_ROOT/.build/authorization-server.log"
    "$AUTHREQ_VENV/bin/python" "$AUTHREQ_ROOT/Tests/AuthorizationServer/server.py" "$port" \
        --access-token-lifetime "$lifetime" >"$log" 2>&1 &
    AUTHREQ_SERVER_PID=$!
    authreq_on_exit stop_authorization_server
    export AUTHREQ_TEST_SERVER="http://127.0.0.1:$port"
    local attempt
    for attempt in $(seq 1 100); do
        if "$AUTHREQ_VENV/bin/python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/test/health', timeout=1)" "$AUTHREQ_TEST_SERVER" 2>/dev/null; then
            echo "Test authorization server (Authlib) listening on $AUTHREQ_TEST_SERVER" >&2
            return 0
        fi
        if ! kill -0 "$AUTHREQ_SERVER_PID" 2>/dev/null; then break; fi
        sleep 0.2
    done
    echo "error: the test authorization server did not start; its log:" >&2
    cat "$log" >&2
    return 1
}
