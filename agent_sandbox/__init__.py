"""The agent's side of an attempt: the `erp` command, the HTTP client, prompts, systems, turns.

Everything here runs inside the agent container (or, for the local backend, as a plain
subprocess). It imports no other package of this repository and needs only the standard
library and pyyaml (`systems.py`, used on the host only, also needs pydantic; `mcp_client.py`,
loaded for MCP cells only, the MCP SDK). The `erp` command is a process per call: what it
imports is paid at every call, hence HTTP over `http.client` (http_transport.py).
"""
