"""`orchestrate regrade LABEL --as NEW_LABEL`: grade a label's attempts again into a new label.

What each attempt retained (final.db, audit.jsonl, faults.jsonl, workspace/, turns, gateway
ledger) is copied into the new label and graded there with the task versions and grader of this
checkout; the source label is only read (it must verify first: a tampered label is not rescored).
The new label is a label like any other (ledger, summary, provenance, report, bundle) whose
`campaign.json` carries `rescoring`: the source label, the SHA-256 of its ledger and declaration,
and the task and source versions before and after; that key also stops it from ever being resumed
as a fresh campaign. `delta.json` says which attempts and checks flipped (regrade/delta.py).

The source is a label under the runs root or a publication bundle (regrade/source.py: a bundle is
verified on its own and graded from what it ships, its redacted final databases, audit logs and
workspaces; the new label records the bundle's manifest hash beside the source label).

An attempt whose outcome was not scored (infra_error, task_error) is copied as it was and listed;
one the new version cannot grade from what it retained becomes a task_error of the new label with
the reason, and is listed: never guessed. It cannot be graded when the grader raises, when a check
of the new version cannot read what the attempt retained (a grader error: a projection over a
table the old scenario lacks, say) where the source's grade of that check had none, or when a
bundle withholds what grading needs (regrade/source.py).
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.attempt.records import ErrorRecord, ResultRecord, write_json
from orchestrator.campaign.declaration import CampaignDeclaration, write_declaration
from orchestrator.campaign.export import export_label, planned_identities
from orchestrator.campaign.ledger import read_result_record
from orchestrator.campaign.spec import check_label
from orchestrator.hashing import sha256_bytes
from orchestrator.identity import AttemptIdentity, retry_dirs
from orchestrator.regrade.delta import DELTA_FILE, build_delta
from orchestrator.regrade.source import RegradeError, RegradeSource, is_bundle, open_bundle, open_label
from orchestrator.trajectory.record import retarget_trajectory

RESCORING_KEY = "rescoring"
REGRADED = frozenset({"graded", "agent_error"})  # the outcomes a grader verdict stands in


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


def _declaration(src: RegradeSource, target: str, here: dict[str, Any],
                 sources_now: dict[str, Any] | None) -> CampaignDeclaration:
    source_decl = src.declaration
    decl = {k: v for k, v in source_decl.items() if k not in ("runs", RESCORING_KEY)}
    decl["label"] = target
    decl["tasks"] = {slug: here[slug] for slug in sorted(source_decl.get("tasks") or {})}
    if sources_now is not None:
        decl["sources"] = sources_now
    decl[RESCORING_KEY] = {
        "source_label": src.label,
        "source_ledger_sha256": src.ledger_sha256,
        "source_declaration_sha256": src.declaration_sha256,
        **{k: v for k, v in src.origin().items() if k == "source_bundle_sha256"},
        "tasks": {slug: {"before": (source_decl.get("tasks") or {}).get(slug), "after": here[slug]}
                  for slug in sorted(source_decl.get("tasks") or {})},
        "sources_before": source_decl.get("sources"),
        "sources_after": sources_now,
    }
    return CampaignDeclaration.model_validate(decl)


def new_grader_errors(before: dict[str, Any], graded: dict[str, Any]) -> list[str]:
    """The checks the new grade could not read from what the attempt retained (a grader error)
    where the source's grade of the same check had none: a verdict there would be a guess."""
    had = {str(c.get("name")) for c in before.get("checks") or [] if isinstance(c, dict) and c.get("grader_error")}
    return [f"{c.get('name')}: {c.get('detail')}" for c in graded.get("checks") or []
            if c.get("grader_error") and str(c.get("name")) not in had]


def open_source(runs_root: Path, source: str) -> RegradeSource:
    """The source of a rescoring, verified: a publication bundle when `source` is a folder holding
    bundle.json, else a label under `runs_root`."""
    if is_bundle(Path(source)):
        return open_bundle(Path(source))
    return open_label(runs_root, source)


def regrade_label(runs_root: Path, source: str | RegradeSource, target: str, *,
                  inputs: Callable[[AttemptIdentity], tuple[Any, Any]] = _load_inputs,
                  task_versions: Callable[[list[str]], dict[str, Any]] | None = None,
                  sources: Callable[[], dict[str, Any]] | None = None) -> RegradeOutcome:
    """Rescore `source` (a label under `runs_root`, a bundle folder, or an opened source) into the
    new label `target` under `runs_root` (see the module doc).

    `inputs` gives the task pack and scenario an attempt is graded with; `task_versions` and
    `sources` what this checkout's tasks and shared sources are (the campaign's own functions by
    default).
    """
    check_label(target, "--as")
    dst_root = runs_root / target
    if dst_root.exists():
        raise RegradeError(f"{dst_root} exists: a rescoring goes into a new label")
    src = source if isinstance(source, RegradeSource) else open_source(runs_root, source)
    if src.root.resolve() == dst_root.resolve():
        raise RegradeError(f"{dst_root} is the source itself: a rescoring goes into a new label")
    source_decl = src.declaration
    here = (task_versions or _task_info)(sorted(source_decl.get("tasks") or {}))
    # Shared sources are recorded when the source label recorded them (every real campaign does).
    sources_now = (sources or _label_sources)() if source_decl.get("sources") is not None else None
    outcome = RegradeOutcome(src.label, target)
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]] = []
    try:
        for ident in planned_identities(source_decl):
            folder = src.folder(ident)
            read = read_result_record(folder)
            if read is None:
                outcome.missing += 1
                continue
            raw, record = read
            before = json.loads(raw)
            new_ident = ident.model_copy(update={"task_version": str(here[ident.task]["version"])})
            dst = new_ident.folder(runs_root, target)
            origin = {"label": src.label, "attempt_id": ident.attempt_id, "result_sha256": sha256_bytes(raw)}
            where = {"cell": ident.cell.text, "seed": ident.seed, "rep": ident.rep, "attempt_id": new_ident.attempt_id,
                     "source_attempt_id": ident.attempt_id}
            _copy_attempt(folder, dst, with_result=False)
            graded: dict[str, Any] | None = None
            reason: str | None = None
            if record.outcome not in REGRADED:
                outcome.copied.append(f"{ident.attempt_id} ({record.outcome})")
            elif (reason := src.not_regradable(ident)) is None:
                try:
                    task, scenario = inputs(new_ident)
                    graded = src.graded_here(task, scenario, dst, _grade(task, scenario, dst, ident.condition))
                    unread = new_grader_errors(before, graded)
                    if unread:
                        graded, reason = None, "a check of this version cannot read what the attempt retained: " + \
                            "; ".join(unread)
                except Exception as exc:  # noqa: BLE001 — whatever stops the new grader is listed, not guessed
                    reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if reason is not None:
                outcome.not_regradable.append({"attempt_id": ident.attempt_id, "reason": reason})
            elif graded is not None:
                outcome.regraded += 1
            after = rescored_result(record, graded, identity=new_ident, target=target, origin=origin, reason=reason)
            digest = retarget_trajectory(dst, after.to_json())  # the copied trajectory under the new verdict (issue 32)
            if digest is not None:
                after = after.model_copy(update={"hashes": after.hashes.model_copy(update={"trajectory": digest})})
            write_json(dst / "result.json", after.to_json())
            pairs.append((where, before, after.to_json()))
        write_declaration(dst_root, _declaration(src, target, here, sources_now))
        export_label(runs_root, target)
    except BaseException:
        shutil.rmtree(dst_root, ignore_errors=True)  # half a rescoring is no snapshot at all
        raise
    outcome.delta = {
        "source_label": src.label, "target_label": target, "regraded": outcome.regraded,
        **src.origin(),
        "copied_unscored": outcome.copied, "not_regradable": outcome.not_regradable, "missing": outcome.missing,
        **build_delta(pairs),
    }
    (dst_root / DELTA_FILE).write_text(json.dumps(outcome.delta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return outcome
