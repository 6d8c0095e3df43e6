"""Scenarios: the generator's output at a seed plus the oracle's reference, built once and cached.

Modules:
- `folder`     a scenario as a folder (`Scenario`, `Turn`, `ScenarioError`, the cache's root):
               what the attempt runtime and the grader read
- `cache`      `ensure_scenario(slug, seed)`: build (atomically, under a lock) or find a scenario
- `reference`  the reference run: the oracle through the local backend, ungraded

The runtime reads `folder`; `cache` and `reference` build on the runtime, never the other way
round, so this `__init__` imports nothing (importing `folder` must not load the builder).
May import: the orchestrator's root modules, `attempt` (`cache`/`reference` only), `backends`,
`grading.projections`, `tasks`.
"""
