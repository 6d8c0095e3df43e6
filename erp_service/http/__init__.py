"""HTTP: the agent API, the control API, the fault layer and the two-listener server."""
