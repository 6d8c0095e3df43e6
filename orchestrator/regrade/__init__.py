"""Rescoring a label in the open: `orchestrate regrade LABEL --as NEW_LABEL` (issue 33, spec §7:
"future rescoring must create a separately named result snapshot and preserve the original
verdicts").

Modules:
- `rescore`  grades every attempt of a label again from what it retained (final database, audit,
             faults, workspace) with the current task versions and grader, into a new label that
             records where it came from; the source label is only read
- `delta`    which attempts and checks flipped, per cell, with each check's detail before and after

May import: the orchestrator's root modules, `campaign` (records, export), `grading`, `inputs`
(task pack and scenario), `tasks`, `trajectory` (a copied trajectory under its new verdict).
Nothing outside `regrade` imports it but the commands, the report and the bundle (its delta file).
"""
