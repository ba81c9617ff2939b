# Starts the idpyoidc OpenID provider (Tests/OpenIDProvider) on a free loopback port.
# Source Scripts/authorization-server.sh first, then this file, then call: start_openid_provider
# It sets AUTHREQ_TEST_IDPYOIDC to the provider's URL and stops it when the shell exits;
# start_openid_provider_dpop starts a second instance with DPoP (AUTHREQ_TEST_IDPYOIDC_DPOP).
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

# Stops the instance whose variables are prefixed `$1` (AUTHREQ_OP or AUTHREQ_OP_DPOP).
stop_openid_provider_instance() {
    local pid_var="${1}_PID" folder_var="${1}_FOLDER"
    if [ -n "${!pid_var:-}" ]; then
        kill "${!pid_var}" 2>/dev/null || true
        wait "${!pid_var}" 2>/dev/null || true
        eval "$pid_var=''"
    fi
    if [ -n "${!folder_var:-}" ]; then rm -rf "${!folder_var}"; eval "$folder_var=''"; fi
}

stop_openid_provider() { stop_openid_provider_instance AUTHREQ_OP; }
stop_openid_provider_dpop() { stop_openid_provider_instance AUTHREQ_OP_DPOP; }

# Starts one instance: $1 variable prefix, $2 the URL variable to export, $3 the log's name,
# then the server's extra arguments.
launch_openid_provider() {
    local prefix="$1" url_var="$2" name="$3"
    shift 3
    install_openid_provider || return 1
    local port folder log
    port="$("$AUTHREQ_OP_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    folder="$(mktemp -d -t authreq-idpyoidc.XXXXXX)"
    log="$AUTHREQ_ROOT/.build/$name.log"
    (cd "$folder" && exec "$AUTHREQ_OP_VENV/bin/python" "$AUTHREQ_ROOT/Tests/OpenIDProvider/server.py" "$port" "$@") >"$log" 2>&1 &
    eval "${prefix}_PID=$!"
    eval "${prefix}_FOLDER='$folder'"
    export "$url_var=http://127.0.0.1:$port"
    local pid_var="${prefix}_PID"
    wait_for_health "http://127.0.0.1:$port" "${!pid_var}" "$log" "OpenID provider (idpyoidc $name)"
}

start_openid_provider() {
    authreq_on_exit stop_openid_provider
    launch_openid_provider AUTHREQ_OP AUTHREQ_TEST_IDPYOIDC openid-provider
}

# The second instance, with idpyoidc's DPoP add-on (a proof is mandatory on its token and
# UserInfo endpoints), required pushed authorization requests, server nonces and the strict DPoP
# resource of Tests/OpenIDProvider/server.py. Sets AUTHREQ_TEST_IDPYOIDC_DPOP.
start_openid_provider_dpop() {
    authreq_on_exit stop_openid_provider_dpop
    launch_openid_provider AUTHREQ_OP_DPOP AUTHREQ_TEST_IDPYOIDC_DPOP openid-provider-dpop --dpop
}
