# Starts the conformance provider (Tests/ConformanceProvider/provider.py: the OpenID Foundation's
# relying-party test modules, ported) on a free loopback port, in the MCP server's virtual
# environment (PyJWT and cryptography, pinned in Tests/MCPServer/requirements.txt).
# Source this file after Scripts/mcp-server.sh, then call: start_conformance_provider
# It sets AUTHREQ_TEST_CONFORMANCE_PROVIDER to its control URL and stops it when the shell exits.

stop_conformance_provider() { stop_process_in AUTHREQ_CONFORMANCE_PROVIDER_PID; }

start_conformance_provider() {
    start_mcp_python AUTHREQ_CONFORMANCE_PROVIDER_PID stop_conformance_provider conformance-provider \
        "Conformance provider" Tests/ConformanceProvider/provider.py || return 1
    export AUTHREQ_TEST_CONFORMANCE_PROVIDER="$AUTHREQ_MCP_PYTHON_URL"
}
