"""The failure review (issue 33, item 2; spec §13's false-negative audit): a person reads every
failed check of a label and records a decision, `agent_wrong` or `task_wrong`, with a note.

Modules:
- `decisions`  the failed checks of a label, and `reviews.jsonl` (append-only: who, when, what)

May import: the orchestrator's root modules and `campaign` (the label's records). Nothing outside
`review` imports it but the commands and the report.
"""
