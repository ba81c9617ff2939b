# Starts the conformance provider (Tests/ConformanceProvider/provider.py: the OpenID Foundation's
# relying-party test modules, ported) on a free loopback port, in the MCP server's virtual
# environment (PyJWT and cryptography, pinned in Tests/MCPServer/requirements.txt).
# Source this file after Scripts/mcp-server.sh, then call: start_conformance_provider
# It sets AUTHREQ_TEST_CONFORMANCE_PROVIDER to its control URL and stops it when the shell exits.

stop_conformance_provider() { stop_process_in AUTHREQ_CONFORMANCE_PROVIDER_PID; }

start_conformance_provider() {
    install_mcp_server || return 1
    local port
    port="$(mcp_free_port)"
    local log="$AUTHREQ_ROOT/.build/conformance-provider.log"
    "$AUTHREQ_MCP_VENV/bin/python" "$AUTHREQ_ROOT/Tests/ConformanceProvider/provider.py" "$port" >"$log" 2>&1 &
    AUTHREQ_CONFORMANCE_PROVIDER_PID=$!
    authreq_on_exit stop_conformance_provider
    wait_for_health "http://127.0.0.1:$port" "$AUTHREQ_CONFORMANCE_PROVIDER_PID" "$log" "Conformance provider" || return 1
    export AUTHREQ_TEST_CONFORMANCE_PROVIDER="http://127.0.0.1:$port"
}
