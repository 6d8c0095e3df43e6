"""Trajectories: what the agent did, turn by turn, in ATIF v1.7, checked against the gateway (issue 32).

Modules:
- `atif`         the ATIF v1.7 JSON Schema (atif-v1.7.schema.json) and the rules it cannot state
- `transcripts`  what each harness says it did, read from a turn's folder (Claude Code, Codex, others)
- `build`        `trajectory.json` of one attempt from its records (usage log, audit, faults, result)
- `mismatch`     the harness's model calls against the gateway's usage log (`transcript_mismatch`)
- `record`       what the attempt's runner calls: write trajectory.json, return its hash and any mismatch
- `verify`       a published trajectory checked against the usage log, the audit log and the result
- `otel`         optional: the same steps as OpenTelemetry spans (GenAI semantic conventions)

May import: the orchestrator's root modules only. Imported by `attempt` (the runner and the result
record), `report` (the transcript view) and `publish` (`export --verify`).
"""
