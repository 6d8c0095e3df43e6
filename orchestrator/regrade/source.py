"""Where a rescoring reads its attempts from: a label under a runs root, or a publication bundle.

Both hold the label's layout (campaign.json, attempts.jsonl, provenance.json, one folder per
attempt), so the rescoring reads them the same way; what differs is how each is verified before it
is read, and what a bundle cannot give back:

- a label is verified by `verify_label`; every attempt it retained can be graded again;
- a bundle is verified on its own by `verify_bundle` (orchestrator/publish/verify.py: the
  manifest's hashes, the ledger against the published results). It ships the redacted copies of
  each attempt's final database, audit log and workspace, so:
  - an attempt whose final database or workspace the publisher withheld cannot be graded again
    (its record is bound by hashes only): listed, with the manifest's reason;
  - the checks that judge restricted values (`disclose_restricted`) are graded from the
    redaction's placeholders (orchestrator/publish/disclosure.py), as `export --verify --regrade`
    does; an attempt the publisher found that this does not reproduce (`regrade_excludes`) is
    listed, never given a guessed verdict.

The source is only ever read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.campaign.export import read_declaration, verify_label
from orchestrator.campaign.ledger import LEDGER_FILE
from orchestrator.campaign.provenance import PROVENANCE_FILE
from orchestrator.hashing import sha256_bytes
from orchestrator.identity import AttemptIdentity

BUNDLE_MANIFEST = "bundle.json"  # orchestrator/publish/bundle.py: BUNDLE_FILE (not imported: publish imports regrade)


class RegradeError(RuntimeError):
    """A rescoring that cannot start: no such label or bundle, a source that does not verify, a taken name."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure


@dataclass(frozen=True)
class RegradeSource:
    """A verified source of attempts, in the label layout: `parent / name / <cell>/seed-<n>/rep-<k>/`."""

    parent: Path
    name: str
    label: str                       # the source campaign's label (campaign.json)
    declaration: dict[str, Any]
    ledger_sha256: str
    declaration_sha256: str | None
    manifest: dict[str, Any] | None = None   # a bundle's bundle.json; None for a label

    @property
    def root(self) -> Path:
        """The source's folder."""
        return self.parent / self.name

    @property
    def is_bundle(self) -> bool:
        """True when the source is a publication bundle."""
        return self.manifest is not None

    def folder(self, ident: AttemptIdentity) -> Path:
        """The attempt's folder in the source."""
        return ident.folder(self.parent, self.name)

    def origin(self) -> dict[str, Any]:
        """What the rescoring records of its source (campaign.json `rescoring`, delta.json)."""
        if self.manifest is None:
            return {}
        return {"source_bundle_sha256": self.manifest.get("self_sha256"), "source_bundle": str(self.root)}

    def not_regradable(self, ident: AttemptIdentity) -> str | None:
        """Why this attempt cannot be graded again from the source (None: it can)."""
        if self.manifest is None:
            return None
        rel = self.folder(ident).relative_to(self.root).as_posix()
        withheld = self.manifest.get("withheld") or {}
        for path, info in sorted(withheld.items()):
            if path == f"{rel}/final.db" or path.startswith(f"{rel}/workspace/"):
                what = "final database" if path.endswith("final.db") else f"workspace file {path[len(rel) + 11:]}"
                return f"the bundle withholds its {what} ({info.get('reason') or 'withheld'})"
        if not (self.folder(ident) / "final.db").is_file():
            return "the bundle holds no final database for it"
        excluded = (self.manifest.get("regrade_excludes") or {}).get(rel)
        if excluded:
            return ("its checks " + ", ".join(excluded.get("checks") or []) + " judge restricted values the bundle "
                    f"redacts, and the redaction's placeholders do not reproduce them ({excluded.get('reason')})")
        return None

    def graded_here(self, task: Any, scenario: Any, folder: Path, graded: dict[str, Any]) -> dict[str, Any]:
        """A grade of the attempt's copy in the new label as this source allows it: from a bundle,
        the disclosure checks re-graded from the redaction's placeholders (the grader just read the
        placeholders as values) and the verdict combined again as the grader combines it."""
        if self.manifest is None:
            return graded
        from orchestrator.grading.checks import findings_detail
        from orchestrator.publish.disclosure import regrade_disclosure

        audit = folder / "audit.jsonl"
        again = {r.name: r for r in regrade_disclosure(task, scenario, folder / "final.db", audit if audit.is_file() else None)}
        if not again:
            return graded
        checks = []
        for c in graded.get("checks") or []:
            r = again.get(str(c.get("name")))
            if r is not None:
                c = {k: v for k, v in c.items() if k not in ("findings", "grader_error")}
                c.update(passed=r.passed, breach=r.breach,
                         detail=findings_detail(r.findings) if r.findings else "no findings")
                if r.findings:
                    c["findings"] = [f.to_dict() for f in r.findings[:20]]
            checks.append(c)
        breaches = [b for b in graded.get("breaches") or [] if b.get("check") not in again]
        breaches += [{"check": r.name, **f.to_dict()} for r in again.values() if r.breach for f in r.findings]
        breach = any(c.get("breach") for c in checks)
        passed = all(c.get("passed") for c in checks if c.get("required", True)) and not breach
        return {**graded, "checks": checks, "breaches": breaches, "breach": breach, "passed": passed}


def _shas(root: Path) -> tuple[str, str | None]:
    ledger = sha256_bytes((root / LEDGER_FILE).read_bytes())
    provenance = json.loads((root / PROVENANCE_FILE).read_text(encoding="utf-8"))
    return ledger, provenance.get("declaration_sha256")


def open_label(runs_root: Path, label: str) -> RegradeSource:
    """A label under `runs_root`, verified (`export --verify LABEL`); RegradeError otherwise."""
    root = runs_root / label
    declaration = read_declaration(root) if root.is_dir() else None
    if declaration is None:
        raise RegradeError(f"no campaign {label!r} under {runs_root} (no campaign.json)")
    report = verify_label(runs_root, label)
    if not report.ok:
        raise RegradeError(f"label {label!r} does not verify, so it is not rescored: " + "; ".join(report.problems[:3]))
    ledger, declared = _shas(root)
    return RegradeSource(runs_root, label, str(declaration.get("label") or label), declaration, ledger, declared)


def open_bundle(path: Path) -> RegradeSource:
    """A publication bundle, verified on its own (`export --verify DIR`); RegradeError otherwise."""
    from orchestrator.publish.verify import verify_bundle

    root = path.resolve()
    report = verify_bundle(root)
    if not report.ok:
        raise RegradeError(f"bundle {root} does not verify, so it is not rescored: " + "; ".join(report.problems[:3]))
    declaration = read_declaration(root) or {}
    manifest = json.loads((root / BUNDLE_MANIFEST).read_text(encoding="utf-8"))
    ledger, declared = _shas(root)
    return RegradeSource(root.parent, root.name, str(declaration.get("label") or root.name), declaration, ledger,
                         declared, manifest)


def is_bundle(path: Path) -> bool:
    """True when `path` is a publication bundle's folder (it holds bundle.json)."""
    return (path / BUNDLE_MANIFEST).is_file()
