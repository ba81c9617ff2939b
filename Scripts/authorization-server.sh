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

free_port() {
    "$AUTHREQ_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

install_nginx() {
    if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "Installing nginx from Debian's packages (the TLS terminator of the mutual-TLS tests)" >&2
            apt-get update -qq >&2 || return 1
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx >/dev/null || return 1
        else
            echo "error: the mutual-TLS tests need nginx: apt-get install nginx" >&2
            return 1
        fi
    fi
}

stop_tls_terminator() { stop_process_in AUTHREQ_NGINX_PID; }

# Starts nginx on PORT in front of the Authlib server on UPSTREAM_PORT, as deployments of mutual
# TLS do: TLS with the test PKI's server certificate, every client asked for a certificate that
# nginx does not judge (`optional_no_ca`), the one presented forwarded in X-Client-Certificate
# with X-Proxy-Secret. Usage: start_tls_terminator PORT UPSTREAM_PORT SECRET
start_tls_terminator() {
    local port="$1" upstream="$2" secret="$3" dir="$AUTHREQ_ROOT/.build/nginx"
    local nginx
    nginx="$(command -v nginx || echo /usr/sbin/nginx)"
    rm -rf "$dir" && mkdir -p "$dir/temp" && chmod 700 "$dir"
    cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $AUTHREQ_TEST_PKI/server.pem;
        ssl_certificate_key $AUTHREQ_TEST_PKI/server-key.pem;
        ssl_verify_client optional_no_ca;
        location / {
            proxy_pass http://127.0.0.1:$upstream;
            proxy_set_header Host 127.0.0.1:$upstream;
            proxy_set_header X-Client-Certificate \$ssl_client_escaped_cert;
            proxy_set_header X-Proxy-Secret $secret;
        }
    }
}
CONF
    chmod 600 "$dir/nginx.conf"
    "$nginx" -c "$dir/nginx.conf" -p "$dir" >"$dir/stdout.log" 2>&1 &
    AUTHREQ_NGINX_PID=$!
    authreq_on_exit stop_tls_terminator
    local attempt
    for attempt in $(seq 1 100); do
        if "$AUTHREQ_VENV/bin/python" -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$port" 2>/dev/null; then
            echo "TLS terminator (nginx) listening on https://127.0.0.1:$port" >&2
            return 0
        fi
        kill -0 "$AUTHREQ_NGINX_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "error: nginx did not start; its log:" >&2
    cat "$dir/error.log" "$dir/stdout.log" >&2 2>/dev/null
    return 1
}

start_authorization_server() {
    local lifetime="${1:-3600}"
    install_authorization_server || return 1
    install_nginx || return 1
    if [ -z "${AUTHREQ_TEST_PKI:-}" ]; then
        source "$AUTHREQ_ROOT/Scripts/test-pki.sh"
        make_test_pki || return 1
    fi
    local port tls_port secret
    port="$(free_port)"
    tls_port="$(free_port)"
    secret="$("$AUTHREQ_VENV/bin/python" -c 'import secrets; print(secrets.token_hex(16))')"
    local log="$AUTHREQ_ROOT/.build/authorization-server.log"
    AUTHREQ_MTLS_BASE="https://127.0.0.1:$tls_port" AUTHREQ_MTLS_CA="$AUTHREQ_TEST_PKI/ca.pem" \
        AUTHREQ_PROXY_SECRET="$secret" \
        "$AUTHREQ_VENV/bin/python" "$AUTHREQ_ROOT/Tests/AuthorizationServer/server.py" "$port" \
        --access-token-lifetime "$lifetime" >"$log" 2>&1 &
    AUTHREQ_SERVER_PID=$!
    authreq_on_exit stop_authorization_server
    export AUTHREQ_TEST_SERVER="http://127.0.0.1:$port"
    wait_for_health "$AUTHREQ_TEST_SERVER" "$AUTHREQ_SERVER_PID" "$log" "Test authorization server (Authlib)" || return 1
    start_tls_terminator "$tls_port" "$port" "$secret" || return 1
    export AUTHREQ_TEST_SERVER_MTLS="https://127.0.0.1:$tls_port"
}
