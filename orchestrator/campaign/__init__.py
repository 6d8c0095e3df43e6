"""Campaigns: many attempts (cells x seeds x repetitions) under one label.

Modules:
- `lifecycle`  `Campaign`: one method per phase (check → prepare → declare → run → export), as the
  attempt's `AttemptRun`; `orchestrate campaign` calls them and maps the ending to an exit code
- `spec`       the declared campaign (CLI flags or a YAML file), validated with pydantic
- `declaration` the label's `campaign.json` (`CampaignDeclaration`), its plan, resume checks
  (the attempt's identity, id and folder are `orchestrator/identity.py`'s)
- `scheduler`  the bounded pool that runs attempt jobs, retries infra errors, stops on signals
- `runtime`    the bridge to the runtime: the engine, the scenarios, `make_job` (an `AttemptJob`:
  one attempt through `orchestrator.attempt.run_cell`); the input checks are the attempt's
- `executor`   where attempts run: the interface; `executor_local` (this host, the default) and
  `executor_ray` (a Ray task per attempt on a cluster node; the node's side in `ray_node`)
- `ledger`     `attempts.jsonl`: one canonical `LedgerLine` per attempt, from each folder's `ResultRecord`
- `metrics`    pure statistics (Wilson interval, percentiles, pass^k)
- `summary`    `summary.json`: the section 8 metrics per cell and per system
- `provenance` `provenance.json`: commit, task trees, images, ledger hash, conditions
- `export`     writing the three files and `--verify`
- `progress`   the live display and the final table

Publishing a label is `orchestrator/publish/`, its HTML report `orchestrator/report/`.
May import: the orchestrator's root modules, `attempt`, `backends`, `scenarios`, `grading`,
`images`, `tasks`, `review.decisions` (export's verify checks reviews.jsonl); never `publish`,
`report` or the commands.
"""
