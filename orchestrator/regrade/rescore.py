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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.attempt.records import ErrorRecord, ResultRecord, write_json
from orchestrator.campaign.declaration import DECLARATION_FILE, CampaignDeclaration, load_declaration, write_declaration
from orchestrator.campaign.export import export_label, planned_identities, verify_label
from orchestrator.campaign.ledger import LEDGER_FILE, read_result_record
from orchestrator.campaign.provenance import PROVENANCE_FILE
from orchestrator.campaign.spec import check_label
from orchestrator.hashing import sha256_bytes
from orchestrator.identity import AttemptIdentity, retry_dirs
from orchestrator.regrade.delta import DELTA_FILE, build_delta
from orchestrator.trajectory.record import retarget_trajectory

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
    from orchestrator.attempt.inputs import task_info

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


def rescored_result(before: ResultRecord, graded: dict[str, Any] | None, *, identity: AttemptIdentity, target: str,
                    origin: dict[str, Any], reason: str | None = None) -> ResultRecord:
    """The new result.json: the old record under the new identity and label, with the verdict of
    the new grade (an agent error stays one: only a clean, graded attempt can pass). `graded`
    None: an unscored attempt, kept as it was; `reason`: the new grader could not grade it."""
    update: dict[str, Any] = {"identity": identity, "label": target, "rescored_from": origin}
    if reason is not None:
        update.update(outcome="task_error", passed=False, grade_passed=None, breach=False, checks=[], breaches=[],
                      error=ErrorRecord(phase="grade", kind="task_error",
                                        message=f"not re-gradable by this version: {reason}"))
    elif graded is not None:
        update.update(passed=bool(before.outcome == "graded" and graded.get("passed")),
                      grade_passed=bool(graded.get("passed")), breach=bool(graded.get("breach")),
                      checks=graded.get("checks", []), breaches=graded.get("breaches", []),
                      probes=graded.get("probes", 0), writes=graded.get("writes", {}),
                      fault_metrics=graded.get("fault_metrics"))
    return before.model_copy(update=update)


def _copy_attempt(src: Path, dst: Path, *, with_result: bool) -> None:
    """Copy what the attempt retained (and its earlier tries) into the new label."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    ignore = None if with_result else shutil.ignore_patterns("result.json", "projections")
    shutil.copytree(src, dst, symlinks=True, ignore=ignore)
    for earlier in retry_dirs(src):
        shutil.copytree(earlier, dst.parent / earlier.name, symlinks=True)


def _declaration(source_decl: dict[str, Any], target: str, source: str, here: dict[str, Any],
                 sources_now: dict[str, Any] | None, ledger_sha: str, declaration_sha: str | None) -> CampaignDeclaration:
    decl = {k: v for k, v in source_decl.items() if k not in ("runs", RESCORING_KEY)}
    decl["label"] = target
    decl["tasks"] = {slug: here[slug] for slug in sorted(source_decl.get("tasks") or {})}
    if sources_now is not None:
        decl["sources"] = sources_now
    decl[RESCORING_KEY] = {
        "source_label": source,
        "source_ledger_sha256": ledger_sha,
        "source_declaration_sha256": declaration_sha,
        "tasks": {slug: {"before": (source_decl.get("tasks") or {}).get(slug), "after": here[slug]}
                  for slug in sorted(source_decl.get("tasks") or {})},
        "sources_before": source_decl.get("sources"),
        "sources_after": sources_now,
    }
    return CampaignDeclaration.model_validate(decl)


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
    source_model = load_declaration(src_root) if src_root.is_dir() else None
    if source_model is None:
        raise RegradeError(f"no campaign {source!r} under {runs_root} (no {DECLARATION_FILE})")
    if dst_root.exists():
        raise RegradeError(f"{dst_root} exists: a rescoring goes into a new label")
    source_decl = source_model.to_json()
    report = verify_label(runs_root, source)
    if not report.ok:
        raise RegradeError(f"label {source!r} does not verify, so it is not rescored: " + "; ".join(report.problems[:3]))
    here = (task_versions or _task_info)(sorted(source_decl.get("tasks") or {}))
    # Shared sources are recorded when the source label recorded them (every real campaign does).
    sources_now = (sources or _label_sources)() if source_decl.get("sources") is not None else None
    ledger_sha = sha256_bytes((src_root / LEDGER_FILE).read_bytes())
    provenance = json.loads((src_root / PROVENANCE_FILE).read_text())
    outcome = RegradeOutcome(source, target)
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]] = []
    try:
        for ident in planned_identities(source_decl):
            src = ident.folder(runs_root, source)
            read = read_result_record(src)
            if read is None:
                outcome.missing += 1
                continue
            raw, record = read
            before = json.loads(raw)
            new_ident = ident.model_copy(update={"task_version": str(here[ident.task]["version"])})
            dst = new_ident.folder(runs_root, target)
            origin = {"label": source, "attempt_id": ident.attempt_id, "result_sha256": sha256_bytes(raw)}
            where = {"cell": ident.cell.text, "seed": ident.seed, "rep": ident.rep, "attempt_id": new_ident.attempt_id,
                     "source_attempt_id": ident.attempt_id}
            _copy_attempt(src, dst, with_result=False)
            graded: dict[str, Any] | None = None
            reason: str | None = None
            if record.outcome not in REGRADED:
                outcome.copied.append(f"{ident.attempt_id} ({record.outcome})")
            else:
                try:
                    task, scenario = inputs(new_ident)
                    graded = _grade(task, scenario, dst, ident.condition)
                    outcome.regraded += 1
                except Exception as exc:  # noqa: BLE001 — whatever stops the new grader is listed, not guessed
                    reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    outcome.not_regradable.append({"attempt_id": ident.attempt_id, "reason": reason})
            after = rescored_result(record, graded, identity=new_ident, target=target, origin=origin, reason=reason)
            digest = retarget_trajectory(dst, after.to_json())  # the copied trajectory under the new verdict (issue 32)
            if digest is not None:
                after = after.model_copy(update={"hashes": after.hashes.model_copy(update={"trajectory": digest})})
            write_json(dst / "result.json", after.to_json())
            pairs.append((where, before, after.to_json()))
        write_declaration(dst_root, _declaration(source_decl, target, source, here, sources_now, ledger_sha,
                                                 provenance.get("declaration_sha256")))
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
