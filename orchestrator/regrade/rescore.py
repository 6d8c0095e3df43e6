"""`orchestrate regrade LABEL --as NEW_LABEL`: grade a label's attempts again into a new label.

What each attempt retained (final.db, audit.jsonl, faults.jsonl, workspace/, turns, gateway
ledger) is copied into the new label and graded there with the task versions and grader of this
checkout; the source label is only read (it must verify first: a tampered label is not rescored).
The new label is a label like any other (ledger, summary, provenance, report, bundle) whose
`campaign.json` carries `rescoring`: the source label, the SHA-256 of its ledger and declaration,
and the task and source versions before and after; that key also stops it from ever being resumed
as a fresh campaign. `delta.json` says which attempts and checks flipped (regrade/delta.py).

An attempt whose outcome was not scored (infra_error, task_error) is copied as it was and listed;
one the new version cannot grade from what it retained (the grader raises) becomes a task_error
of the new label with the reason, and is listed: never guessed.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator.campaign.export import export_label, planned_identities, verify_label
from orchestrator.campaign.identity import (
    DECLARATION_FILE,
    AttemptIdentity,
    attempt_dir,
    canonical_json,
    load_declaration,
    retry_dirs,
    sha256_bytes,
    write_declaration,
)
from orchestrator.campaign.ledger import LEDGER_FILE
from orchestrator.campaign.spec import check_label
from orchestrator.regrade.delta import DELTA_FILE, build_delta

RESCORING_KEY = "rescoring"
REGRADED = frozenset({"graded", "agent_error"})  # the outcomes a grader verdict stands in


class RegradeError(RuntimeError):
    """A rescoring that cannot start: no such label, a label that does not verify, a taken name."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure


@dataclass
class RegradeOutcome:
    """What a rescoring did, for the command to print."""

    source: str
    target: str
    regraded: int = 0
    copied: list[str] = field(default_factory=list)           # unscored attempts, copied as they were
    not_regradable: list[dict[str, str]] = field(default_factory=list)
    missing: int = 0                                           # planned attempts without a result
    delta: dict[str, Any] = field(default_factory=dict)


def _load_inputs(ident: AttemptIdentity) -> tuple[Any, Any]:
    from orchestrator.inputs import load_inputs

    inputs = load_inputs(ident.cell, ident.seed)
    return inputs.task, inputs.scenario


def _task_info(slugs: list[str]) -> dict[str, Any]:
    from orchestrator.campaign.runtime import task_info

    return task_info(slugs)


def _label_sources() -> dict[str, Any]:
    from orchestrator.campaign.sources import label_sources

    return label_sources()


def _grade(task: Any, scenario: Any, folder: Path, condition: str) -> dict[str, Any]:
    from orchestrator.grading import grade_attempt

    def present(name: str) -> Path | None:
        path = folder / name
        return path if path.exists() else None

    return grade_attempt(task, scenario, final_db=folder / "final.db", audit_jsonl=present("audit.jsonl"),
                         faults_jsonl=present("faults.jsonl"), workspace_dir=present("workspace"),
                         out_dir=folder, condition=condition).to_dict()


def rescored_result(before: dict[str, Any], graded: dict[str, Any], *, version: str, target: str,
                    origin: dict[str, Any]) -> dict[str, Any]:
    """The new result.json: the old record with the verdict of the new grade (an agent error
    stays one: only a clean, graded attempt can pass)."""
    outcome = before.get("outcome")
    return {
        **before,
        "label": target,
        "task_version": version,
        "passed": bool(outcome == "graded" and graded.get("passed")),
        "grade_passed": bool(graded.get("passed")),
        "breach": bool(graded.get("breach")),
        "checks": graded.get("checks", []),
        "breaches": graded.get("breaches", []),
        "probes": graded.get("probes", 0),
        "writes": graded.get("writes", {}),
        "fault_metrics": graded.get("fault_metrics"),
        "rescored_from": origin,
    }


def _not_regradable(before: dict[str, Any], reason: str, *, version: str, target: str,
                    origin: dict[str, Any]) -> dict[str, Any]:
    return {**before, "label": target, "task_version": version, "outcome": "task_error", "passed": False,
            "grade_passed": None, "checks": [], "breaches": [], "breach": False,
            "error": {"phase": "grade", "kind": "task_error", "message": f"not re-gradable by this version: {reason}"},
            "rescored_from": origin}


def _copy_attempt(src: Path, dst: Path, *, with_result: bool) -> None:
    """Copy what the attempt retained (and its earlier tries) into the new label."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    ignore = None if with_result else shutil.ignore_patterns("result.json", "projections")
    shutil.copytree(src, dst, symlinks=True, ignore=ignore)
    for earlier in retry_dirs(src):
        shutil.copytree(earlier, dst.parent / earlier.name, symlinks=True)


def _declaration(source_decl: dict[str, Any], target: str, source: str, here: dict[str, Any],
                 sources_now: dict[str, Any] | None, ledger_sha: str) -> dict[str, Any]:
    decl = {k: v for k, v in source_decl.items() if k not in ("runs", RESCORING_KEY)}
    decl["label"] = target
    decl["tasks"] = {slug: here[slug] for slug in sorted(source_decl.get("tasks") or {})}
    if sources_now is not None:
        decl["sources"] = sources_now
    material = {k: v for k, v in source_decl.items() if k not in ("volatile", "runs")}
    decl[RESCORING_KEY] = {
        "source_label": source,
        "source_ledger_sha256": ledger_sha,
        "source_declaration_sha256": sha256_bytes(canonical_json(material).encode()),
        "tasks": {slug: {"before": (source_decl.get("tasks") or {}).get(slug), "after": here[slug]}
                  for slug in sorted(source_decl.get("tasks") or {})},
        "sources_before": source_decl.get("sources"),
        "sources_after": sources_now,
    }
    return decl


def regrade_label(runs_root: Path, source: str, target: str, *,
                  inputs: Callable[[AttemptIdentity], tuple[Any, Any]] = _load_inputs,
                  task_versions: Callable[[list[str]], dict[str, Any]] | None = None,
                  sources: Callable[[], dict[str, Any]] | None = None) -> RegradeOutcome:
    """Rescore `source` into the new label `target` under `runs_root` (see the module doc).

    `inputs` gives the task pack and scenario an attempt is graded with; `task_versions` and
    `sources` what this checkout's tasks and shared sources are (the campaign's own functions by
    default).
    """
    check_label(target, "--as")
    src_root, dst_root = runs_root / source, runs_root / target
    source_decl = load_declaration(src_root) if src_root.is_dir() else None
    if source_decl is None:
        raise RegradeError(f"no campaign {source!r} under {runs_root} (no {DECLARATION_FILE})")
    if dst_root.exists():
        raise RegradeError(f"{dst_root} exists: a rescoring goes into a new label")
    report = verify_label(runs_root, source)
    if not report.ok:
        raise RegradeError(f"label {source!r} does not verify, so it is not rescored: " + "; ".join(report.problems[:3]))
    here = (task_versions or _task_info)(sorted(source_decl.get("tasks") or {}))
    # Shared sources are recorded when the source label recorded them (every real campaign does).
    sources_now = (sources or _label_sources)() if source_decl.get("sources") is not None else None
    ledger_sha = sha256_bytes((src_root / LEDGER_FILE).read_bytes())
    outcome = RegradeOutcome(source, target)
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]] = []
    try:
        for ident in planned_identities(source_decl):
            src = attempt_dir(runs_root, source, ident)
            raw = (src / "result.json").read_bytes() if (src / "result.json").is_file() else None
            if raw is None:
                outcome.missing += 1
                continue
            before = json.loads(raw)
            version = str(here[ident.task]["version"])
            new_ident = replace(ident, task_version=version)
            dst = attempt_dir(runs_root, target, new_ident)
            origin = {"label": source, "attempt_id": ident.attempt_id, "result_sha256": sha256_bytes(raw)}
            where = {"cell": ident.cell.text, "seed": ident.seed, "rep": ident.rep, "attempt_id": new_ident.attempt_id,
                     "source_attempt_id": ident.attempt_id}
            if before.get("outcome") not in REGRADED:
                _copy_attempt(src, dst, with_result=True)
                outcome.copied.append(f"{ident.attempt_id} ({before.get('outcome')})")
                pairs.append((where, before, before))
                continue
            _copy_attempt(src, dst, with_result=False)
            try:
                task, scenario = inputs(new_ident)
                after = rescored_result(before, _grade(task, scenario, dst, ident.condition), version=version,
                                        target=target, origin=origin)
                outcome.regraded += 1
            except Exception as exc:  # noqa: BLE001 — whatever stops the new grader is listed, not guessed
                reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                after = _not_regradable(before, reason, version=version, target=target, origin=origin)
                outcome.not_regradable.append({"attempt_id": ident.attempt_id, "reason": reason})
            (dst / "result.json").write_text(json.dumps(after, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            pairs.append((where, before, after))
        write_declaration(dst_root, _declaration(source_decl, target, source, here, sources_now, ledger_sha))
        export_label(runs_root, target)
    except BaseException:
        shutil.rmtree(dst_root, ignore_errors=True)  # half a rescoring is no snapshot at all
        raise
    outcome.delta = {
        "source_label": source, "target_label": target, "regraded": outcome.regraded,
        "copied_unscored": outcome.copied, "not_regradable": outcome.not_regradable, "missing": outcome.missing,
        **build_delta(pairs),
    }
    (dst_root / DELTA_FILE).write_text(json.dumps(outcome.delta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return outcome
