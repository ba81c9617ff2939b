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

# The virtual environment of both servers (the authorization server's Python runs the health check).
install_mcp_server() {
    install_authorization_server || return 1
    install_python_requirements "$AUTHREQ_MCP_VENV" "$AUTHREQ_MCP_REQUIREMENTS" "the test MCP server (MCP Python SDK)"
}

mcp_free_port() {
    "$AUTHREQ_MCP_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_mcp_server() {
    local lifetime="${1:-3600}"
    install_mcp_server || return 1
    local port
    port="$(mcp_free_port)"
    local log="$AUTHREQ_ROOT/.build/mcp-server.log"
    "$AUTHREQ_MCP_VENV/bin/python" "$AUTHREQ_ROOT/Tests/MCPServer/server.py" "$port" \
        --access-token-lifetime "$lifetime" >"$log" 2>&1 &
    AUTHREQ_MCP_PID=$!
    authreq_on_exit stop_mcp_server
    wait_for_health "http://127.0.0.1:$port" "$AUTHREQ_MCP_PID" "$log" "Test MCP server (MCP Python SDK)" || return 1
    export AUTHREQ_TEST_MCP="http://127.0.0.1:$port/mcp"
}

start_mcp_scenarios() {
    install_mcp_server || return 1
    local port
    port="$(mcp_free_port)"
    local log="$AUTHREQ_ROOT/.build/mcp-scenarios.log"
    "$AUTHREQ_MCP_VENV/bin/python" "$AUTHREQ_ROOT/Tests/MCPServer/scenarios.py" "$port" >"$log" 2>&1 &
    AUTHREQ_MCP_SCENARIOS_PID=$!
    authreq_on_exit stop_mcp_scenarios
    wait_for_health "http://127.0.0.1:$port" "$AUTHREQ_MCP_SCENARIOS_PID" "$log" "MCP conformance scenarios" || return 1
    export AUTHREQ_TEST_MCP_SCENARIOS="http://127.0.0.1:$port"
}
