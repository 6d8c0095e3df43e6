"""Task packs (`tasks/<slug>/`) and the tooling that loads, renders and lints them.

`tasks` may import `erp_service` and `agent_sandbox` (generators build scenario databases,
policies use the agent client); nothing here imports `orchestrator`.
"""
