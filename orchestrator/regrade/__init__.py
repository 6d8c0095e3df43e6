"""Rescoring a label in the open: `orchestrate regrade LABEL --as NEW_LABEL` (issue 33, spec §7:
"future rescoring must create a separately named result snapshot and preserve the original
verdicts").

Modules:
- `rescore`  grades every attempt of a label again from what it retained (final database, audit,
             faults, workspace) with the current task versions and grader, into a new label that
             records where it came from; the source label is only read
- `delta`    which attempts and checks flipped, per cell, with each check's detail before and after
- `source`   where the attempts are read from: a label under the runs root, or a publication bundle
             (verified on its own; what it withholds or cannot re-grade from its placeholders listed)

May import: the orchestrator's root modules, `campaign` (records, export), `grading`, `inputs`
(task pack and scenario), `tasks`, `trajectory` (a copied trajectory under its new verdict),
`publish.verify` and `publish.disclosure` (a bundle's own check, and its disclosure checks re-graded
from placeholders: lazy imports in `source`, which nothing in `publish` imports back).
Nothing outside `regrade` imports it but the commands, the report and the bundle (its delta file).
"""
