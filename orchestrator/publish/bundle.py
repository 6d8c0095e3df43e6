"""`orchestrate publish LABEL --out DIR`: the publication bundle of a campaign.

Layout (the label's own layout, so the ledger's checks run on it unchanged)::

    DIR/bundle.json        manifest: SHA-256 of every file, what was redacted or withheld and why
    DIR/campaign.json  attempts.jsonl  summary.json  provenance.json   (as exported, hash-bound)
    DIR/versions.json      task trees and versions, handbooks, grader, images, orchestrator
                           revision, system declarations, models and the gateway's price table
    DIR/conditions.json    conditions (fault specifications), budgets, seeds, repetitions
    DIR/redaction.json     per file, how many credentials / restricted values were taken out
    DIR/report.html  DIR/report_files/                    the report, rendered from the bundle
    DIR/reviews.jsonl       the failure review's decisions (orchestrator/review/), redacted like the traces
    DIR/delta.json          a rescored label's delta (orchestrator/regrade/), redacted like the traces
    DIR/study.json  DIR/reveal.json   a declared study's declaration, and the sealed seeds' secret
                           (`--reveal`; required for sealed seeds): orchestrator/study/evidence.py
    DIR/validation/record-<hash>.json  the validation record(s) given with --validation, byte for
                           byte (orchestrator/validation_record.py): checked against the campaign
    DIR/<cell>/seed-<n>/rep-<k>/                          each attempt: result.json, audit.jsonl,
                           faults.jsonl, turns.jsonl, turns/, logs/, projections/, gateway.jsonl,
                           final.db and workspace/ (redacted copies; hashes only with --withhold)

The label is exported and verified first (a label that does not verify is not published). The
ledger, summary, provenance and results are published byte for byte — they are what the hashes
bind — and must hold no secret; the traces are redacted (orchestrator/publish/redaction.py).
`orchestrate export --verify DIR` checks a bundle on its own (orchestrator/publish/verify.py).
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

from orchestrator.campaign.declaration import DECLARATION_FILE
from orchestrator.campaign.export import export_label, planned_identities, read_declaration, verify_label
from orchestrator.campaign.ledger import LEDGER_FILE
from orchestrator.campaign.provenance import PROVENANCE_FILE
from orchestrator.campaign.summary import SUMMARY_FILE
from orchestrator.hashing import canonical_json, sha256_bytes
from orchestrator.publish.files import SKIP_SUFFIXES, Entry, copy_file, redact_bytes, redact_db, sha256_file
from orchestrator.publish.redaction import Secrets
from orchestrator.publish.secrets import db_references, gather, judged_checks, restricted_classes
from orchestrator.publish.versions import build_conditions, build_versions
from orchestrator.regrade.delta import DELTA_FILE
from orchestrator.review.decisions import DECISIONS_FILE
from orchestrator.study.evidence import carry_study

BUNDLE_FILE = "bundle.json"
BUNDLE_SCHEMA = 2  # 2: restricted values the grader counts are placeholders; disclosure checks re-gradable
VERSIONS_FILE = "versions.json"
CONDITIONS_FILE = "conditions.json"
REDACTION_FILE = "redaction.json"
VALIDATION_DIR = "validation"
BOUND_FILES = (LEDGER_FILE, SUMMARY_FILE, PROVENANCE_FILE)  # hash-bound: published byte for byte
WITHHOLDABLE = ("final_db", "workspace")


class PublishError(RuntimeError):
    """A label that cannot be published (not verified, a secret in a hash-bound file, bad output)."""


def manifest_self_sha256(manifest: dict[str, Any]) -> str:
    """The manifest's own hash: its canonical JSON without the `self_sha256` field."""
    return sha256_bytes(canonical_json({k: v for k, v in manifest.items() if k != "self_sha256"}).encode())


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def _attempt(root: Path, out: Path, folder: Path, secrets: Secrets, withhold: set[str],
             ledger_hashes: dict[str, Any]) -> list[Entry]:
    """Copy one attempt folder into the bundle; return what became of each file."""
    rel_folder = folder.relative_to(root)
    entries: list[Entry] = []
    reason_db = reason_ws = ""
    if "final_db" in withhold:
        reason_db = "withheld by the publisher (--withhold final_db)"
    if "workspace" in withhold:
        reason_ws = "withheld by the publisher (--withhold workspace)"
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(folder).as_posix()
        bundle_rel = (rel_folder / rel).as_posix()
        if path.name.endswith(SKIP_SUFFIXES):
            continue
        if rel == "final.db":
            if reason_db:
                entries.append(Entry(bundle_rel, "withheld", sha256_file(path), reason_db))
                continue
            redact_db(path, out / bundle_rel, secrets)
            mode = "redacted" if sha256_file(out / bundle_rel) != sha256_file(path) else "copy"
            entries.append(Entry(bundle_rel, mode, sha256_file(path)))
            continue
        if rel.startswith("workspace/") and reason_ws:
            entries.append(Entry(bundle_rel, "withheld", sha256_file(path), reason_ws))
            continue
        entries.append(copy_file(path, out / bundle_rel, bundle_rel, secrets))
    for rel, digest in sorted((ledger_hashes.get("workspace") or {}).items()):
        if digest.startswith("symlink:"):
            entries.append(Entry((rel_folder / "workspace" / rel).as_posix(), "withheld", digest, "a symlink"))
    return entries


def publish(runs_root: Path, label: str, out: Path, *, model_access: tuple[Path, ...] = (),
            systems_file: Path | None = None, withhold: tuple[str, ...] = (),
            validation: tuple[Path, ...] = (), reveal: Path | None = None) -> dict[str, Any]:
    """Write the bundle of `label` into `out` (new or empty); return its manifest.

    `model_access`: model-access files whose real keys are redacted everywhere (and the one that
    reproduces a system's declared hash describes its models); `systems_file`: the systems file
    the campaign ran with, for the system definitions in versions.json; `validation`: validation
    records that together attest every task × seed × condition of the campaign, for its versions
    (refused, with the reason, when they do not)."""
    bad = set(withhold) - set(WITHHOLDABLE)
    if bad:
        raise PublishError(f"--withhold takes {', '.join(WITHHOLDABLE)}; got {', '.join(sorted(bad))}")
    root = runs_root / label
    if out.exists() and any(out.iterdir()):
        raise PublishError(f"{out} exists and is not empty: publish into a new folder")
    if out.resolve() == root.resolve() or root.resolve() in out.resolve().parents:
        raise PublishError(f"{out} is inside the label's own folder {root}")
    export_label(runs_root, label)
    checked = verify_label(runs_root, label)
    if not checked.ok:
        raise PublishError(f"{label} does not verify; fix it before publishing: " + "; ".join(checked.problems[:5]))
    declaration = read_declaration(root) or {}
    records = _validation_records(validation, declaration)
    lines = [json.loads(t) for t in (root / LEDGER_FILE).read_text(encoding="utf-8").splitlines() if t.strip()]
    by_id = {i.attempt_id: i for i in planned_identities(declaration)}
    folders = [(ln["identity"]["task"], by_id[ln["attempt_id"]].folder(runs_root, label)) for ln in lines]
    secrets = gather(root, folders, model_access=model_access)
    classes = {task: restricted_classes(task) for task, _ in folders}

    out.mkdir(parents=True, exist_ok=True)
    entries: list[Entry] = []
    for name in BOUND_FILES:
        raw = (root / name).read_bytes()
        found = secrets.found_in_file(name, raw.decode("utf-8"))
        if found:
            raise PublishError(f"{name} holds {found[0]}: a hash-bound file cannot be redacted; not published")
        shutil.copyfile(root / name, out / name)
        entries.append(Entry(name, "copy", sha256_bytes(raw)))
    for rel, (path, _record) in records.items():
        raw = path.read_bytes()
        found = secrets.found_in_file(path.name, raw.decode("utf-8"))
        if found:
            raise PublishError(f"validation record {path} holds {found[0]}: a hash-bound file cannot be redacted")
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / rel)
        entries.append(Entry(rel, "copy", sha256_bytes(raw)))
    # campaign.json: its hash covers everything but `volatile` (argv and paths), which may be redacted.
    decl_raw = (root / DECLARATION_FILE).read_bytes()
    decl_out = redact_bytes(decl_raw, DECLARATION_FILE, secrets) or decl_raw
    (out / DECLARATION_FILE).write_bytes(decl_out)
    try:  # the study declaration and, for sealed seeds, the reveal (orchestrator/study/evidence.py)
        carried = carry_study(root, out, reveal)
    except ValueError as exc:
        raise PublishError(str(exc)) from None
    entries += [Entry(name, "copy", sha256_file(out / name)) for name in carried]
    entries.append(Entry(DECLARATION_FILE, "copy" if decl_out == decl_raw else "redacted", sha256_bytes(decl_raw)))

    if (root / DECISIONS_FILE).is_file():  # the failure review: a reviewer's note may quote a secret
        entries.append(copy_file(root / DECISIONS_FILE, out / DECISIONS_FILE, DECISIONS_FILE, secrets))
    if (root / DELTA_FILE).is_file():  # a rescoring: its checks' details before and after quote the agent
        entries.append(copy_file(root / DELTA_FILE, out / DELTA_FILE, DELTA_FILE, secrets))

    for ln, (_task, folder) in zip(lines, folders, strict=True):
        # The attempt's own references, as the grader blanks them when it reads this attempt.
        secrets.references = db_references(folder / "final.db") if (folder / "final.db").is_file() else set()
        entries += _attempt(root, out, folder, secrets, set(withhold), ln.get("hashes") or {})
    secrets.references = set()
    excludes = _disclosure_self_check(root, out, lines, folders, by_id, classes)

    provenance = json.loads((root / PROVENANCE_FILE).read_text())
    for name, data in ((VERSIONS_FILE, build_versions(declaration, provenance, systems_file=systems_file,
                                                      model_access=model_access)),
                       (CONDITIONS_FILE, build_conditions(declaration, systems_file, model_access))):
        _write_json(out / name, secrets.value(data))  # a system's env or argv may name a secret
    from orchestrator.report.label_page import write_report

    write_report(out.parent, out.name, out / "report.html", title=str(declaration.get("label") or label))
    secrets.neutralize = False  # the report shows the bundle's own placeholders: keep them as they are
    for page in sorted([out / "report.html", *(out / "report_files").glob("*.html")]):
        raw = page.read_bytes()
        clean = redact_bytes(raw, page.name, secrets)
        if clean is not None and clean != raw:
            page.write_bytes(clean)
    counts = {k: v for k, v in sorted(secrets.counts.items())}
    _write_json(out / REDACTION_FILE, {
        "schema": 1,
        "counts": counts,
        "redacted": sorted(e.path for e in entries if e.mode == "redacted"),
        "withheld": sorted(e.path for e in entries if e.mode == "withheld"),
        "method": "credentials -> [credential N]; a restricted value the grader counts -> '[restricted CLASS OWNER]' "
                  "(a digit run keeps its last four digits after it); digits that only resemble a value masked "
                  "(•) but for their last four; a text in which the grader's matcher still finds a value -> its "
                  "placeholders, or '[redacted: restricted value]'",
        "restricted_classes": {t: c for t, c in sorted(classes.items()) if c},
    })
    leftovers = scan_bundle(out, secrets)
    if leftovers:
        raise PublishError(f"a secret survived redaction in {leftovers[0]}; the bundle in {out} is incomplete")

    published = {e.path: e for e in entries}
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = path.relative_to(out).as_posix()
        entry = published.get(rel)
        info: dict[str, Any] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
        if entry is not None:
            info.update(entry.as_dict())
        files[rel] = info
    manifest: dict[str, Any] = {
        "schema": BUNDLE_SCHEMA,
        "label": declaration.get("label") or label,
        "created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "files": files,
        "withheld": {e.path: e.as_dict() for e in entries if e.mode == "withheld"},
        # Checks that judge the restricted values the bundle redacts: re-graded from the
        # redaction's placeholders (orchestrator/publish/disclosure.py) ...
        "regrade_from_placeholders": {t: {"checks": judged_checks(t), "classes": c}
                                      for t, c in sorted(classes.items()) if c},
        # ... but in the attempts where that would not reproduce the recorded verdict and findings
        # (the publisher tried): there the recorded verdicts stand, bound by the original
        # database's hash, and the reason says what differed.
        "regrade_excludes": excludes,
        "attempts": [{"attempt_id": ln["attempt_id"], "folder": f.relative_to(root).as_posix()}
                     for ln, (_, f) in zip(lines, folders, strict=True)],
        # The validation records that attest the campaign's tasks (checked by export --verify).
        "validation": [{"file": rel, "self_sha256": rec["self_sha256"]} for rel, (_, rec) in records.items()],
    }
    manifest["self_sha256"] = manifest_self_sha256(manifest)
    _write_json(out / BUNDLE_FILE, manifest)
    return manifest


def _validation_records(paths: tuple[Path, ...], declaration: dict[str, Any]) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Bundle path -> (file, record) of each validation record; PublishError when one is altered
    or they do not attest the campaign (what is missing or differs, named)."""
    from orchestrator.validation_record import RecordError, campaign_problems, load_record

    if not paths:
        return {}
    out: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in paths:
        try:
            record = load_record(path)
        except RecordError as exc:
            raise PublishError(f"validation record {exc}") from None
        out[f"{VALIDATION_DIR}/record-{record['self_sha256'][:16]}.json"] = (path, record)
    problems = campaign_problems([(str(p), r) for p, r in out.values()], declaration)
    if problems:
        raise PublishError(f"the validation record(s) do not attest this campaign: {'; '.join(problems[:5])}"
                           + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    return out


def _disclosure_self_check(root: Path, out: Path, lines: list[dict[str, Any]], folders: list[tuple[str, Path]],
                           by_id: dict[str, Any], classes: dict[str, list[str]]) -> dict[str, Any]:
    """Re-grade every published attempt's disclosure checks from its placeholders, as a verifier
    will; return the attempts (folder -> checks, reason) where that does not reproduce the result."""
    from orchestrator.publish.disclosure import attempt_differences

    excludes: dict[str, Any] = {}
    for ln, (task, folder) in zip(lines, folders, strict=True):
        rel = folder.relative_to(root).as_posix()
        if ln.get("outcome") != "graded" or not classes.get(task) or not (out / rel / "final.db").is_file():
            continue
        ident = by_id[ln["attempt_id"]]
        diffs = attempt_differences(ident.cell, ident.seed, out / rel)
        differing = {name: d for name, d in diffs.items() if d}
        if differing:
            excludes[rel] = {"checks": sorted(differing), "reason": "; ".join(x for d in differing.values() for x in d)}
    return excludes


def scan_bundle(out: Path, secrets: Secrets) -> list[str]:
    """Files of a bundle that still hold a credential or restricted value (text files line by
    line; databases were checked cell by cell when they were redacted)."""
    found = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        if raw.startswith(b"SQLite format 3"):
            continue
        if secrets.found_in_file(path.name, raw.decode("utf-8", errors="replace")):
            found.append(path.relative_to(out).as_posix())
    return found
