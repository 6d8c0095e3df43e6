"""What the attempt's runner calls once the result is known: trajectory.json and the mismatch check."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from orchestrator.jsonl import read_objects
from orchestrator.logs import get_logger
from orchestrator.trajectory import otel
from orchestrator.trajectory.build import breach_audit_ids, build_trajectory, read_transcripts, verdict_metadata
from orchestrator.trajectory.mismatch import TranscriptMismatch, compare

log = get_logger(__name__)
TRAJECTORY_FILE = "trajectory.json"


def dumps(doc: dict[str, Any]) -> bytes:
    """The bytes of a trajectory file (sorted keys, one space indent: diffable, stable)."""
    return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def record_trajectory(folder: Path, result: dict[str, Any], *, grading_date: str | None = None,
                      windows: dict[int, tuple[float, float]] | None = None) -> tuple[str, TranscriptMismatch | None]:
    """Compare the harness's transcripts with the usage log, then write `folder/trajectory.json` with
    the result (and the mismatch) in its metadata. Returns the file's SHA-256 and the mismatch."""
    turns = [t for t in result.get("turns") or [] if isinstance(t, dict)]
    transcripts = read_transcripts(folder, turns)
    mismatch = compare(transcripts, read_objects(folder / "gateway.jsonl"))
    meta = dict(result, transcript_mismatch=mismatch.model_dump() if mismatch else None)
    doc = build_trajectory(folder, meta, grading_date=grading_date, windows=windows, transcripts=transcripts)
    raw = dumps(doc)
    tmp = folder / (TRAJECTORY_FILE + ".part")
    tmp.write_bytes(raw)
    tmp.replace(folder / TRAJECTORY_FILE)
    if otel.enabled():  # optional, off by default: the same steps as OpenTelemetry spans
        try:
            otel.write_otlp(folder, doc)
        except (OSError, ValueError, TypeError) as exc:  # a view only: the trajectory stands without it
            log.warning("trajectory_otlp_failed", error=f"{type(exc).__name__}: {exc}")
    return hashlib.sha256(raw).hexdigest(), mismatch


def record_trajectory_safely(folder: Path, result: dict[str, Any], *, grading_date: Any = None,
                             windows: dict[int, tuple[float, float]] | None = None) -> tuple[str | None, TranscriptMismatch | None, list[str]]:
    """`record_trajectory`, and a problem line instead of an exception: a failure here is our bug,
    recorded on the attempt (teardown_problems), never its outcome."""
    if not (folder / "result.json").exists() and not (folder / "turns").is_dir():
        return None, None, []  # nothing ran: no folder of an attempt to read
    try:
        digest, mismatch = record_trajectory(folder, result, grading_date=str(grading_date) if grading_date else None, windows=windows)
    except Exception as exc:  # noqa: BLE001 — the result is written whatever happened
        log.error("trajectory_failed", error=f"{type(exc).__name__}: {exc}")
        return None, None, [f"trajectory.json not written: {type(exc).__name__}: {exc}"]
    if mismatch is not None:
        log.warning("transcript_mismatch", differences=len(mismatch.differences))
    return digest, mismatch, []


def retarget_trajectory(folder: Path, result: dict[str, Any]) -> str | None:
    """A copied attempt's trajectory under its new result (a rescored label, orchestrator/regrade/):
    the same steps, the new identity, verdict, checks and breaches in its metadata and the breach
    marks of its ERP requests recomputed. Returns the new SHA-256, or None without a trajectory."""
    path = folder / TRAJECTORY_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    breach_ids = breach_audit_ids(result)
    for step in doc.get("steps") or []:
        for res in (step.get("observation") or {}).get("results") or []:
            erp = (res.get("extra") or {}).get("erp") if isinstance(res, dict) else None
            if isinstance(erp, dict):
                erp["breach"] = erp.get("audit_id") in breach_ids
    doc["session_id"] = doc["trajectory_id"] = str(result.get("attempt_id"))
    doc["extra"] = verdict_metadata(result)
    raw = dumps(doc)
    path.write_bytes(raw)
    return hashlib.sha256(raw).hexdigest()
