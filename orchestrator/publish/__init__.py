"""Publishing a campaign: the bundle a reader can verify and re-adjudicate without the runs folder.

Modules:
- `bundle`      `orchestrate publish LABEL --out DIR`: writes the bundle
- `files`       redacted copies of one attempt's files
- `secrets`     what a bundle must keep out, gathered from the campaign's records
- `redaction`   credentials and restricted values out of every published file
- `disclosure`  re-grading `disclose_restricted` from a bundle, whose restricted values are redacted
- `versions`    `versions.json` and `conditions.json`: what ran, under what
- `verify`      `orchestrate export --verify DIR`: check a bundle on its own, anywhere

May import: the orchestrator's root modules, `campaign` (the label's records), `report`,
`grading`, `attempt` (records), `review` (the decisions file), `regrade` (the delta file), `tasks`. Nothing outside `publish` imports it but the commands.
"""
