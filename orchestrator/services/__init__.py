"""Declarations of the services an attempt runs beside the agent (one module per service).

Each module turns what the attempt knows (scenario files, tokens, the runtime config) into an
`orchestrator.backends.services.ServiceSpec`; the backends start any declaration the same way.
"""
