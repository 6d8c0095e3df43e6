"""The docker backend: one attempt = private networks, volumes, a container per named service and
a fresh container per agent turn (the official, isolated mode).

Modules:
- `sandbox`       `DockerBackend` and `DockerSandbox`: the `Backend`/`Sandbox` interface on docker
- `turns`         the agent turns, each in a fresh container (given a narrow `TurnHost`, not the sandbox)
- `containers`    what every container shares: paths, hardening, start with retry, logs, post-mortems
- `firewall`      host firewall rules of the attempt bridges that hold a host address
- `limits`        the process-wide limit on concurrent Docker Engine API requests
- `volume_quota`  size-limited volumes for what the agent writes, held by keeper containers
- `archives`      tar streams in and out of containers, built and unpacked without trusting them
- `route_fix`     change a service container's routes from outside it
- `reaper`        remove engine objects whose owner process is gone

This `__init__` imports nothing, so that importing one helper (`route_fix`) does not load the
whole backend. May import: the orchestrator's root modules, `backends.base`,
`backends.services`, `networks`. Nothing here imports `attempt`, `campaign` or the commands.
"""
