"""The harness oracle: the oracle's own requests, played by a real agent CLI through its shell.

From the oracle's recorded run of a scenario (orchestrator/scenarios/oracle_run.py) a scripted
conversation is derived in which "the model" asks the harness to run each of those requests with
the `erp` command, in order, turn by turn, and to write the files the oracle left. The fake
provider plays it; the real CLI (Claude Code, Codex) executes it inside the attempt's isolation.
The attempt must then pass every check and end in the oracle's canonical database hash: proof
that a correct solution travelling through the CLI, its shell, the `erp` command, the gateway and
the isolation is graded correct.

Modules:
- `conversation`  the scripted conversation of a recorded run, per provider API (a leaf: the
                  attempt runtime reads it for a model access that declares `harness_oracle`)
- `control`       the validation control (`orchestrate validate --harness-oracle SYSTEMS`)

This `__init__` imports nothing, so the runtime importing `conversation` never loads `control`
(which runs attempts). May import: the orchestrator's root modules, `scenarios.folder`,
`scenarios.oracle_run`; `control` also `attempt`, `backends`, `validate`, `inputs`.
"""
