# Starts the idpyoidc OpenID provider (Tests/OpenIDProvider) on a free loopback port.
# Source Scripts/authorization-server.sh first, then this file, then call: start_openid_provider
# It sets AUTHREQ_TEST_IDPYOIDC to the provider's URL and stops it when the shell exits.
#
# On a fresh machine it creates a virtual environment inside the build folder
# (.build/openid-provider-venv) and installs the pinned requirements (idpyoidc 5.0.0) from PyPI.
# idpyoidc writes key files into its working folder, so it runs in a temporary folder.

AUTHREQ_OP_VENV="$AUTHREQ_ROOT/.build/openid-provider-venv"
AUTHREQ_OP_REQUIREMENTS="$AUTHREQ_ROOT/Tests/OpenIDProvider/requirements.txt"

install_openid_provider() {
    install_authorization_server || return 1  # its Python runs the health check
    install_python_requirements "$AUTHREQ_OP_VENV" "$AUTHREQ_OP_REQUIREMENTS" "the OpenID provider (idpyoidc)"
}

stop_openid_provider() {
    if [ -n "${AUTHREQ_OP_PID:-}" ]; then
        kill "$AUTHREQ_OP_PID" 2>/dev/null || true
        wait "$AUTHREQ_OP_PID" 2>/dev/null || true
        AUTHREQ_OP_PID=""
    fi
    if [ -n "${AUTHREQ_OP_FOLDER:-}" ]; then rm -rf "$AUTHREQ_OP_FOLDER"; AUTHREQ_OP_FOLDER=""; fi
}

start_openid_provider() {
    install_openid_provider || return 1
    local port
    port="$("$AUTHREQ_OP_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    AUTHREQ_OP_FOLDER="$(mktemp -d -t authreq-idpyoidc.XXXXXX)"
    local log="$AUTHREQ_ROOT/.build/openid-provider.log"
    (cd "$AUTHREQ_OP_FOLDER" && exec "$AUTHREQ_OP_VENV/bin/python" "$AUTHREQ_ROOT/Tests/OpenIDProvider/server.py" "$port") >"$log" 2>&1 &
    AUTHREQ_OP_PID=$!
    authreq_on_exit stop_openid_provider
    export AUTHREQ_TEST_IDPYOIDC="http://127.0.0.1:$port"
    wait_for_health "$AUTHREQ_TEST_IDPYOIDC" "$AUTHREQ_OP_PID" "$log" "OpenID provider (idpyoidc)"
}
