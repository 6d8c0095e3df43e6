"""Failure review: a person's decision on each failed check of a campaign label (issue 33 item 2).

Modules:
- `decisions`  `reviews.jsonl` in the label: the append-only decisions (agent_wrong / task_wrong
               with its kind, a note, who and when), reading them, the latest per attempt × check,
               the counts per check, and the checks `export --verify` runs on the file
- `material`   what a reviewer reads for one failed attempt: each failed check with the agent's
               projection beside the reference, the audit rows behind its breaches, the handbook
               clauses it cites, and the transcript (trajectory.json) where one exists
- `terminal`   the terminal front end (rich): the walk through the failures with prompts, and
               the plain listing
- `serve`      the browser front end (`--serve`): the report with a form beside each failed check,
               served on loopback by a small FastAPI app that appends the POSTed decisions

May import: the orchestrator's root modules, `report` (projection and audit readers), `tasks`
(clauses). Imported by `campaign.export` (verify), `report`, `publish` and the `review` command;
`decisions` imports only the standard library and `identity`, so those imports never form a cycle.
"""
