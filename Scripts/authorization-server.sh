# Starts the test authorization server (Tests/AuthorizationServer) on a free loopback port.
# Source this file, then call: start_authorization_server [ACCESS_TOKEN_LIFETIME_SECONDS] [mtls]
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
    if [ ! -x /usr/sbin/nginx ] || [ ! -f /usr/lib/nginx/modules/ngx_http_perl_module.so ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "Installing nginx from Debian's packages (the TLS terminator of the mutual-TLS tests)" >&2
            apt-get update -qq >&2 || return 1
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx \
                libnginx-mod-http-perl >/dev/null || return 1
        else
            echo "error: the mutual-TLS tests need nginx: apt-get install nginx libnginx-mod-http-perl" >&2
            return 1
        fi
    fi
}

# Starts nginx on PORT in front of the server on UPSTREAM_PORT, as deployments of mutual TLS do:
# TLS with the test PKI's server certificate, every client asked for a certificate, the one
# presented forwarded to the server. For STYLE `authlib` (the default) nginx does not judge it
# (`optional_no_ca`; the shim does) and forwards it URL-encoded in X-Client-Certificate with
# X-Proxy-Secret SECRET; for `glewlwyd` nginx verifies it (the test CA, or the registered
# self-signed certificate: a refused one gets nginx's 400) and forwards it as one line of PEM in
# X-Client-Cert, as glewlwyd's documentation asks of a proxy. With
# ACCESS_LOG, each request's method, path and certificate (SHA-1 fingerprint) are logged there.
# Usage: start_tls_terminator PORT UPSTREAM_PORT SECRET [STYLE] [ACCESS_LOG]
start_tls_terminator() {
    local port="$1" upstream="$2" secret="$3" style="${4:-authlib}" access_log="${5:-off}"
    local dir="$AUTHREQ_ROOT/.build/nginx-$style" nginx forwarding pid_variable="AUTHREQ_NGINX_PID_$style"
    local modules="" perl="" verification="ssl_verify_client optional_no_ca;"
    if [ "$style" = glewlwyd ]; then
        # glewlwyd trusts the proxy to have verified the certificate (its documentation): nginx
        # does, against the test CA and the one self-signed certificate registered.
        verification="ssl_verify_client optional;
        ssl_client_certificate $AUTHREQ_TEST_PKI/client-trust.pem;
        ssl_verify_depth 2;"
        # One line: glewlwyd's HTTP server does not read a folded header ($ssl_client_cert), and
        # Apache's mod_headers forwards the certificate with its line breaks as spaces too.
        modules="load_module /usr/lib/nginx/modules/ngx_http_perl_module.so;"
        perl="perl_set \$client_certificate_line 'sub { my \$c = shift->variable(\"ssl_client_raw_cert\") // \"\"; \$c =~ s/\\s*\\n/ /g; \$c =~ s/\\s+\$//; return \$c; }';"
        forwarding="proxy_set_header X-Client-Cert \$client_certificate_line;"
    else
        forwarding="proxy_set_header X-Client-Certificate \$ssl_client_escaped_cert;
            proxy_set_header X-Proxy-Secret $secret;"
    fi
    [ "$access_log" = off ] || access_log="$access_log requests"
    local nginx
    nginx="$(command -v nginx || echo /usr/sbin/nginx)"
    rm -rf "$dir" && mkdir -p "$dir/temp" && chmod 700 "$dir"
    cat >"$dir/nginx.conf" <<CONF
$modules
daemon off;
master_process off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    $perl
    log_format requests '\$request_method \$uri \$ssl_client_fingerprint';
    access_log $access_log;
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $AUTHREQ_TEST_PKI/server.pem;
        ssl_certificate_key $AUTHREQ_TEST_PKI/server-key.pem;
        $verification
        location / {
            proxy_pass http://127.0.0.1:$upstream;
            proxy_set_header Host 127.0.0.1:$upstream;
            $forwarding
        }
    }
}
CONF
    chmod 600 "$dir/nginx.conf"
    "$nginx" -c "$dir/nginx.conf" -p "$dir" >"$dir/stdout.log" 2>&1 &
    local pid=$!
    eval "$pid_variable=$pid"
    authreq_on_exit "stop_process_in $pid_variable"
    local attempt
    for attempt in $(seq 1 100); do
        if "$AUTHREQ_VENV/bin/python" -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$port" 2>/dev/null; then
            echo "TLS terminator (nginx) listening on https://127.0.0.1:$port" >&2
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "error: nginx did not start; its log:" >&2
    cat "$dir/error.log" "$dir/stdout.log" >&2 2>/dev/null
    return 1
}

# Usage: start_authorization_server [ACCESS_TOKEN_LIFETIME_SECONDS] [mtls]
# With `mtls`, nginx runs in front of it as the mutual-TLS tests' TLS terminator (installed from
# Debian's packages when missing; the test PKI made when AUTHREQ_TEST_PKI is unset), and
# AUTHREQ_TEST_SERVER_MTLS is its origin. Without, nothing but Python is needed (Scripts/run-example).
start_authorization_server() {
    local lifetime="${1:-3600}" mtls="${2:-}"
    install_authorization_server || return 1
    local port tls_port="" secret=""
    port="$(free_port)"
    if [ "$mtls" = mtls ]; then
        install_nginx || return 1
        if [ -z "${AUTHREQ_TEST_PKI:-}" ]; then
            source "$AUTHREQ_ROOT/Scripts/test-pki.sh"
            make_test_pki || return 1
        fi
        tls_port="$(free_port)"
        secret="$("$AUTHREQ_VENV/bin/python" -c 'import secrets; print(secrets.token_hex(16))')"
    fi
    local log="$AUTHREQ_ROOT/.build/authorization-server.log"
    AUTHREQ_MTLS_BASE="${tls_port:+https://127.0.0.1:$tls_port}" AUTHREQ_MTLS_CA="${AUTHREQ_TEST_PKI:-}/ca.pem" \
        AUTHREQ_PROXY_SECRET="$secret" \
        "$AUTHREQ_VENV/bin/python" "$AUTHREQ_ROOT/Tests/AuthorizationServer/server.py" "$port" \
        --access-token-lifetime "$lifetime" >"$log" 2>&1 &
    AUTHREQ_SERVER_PID=$!
    authreq_on_exit stop_authorization_server
    export AUTHREQ_TEST_SERVER="http://127.0.0.1:$port"
    wait_for_health "$AUTHREQ_TEST_SERVER" "$AUTHREQ_SERVER_PID" "$log" "Test authorization server (Authlib)" || return 1
    if [ "$mtls" = mtls ]; then
        start_tls_terminator "$tls_port" "$port" "$secret" || return 1
        export AUTHREQ_TEST_SERVER_MTLS="https://127.0.0.1:$tls_port"
    fi
}
