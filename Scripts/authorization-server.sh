# Starts the test authorization server (Tests/AuthorizationServer) on a free loopback port.
# Source this file, then call: start_authorization_server [ACCESS_TOKEN_LIFETIME_SECONDS]
# It sets AUTHREQ_TEST_SERVER to the server's URL and stops the server when the shell exits.
#
# On a fresh machine it creates a virtual environment inside the build folder
# (.build/authorization-server-venv) and installs the pinned requirements from PyPI.

AUTHREQ_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AUTHREQ_VENV="$AUTHREQ_ROOT/.build/authorization-server-venv"
AUTHREQ_REQUIREMENTS="$AUTHREQ_ROOT/Tests/AuthorizationServer/requirements.txt"

# Creates the virtual environment VENV (once) and installs REQUIREMENTS into it when they changed.
# Usage: install_python_requirements VENV REQUIREMENTS "what it is for"
install_python_requirements() {
    local venv="$1" requirements="$2" label="$3"
    local python="${PYTHON:-python3}"
    command -v "$python" >/dev/null || { echo "error: $python is needed for $label" >&2; return 1; }
    if [ ! -x "$venv/bin/python" ]; then
        echo "Creating a Python virtual environment in ${venv#"$AUTHREQ_ROOT"/}" >&2
        mkdir -p "$AUTHREQ_ROOT/.build"
        "$python" -m venv "$venv" || return 1
    fi
    if ! cmp -s "$requirements" "$venv/installed-requirements.txt"; then
        echo "Installing the pinned requirements of $label" >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" || return 1
        cp "$requirements" "$venv/installed-requirements.txt"
    fi
}

# Waits until URL/test/health answers, or the process PID ends (then prints LOG).
# Usage: wait_for_health URL PID LOG "what it is"
wait_for_health() {
    local url="$1" pid="$2" log="$3" label="$4" attempt
    for attempt in $(seq 1 150); do
        if "$AUTHREQ_VENV/bin/python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/test/health', timeout=1)" "$url" 2>/dev/null; then
            echo "$label listening on $url" >&2
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        sleep 0.2
    done
    echo "error: $label did not start; its log:" >&2
    cat "$log" >&2
    return 1
}

install_authorization_server() {
    install_python_requirements "$AUTHREQ_VENV" "$AUTHREQ_REQUIREMENTS" "the test authorization server"
}

# Runs every registered command when the shell exits, however it exits (the servers the test
# scripts start are stopped together).
AUTHREQ_EXIT_COMMANDS="${AUTHREQ_EXIT_COMMANDS:-}"
authreq_on_exit() {
    AUTHREQ_EXIT_COMMANDS="$1; $AUTHREQ_EXIT_COMMANDS"
    trap 'eval "$AUTHREQ_EXIT_COMMANDS"' EXIT
    trap 'eval "$AUTHREQ_EXIT_COMMANDS"; trap - EXIT; exit 130' INT TERM
}

# Stops the process whose id the variable named $1 holds (if any) and empties the variable.
stop_process_in() {
    local pid="${!1:-}"
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        eval "$1=''"
    fi
}

stop_authorization_server() { stop_process_in AUTHREQ_SERVER_PID; }

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
    wait_for_health "$AUTHREQ_TEST_SERVER" "$AUTHREQ_SERVER_PID" "$log" "Test authorization server (Authlib)"
}
