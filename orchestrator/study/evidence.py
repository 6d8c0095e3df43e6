"""A study's evidence in a label and in its publication bundle (issue 39): the declaration and the
reveal carried (publish), checked (`export --verify`), and every attempt replayed from its audit
log (`export --verify --replay`).

A label run `--declared` holds `study.json` byte for byte and its campaign.json names the study's
hash. Publishing a label whose study has sealed seeds needs the reveal (the user's secret): the
bundle would show the seeds anyway (folder names, ledger), so publishing *is* the reveal, and the
bundle carries `reveal.json` for the reader to check against the commitment.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.study.declaration import REVEAL_FILE, STUDY_FILE, StudyError, check_against_campaign, load_study
from orchestrator.study.seeds import SealedSeedError, read_secret, reveal_seeds


def carry_study(root: Path, out: Path, reveal: Path | None) -> list[str]:
    """Copy a label's study declaration (and the reveal) into a bundle; the files written.
    `StudyError` when a sealed study is published without its reveal, or with a wrong one."""
    if not (root / STUDY_FILE).is_file():
        if reveal is not None:
            raise StudyError(f"--reveal given, but {root.name} is not a declared study (no {STUDY_FILE})")
        return []
    study = load_study(root / STUDY_FILE)
    shutil.copyfile(root / STUDY_FILE, out / STUDY_FILE)
    written = [STUDY_FILE]
    block = study.get("sealed_seeds")
    if block:
        if reveal is None:
            raise StudyError(f"{root.name} ran sealed seeds: publishing shows them, so it needs the reveal "
                             "(--reveal SECRET_FILE, the secret the declaration committed to)")
        secret = read_secret(reveal)
        try:
            reveal_seeds(block, secret, study.get("seeds") or [])
        except SealedSeedError as exc:
            raise StudyError(f"--reveal {reveal}: {exc}") from None
        (out / REVEAL_FILE).write_text(json.dumps({"scheme": block.get("scheme"), "secret": secret}, indent=2) + "\n")
        written.append(REVEAL_FILE)
    elif reveal is not None:
        raise StudyError(f"--reveal given, but the study of {root.name} declares no sealed seeds")
    return written


def study_problems(bundle: Path, declaration: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(problems, notes) of a label's or bundle's study evidence against its campaign.json."""
    has_study = (bundle / STUDY_FILE).is_file()
    recorded = declaration.get("study")
    if not has_study:
        if recorded:
            return [f"{STUDY_FILE}: missing, but campaign.json says the campaign was declared (study.sha256)"], []
        return [], ["no study declaration: the campaign was not declared before it ran"]
    try:
        study = load_study(bundle / STUDY_FILE)
    except StudyError as exc:
        return [str(exc)], []
    revealed: list[int] | None = None
    block = study.get("sealed_seeds")
    if block:
        try:
            secret = str(json.loads((bundle / REVEAL_FILE).read_text(encoding="utf-8")).get("secret"))
            revealed = reveal_seeds(block, secret, study.get("seeds") or [])
        except (OSError, ValueError, AttributeError) as exc:
            return [f"{REVEAL_FILE}: the sealed seeds are not revealed ({exc})"], []
    problems = [f"{STUDY_FILE}: {p}" for p in check_against_campaign(study, declaration, revealed)]
    notes = [] if problems else [
        "study: the campaign followed its declaration"
        + (f"; {len(revealed)} sealed seed(s) revealed and matching the commitment" if revealed else "")]
    return problems, notes


# ----------------------------------------------------------------------------------- replay


@dataclass
class ReplayReport:
    """What replaying every attempt found."""

    replayed: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def replay_folders(folders: list[tuple[Any, Path, str]], *, bundle: bool = False) -> ReplayReport:
    """Replay each attempt `(identity, folder, name)` whose turns ran: its audit log on a fresh copy of
    its scenario (generated here from the same task tree and seed) must give the canonical hash its
    result.json records. A bundle's redacted log replays as long as no request the agent sent was
    redacted (the ERP's own outputs in it are compared around the redactor's marks); otherwise the
    attempt is listed as not replayed."""
    from orchestrator.inputs import load_inputs
    from orchestrator.study.replay import read_audit_log, replay_attempt

    report = ReplayReport()
    skipped: list[str] = []
    for ident, folder, name in folders:
        try:
            result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the result's own problems are reported by the ledger checks
        want = (result.get("hashes") or {}).get("canonical_db")
        if not want or not (folder / "audit.jsonl").is_file():
            skipped.append(f"{name} (no final database or audit log: {result.get('outcome')})")
            continue
        scenario = load_inputs(ident.cell, ident.seed).scenario
        try:
            rows = read_audit_log(folder / "audit.jsonl")
        except ValueError as exc:
            report.problems.append(f"{name}/audit.jsonl: cannot be read ({exc})")
            continue
        got = replay_attempt(scenario.db, scenario.world, rows, str(scenario.meta["grading_date"]),
                             shipped_db=folder / "final.db", expected_sha256=want, redacted=bundle)
        if got.unreplayable:
            skipped.append(f"{name} ({got.unreplayable})")
            continue
        report.replayed += 1
        if got.divergence is not None:  # even at the right hash: the log is not the one that made it
            report.problems.append(f"{name}: the replay of its audit log diverges at {got.divergence.text()}")
        elif got.canonical_sha256 != want:
            report.problems.append(f"{name}: the replay of its audit log gives canonical hash {got.canonical_sha256}, "
                                   f"its result records {want}")
    if skipped:
        report.notes.append(f"{len(skipped)} attempt(s) not replayed: " + "; ".join(skipped))
    return report
