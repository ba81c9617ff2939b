# Starts the test MCP server (Tests/MCPServer: the MCP Python SDK's streamable-HTTP server with its
# authorization server and RFC 9728 metadata) on a free loopback port.
# Source this file after Scripts/authorization-server.sh, then call: start_mcp_server [LIFETIME]
# It sets AUTHREQ_TEST_MCP to the MCP endpoint's URL (…/mcp) and stops the server when the shell
# exits. On a fresh machine it creates .build/mcp-server-venv and installs the pinned requirements.
# start_mcp_scenarios starts the ported MCP conformance scenarios (Tests/MCPServer/scenarios.py,
# in the same virtual environment) and sets AUTHREQ_TEST_MCP_SCENARIOS to their control URL.

AUTHREQ_MCP_VENV="$AUTHREQ_ROOT/.build/mcp-server-venv"
AUTHREQ_MCP_REQUIREMENTS="$AUTHREQ_ROOT/Tests/MCPServer/requirements.txt"

stop_mcp_server() { stop_process_in AUTHREQ_MCP_PID; }
stop_mcp_scenarios() { stop_process_in AUTHREQ_MCP_SCENARIOS_PID; }

# The virtual environment of the MCP server, the MCP scenarios and the conformance provider (the
# authorization server's Python runs the health check).
install_mcp_server() {
    install_authorization_server || return 1
    install_python_requirements "$AUTHREQ_MCP_VENV" "$AUTHREQ_MCP_REQUIREMENTS" "the test MCP server (MCP Python SDK)"
}

# Starts a Python test server of that environment on a free loopback port, stopped when the shell
# exits, and waits for its /test/health; sets AUTHREQ_MCP_PYTHON_URL to http://127.0.0.1:PORT.
# Usage: start_mcp_python PID_VARIABLE STOP_FUNCTION LOG_NAME LABEL SCRIPT [ARGUMENTS…]
start_mcp_python() {
    local pid_variable="$1" stop="$2" log="$AUTHREQ_ROOT/.build/$3.log" label="$4" script="$5"
    shift 5
    install_mcp_server || return 1
    local port
    port="$("$AUTHREQ_MCP_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$AUTHREQ_MCP_VENV/bin/python" "$AUTHREQ_ROOT/$script" "$port" "$@" >"$log" 2>&1 &
    printf -v "$pid_variable" '%s' "$!"
    authreq_on_exit "$stop"
    wait_for_health "http://127.0.0.1:$port" "${!pid_variable}" "$log" "$label" || return 1
    AUTHREQ_MCP_PYTHON_URL="http://127.0.0.1:$port"
}

start_mcp_server() {
    start_mcp_python AUTHREQ_MCP_PID stop_mcp_server mcp-server "Test MCP server (MCP Python SDK)" \
        Tests/MCPServer/server.py --access-token-lifetime "${1:-3600}" || return 1
    export AUTHREQ_TEST_MCP="$AUTHREQ_MCP_PYTHON_URL/mcp"
}

start_mcp_scenarios() {
    start_mcp_python AUTHREQ_MCP_SCENARIOS_PID stop_mcp_scenarios mcp-scenarios "MCP conformance scenarios" \
        Tests/MCPServer/scenarios.py || return 1
    export AUTHREQ_TEST_MCP_SCENARIOS="$AUTHREQ_MCP_PYTHON_URL"
}

# start_mcp_resource_server starts the same MCP server as a resource server of the Authlib test
# server (start_authorization_server first): its metadata names Authlib, which issues its tokens
# (client credentials, the JWT bearer grant, ID-JAGs), and it checks them by introspection there.
# Sets AUTHREQ_TEST_MCP_RESOURCE to its MCP endpoint.
stop_mcp_resource_server() { stop_process_in AUTHREQ_MCP_RESOURCE_PID; }

start_mcp_resource_server() {
    start_mcp_python AUTHREQ_MCP_RESOURCE_PID stop_mcp_resource_server mcp-resource-server \
        "Test MCP resource server (MCP Python SDK, Authlib's tokens)" \
        Tests/MCPServer/server.py --authorization-server "$AUTHREQ_TEST_SERVER" || return 1
    export AUTHREQ_TEST_MCP_RESOURCE="$AUTHREQ_MCP_PYTHON_URL/mcp"
}
