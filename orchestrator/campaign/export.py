"""Writing a label's ledger, summary and provenance, and verifying them.

`export_label` rebuilds `attempts.jsonl` from the attempt folders, then `summary.json` from the
ledger, then `provenance.json`. `verify_label` checks, without trusting any of them:
the ledger's hash against provenance (naming the lines that differ), each line's canonical form,
the ledger order and the absence of duplicates, the completeness of the matrix against
`campaign.json`, each line against its attempt folder when the folders are present, the review
decisions (`reviews.jsonl`, orchestrator/review/decisions.py) against the ledger, and the summary
recomputed from the ledger against `summary.json`.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.campaign.declaration import DECLARATION_FILE, CampaignDeclaration, DeclarationChanged, declaration_changes, load_declaration
from orchestrator.campaign.ledger import LEDGER_FILE, LedgerError, build_ledger, build_line, ledger_text, line_sort_key, write_ledger
from orchestrator.campaign.metrics import P90_BY_CONVENTION
from orchestrator.campaign.provenance import PROVENANCE_FILE, build_provenance
from orchestrator.campaign.summary import SUMMARY_FILE, compute_summary
from orchestrator.hashing import canonical_json, sha256_bytes
from orchestrator.identity import AttemptIdentity
from orchestrator.model_limits import read_cost_budget


class ExportError(RuntimeError):
    """A label that cannot be exported (no campaign.json, say)."""


def planned_identities(declaration: dict[str, Any]) -> list[AttemptIdentity]:
    """Every attempt a declaration (campaign.json's content) asks for, in ledger order."""
    return CampaignDeclaration.model_validate(declaration).planned()


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float replaced by its text ("inf", "-inf", "nan").

    A campaign.json written before budgets were checked may hold `Infinity` (not JSON); the
    ledger, summary and provenance must still be written, and hash the same way every time.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def read_declaration(root: Path) -> dict[str, Any] | None:
    """The label's campaign.json, JSON-safe (see `json_safe`), or None when there is none."""
    declaration = load_declaration(root)
    return None if declaration is None else json_safe(declaration.to_json())


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    tmp.replace(path)


def export_label(runs_root: Path, label: str) -> dict[str, Any]:
    """Rebuild the ledger, summary and provenance of a label; return the summary."""
    root = runs_root / label
    try:
        declaration = read_declaration(root)
    except DeclarationChanged as exc:  # campaign.json unreadable
        raise ExportError(str(exc)) from None
    if declaration is None:
        raise ExportError(f"{root / DECLARATION_FILE} not found: {label!r} is not a campaign label under {runs_root}")
    lines = build_ledger(runs_root, label, planned_identities(declaration))
    write_ledger(root / LEDGER_FILE, lines)
    summary = with_cost_budget(compute_summary(lines, declaration), root)
    _write_json(root / SUMMARY_FILE, summary)
    _write_json(root / PROVENANCE_FILE, build_provenance(declaration, ledger_text(lines), root))
    return summary


def with_cost_budget(summary: dict[str, Any], root: Path, *, fallback: Any = None) -> dict[str, Any]:
    """The summary with the campaign cost budget's note (`cost_budget.json`, orchestrator/model_limits.py)
    when the label has one. It records scheduling, not attempts, so no ledger line carries it; a
    bundle without the file keeps the summary's own block (`fallback`)."""
    note = read_cost_budget(root)
    if note is None and isinstance(fallback, dict):
        note = fallback
    return {**summary, "cost_budget": note} if note is not None else summary


@dataclass
class VerifyReport:
    """Problems found by `verify_label` (empty: verified)."""

    label: str
    problems: list[str] = field(default_factory=list)
    lines: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def _load_json(path: Path, report: VerifyReport) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        report.problems.append(f"{path.name}: missing")
    except ValueError as exc:
        report.problems.append(f"{path.name}: not valid JSON ({exc})")
    return None


def verify_label(runs_root: Path, label: str, *, check_folders: bool = True) -> VerifyReport:
    """Check a label's published files against each other and against the attempt folders."""
    root = runs_root / label
    report = VerifyReport(label)
    try:
        declaration = read_declaration(root) if (root / DECLARATION_FILE).exists() else None
    except DeclarationChanged as exc:
        report.problems.append(f"{DECLARATION_FILE}: {exc}")
        return report
    if declaration is None:
        report.problems.append(f"{DECLARATION_FILE}: missing")
        return report
    provenance = _load_json(root / PROVENANCE_FILE, report)
    summary = _load_json(root / SUMMARY_FILE, report)
    try:
        raw = (root / LEDGER_FILE).read_bytes()
    except FileNotFoundError:
        report.problems.append(f"{LEDGER_FILE}: missing")
        return report

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.problems.append(f"{LEDGER_FILE}: not UTF-8 ({exc})")
        return report
    if text and not text.endswith("\n"):
        report.problems.append(f"{LEDGER_FILE}: last line has no newline")
    texts = text.splitlines()
    report.lines = len(texts)

    # 1. hashes against provenance, naming the lines that differ
    if isinstance(provenance, dict):
        if provenance.get("ledger_sha256") != sha256_bytes(raw):
            report.problems.append(f"{LEDGER_FILE}: SHA-256 differs from provenance.json's ledger_sha256")
            recorded = provenance.get("line_sha256") or []
            for i, line in enumerate(texts, 1):
                if i > len(recorded):
                    report.problems.append(f"line {i}: not in provenance (added line)")
                elif sha256_bytes(line.encode("utf-8")) != recorded[i - 1]:
                    report.problems.append(f"line {i}: differs from the line recorded in provenance (edited)")
            if len(recorded) > len(texts):
                report.problems.append(f"{LEDGER_FILE}: {len(recorded) - len(texts)} line(s) removed since export")
        decl_hash = sha256_bytes(
            canonical_json({k: v for k, v in declaration.items() if k not in ("volatile", "runs")}).encode()
        )
        if provenance.get("declaration_sha256") != decl_hash:
            report.problems.append(f"{DECLARATION_FILE}: differs from the declaration provenance.json recorded")

    # 2. each line: JSON, canonical form
    lines: list[dict[str, Any]] = []
    for i, line in enumerate(texts, 1):
        try:
            parsed = json.loads(line)
        except json.JSONDecodeError as exc:
            report.problems.append(f"line {i}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(parsed, dict) or not isinstance(parsed.get("identity"), dict):
            report.problems.append(f"line {i}: not a ledger record (no identity)")
            continue
        if canonical_json(parsed) != line:
            report.problems.append(f"line {i}: not in canonical form (sorted keys, compact separators)")
        parsed["_line"] = i
        lines.append(parsed)

    # 3. order, duplicates and the matrix
    planned = {ident.attempt_id: ident for ident in planned_identities(declaration)}
    seen: dict[str, int] = {}
    for prev, cur in zip(lines, lines[1:], strict=False):
        if line_sort_key(prev) >= line_sort_key(cur):
            report.problems.append(f"line {cur['_line']}: out of ledger order (or a duplicate identity)")
    for ln in lines:
        aid = str(ln.get("attempt_id"))
        if aid in seen:
            report.problems.append(f"line {ln['_line']}: duplicate attempt {aid} (first at line {seen[aid]})")
            continue
        seen[aid] = ln["_line"]
        ident = planned.get(aid)
        if ident is None:
            report.problems.append(f"line {ln['_line']}: attempt {aid} is not in the declared campaign")
        elif ln["identity"] != ident.as_dict():
            report.problems.append(f"line {ln['_line']}: identity does not match attempt id {aid}")
    missing = [aid for aid in planned if aid not in seen]
    if missing:
        report.problems.append(
            f"matrix incomplete: {len(missing)} of {len(planned)} declared attempts have no line "
            f"(first: {missing[0]})"
        )

    # 4. each line against its attempt folder (catches an edited result.json or a consistent edit)
    if check_folders:
        for ln in lines:
            ident = planned.get(str(ln.get("attempt_id")))
            if ident is None:
                continue
            folder = ident.folder(runs_root, label)
            if not folder.exists():
                continue
            try:
                from_folder = build_line(ident, folder)
            except LedgerError as exc:
                report.problems.append(f"line {ln['_line']}: {exc}")
                continue
            rebuilt = from_folder.to_json() if from_folder is not None else None
            clean = {k: v for k, v in ln.items() if k != "_line"}
            if rebuilt is None:
                report.problems.append(f"line {ln['_line']}: attempt folder {folder} has no result.json")
            elif canonical_json(rebuilt) != canonical_json(clean):
                diffs = declaration_changes(rebuilt, clean)[:3]
                report.problems.append(
                    f"line {ln['_line']}: differs from attempt folder {folder.relative_to(runs_root)}: " + "; ".join(diffs)
                )

    # 5. the review decisions (reviews.jsonl): well-formed, on real attempts and failed checks
    from orchestrator.review.decisions import problems as review_problems

    report.problems += review_problems(root, lines)

    # 6. the summary, recomputed from the ledger
    if isinstance(summary, dict):
        # Verified under the p90 convention it declares (the pilot's historical one included).
        convention = (summary.get("conventions") or {}).get("p90") if isinstance(summary.get("conventions"), dict) else None
        if convention is not None and convention not in P90_BY_CONVENTION:
            report.problems.append(f"{SUMMARY_FILE}: declares an unknown p90 convention {convention!r}")
            return report
        recomputed = compute_summary([{k: v for k, v in ln.items() if k != "_line"} for ln in lines], declaration,
                                     p90_convention=convention)
        recomputed = with_cost_budget(recomputed, root, fallback=summary.get("cost_budget"))
        if canonical_json(recomputed) != canonical_json(summary):
            diffs = declaration_changes(summary, recomputed)
            report.problems.append(
                f"{SUMMARY_FILE}: differs from the summary recomputed from the ledger: " + "; ".join(diffs[:5])
            )
    return report
