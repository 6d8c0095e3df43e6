"""Task packs (`tasks/<id with _>/`, docs/pack-authoring.md) and the tooling that loads, generates,
renders and lints them.

`tasks` may import `erp_service` and `agent_sandbox` (generators build scenario databases,
policies use the agent client); nothing here imports `orchestrator`.
"""
