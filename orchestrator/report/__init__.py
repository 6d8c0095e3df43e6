"""The campaign's HTML report: self-contained pages (inline CSS and SVG, no external assets).

Modules:
- `label_page`    `orchestrate report LABEL`: the label's page (cells, systems, checks, charts)
- `attempt_page`  one attempt's page: everything a reader needs to judge that verdict
- `charts`        inline SVG charts and the report's shared style
- `checks`        the per-check view: for each task, a heat map of check x cell
- `review`        the failure review's decisions: counts per check, the decision beside each check

May import: the orchestrator's root modules, `campaign` (the label's records and metrics),
`attempt` (records), `review.decisions`, `tasks`. Imported by `publish` (the bundle holds the report) and the commands.
"""
