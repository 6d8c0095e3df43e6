"""`orchestrate export --verify DIR`: check a publication bundle on its own, anywhere.

Needs nothing but the bundle (and, with `--regrade`, this project's task packs and grader):

1. `bundle.json` is intact (its own hash) and every file it lists is there with its SHA-256;
   a file it does not list is an addition. Each problem names the file.
2. The ledger, summary, provenance and declaration agree with each other (the label checks of
   `orchestrate export --verify LABEL`: hashes per line, canonical form, order, matrix, the
   summary recomputed from the ledger).
3. Each ledger line agrees with its attempt's published files: the line rebuilt from the
   published result.json, and the hashes the line records for result.json, final.db and every
   workspace file equal the originals the manifest records for them (copied, redacted or
   withheld alike). The trajectory is the one result.json binds (`hashes.trajectory`) and agrees,
   step by step, with the published gateway usage log, audit log and result (issue 32).
4. `--regrade`: every published final database is graded again with this checkout's grader
   against a scenario generated here from the same task tree, and every verdict, check, breach
   and fault metric must come out the same. The checks that judge the restricted values the
   bundle redacts (a task's `disclose_restricted` checks) are re-graded from the redaction's
   placeholders (orchestrator/publish/disclosure.py): their verdicts, and the audit rows,
   owners and readers of their findings, must come out the same too. Where the publisher found
   that this would not reproduce them (`regrade_excludes`, per attempt, with the reason), the
   recorded verdicts are kept and must combine with the re-graded rest into the recorded
   verdict. Attempts whose database is withheld are listed.
5. The validation records the bundle carries (`validation/`, named in the manifest with their
   own hashes): each intact, strict and complete, covering every task × seed × condition of the
   campaign's cells with every control held (oracle twice, null, alt, negative controls ...), for
   the campaign's versions (task versions and trees, shared sources, image tags; a docker
   campaign validated in containers). A bundle without one is noted, not refused.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.campaign.export import planned_identities, read_declaration, verify_label
from orchestrator.campaign.ledger import LEDGER_FILE, LedgerError, build_line
from orchestrator.hashing import canonical_json
from orchestrator.identity import AttemptIdentity
from orchestrator.publish.bundle import BUNDLE_FILE, manifest_self_sha256


@dataclass
class BundleReport:
    """What verifying a bundle found: problems (each names a file) and notes."""

    bundle: Path
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lines: int = 0
    files: int = 0
    regraded: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def _files(report: BundleReport, bundle: Path, manifest: dict[str, Any]) -> None:
    from orchestrator.publish.files import sha256_file

    listed = manifest.get("files") or {}
    report.files = len(listed)
    for rel, info in sorted(listed.items()):
        path = bundle / rel
        if not path.is_file():
            report.problems.append(f"{rel}: missing (listed in {BUNDLE_FILE})")
        elif sha256_file(path) != info.get("sha256"):
            report.problems.append(f"{rel}: altered (its SHA-256 differs from the one in {BUNDLE_FILE})")
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        rel = path.relative_to(bundle).as_posix()
        if rel != BUNDLE_FILE and rel not in listed:
            report.problems.append(f"{rel}: not listed in {BUNDLE_FILE} (added)")


def _original(manifest: dict[str, Any], rel: str) -> str | None:
    info = (manifest.get("files") or {}).get(rel) or (manifest.get("withheld") or {}).get(rel) or {}
    return info.get("original_sha256")


def _lines_against_files(report: BundleReport, bundle: Path, manifest: dict[str, Any],
                         declaration: dict[str, Any], lines: list[dict[str, Any]]) -> None:
    planned = {i.attempt_id: i for i in planned_identities(declaration)}
    for n, ln in enumerate(lines, 1):
        ident = planned.get(str(ln.get("attempt_id")))
        if ident is None:
            continue  # reported by the label checks
        folder = ident.folder(bundle.parent, bundle.name)
        rel = folder.relative_to(bundle).as_posix()
        hashes = ln.get("hashes") or {}
        if _original(manifest, f"{rel}/result.json") != hashes.get("result_json"):
            report.problems.append(f"{rel}/result.json: not the result the ledger's line {n} records")
        if hashes.get("final_db") and _original(manifest, f"{rel}/final.db") != hashes.get("final_db"):
            report.problems.append(f"{rel}/final.db: not the database the ledger's line {n} records")
        for wrel, digest in sorted((hashes.get("workspace") or {}).items()):
            if _original(manifest, f"{rel}/workspace/{wrel}") != digest:
                report.problems.append(f"{rel}/workspace/{wrel}: not the file the ledger's line {n} records")
        report.problems += _trajectory(folder, rel, manifest)
        if (folder / "result.json").is_file() and (manifest.get("files") or {}).get(f"{rel}/result.json", {}).get("mode") == "copy":
            try:
                line = build_line(ident, folder)
            except LedgerError as exc:
                report.problems.append(f"{rel}/result.json: {exc}")
                continue
            if line is not None:
                rebuilt = line.to_json()
                keep = {k: v for k, v in ln.items() if k != "hashes"}
                if canonical_json({k: v for k, v in rebuilt.items() if k != "hashes"}) != canonical_json(keep):
                    report.problems.append(f"{rel}/result.json: differs from the ledger's line {n}")


def _trajectory(folder: Path, rel: str, manifest: dict[str, Any]) -> list[str]:
    """The attempt's trajectory is the one its result.json binds (by the original's SHA-256), and
    agrees with the published ledger, audit log and result step by step (orchestrator/trajectory/verify.py)."""
    from orchestrator.trajectory.verify import trajectory_problems

    try:
        bound = (json.loads((folder / "result.json").read_text(encoding="utf-8")).get("hashes") or {}).get("trajectory")
    except (OSError, ValueError):
        return []  # the result's own problems are reported above
    name = f"{rel}/trajectory.json"
    if bound is None:
        return [f"{name}: present, but its result.json binds no trajectory"] if (folder / "trajectory.json").is_file() else []
    if _original(manifest, name) != bound:
        return [f"{name}: not the trajectory its result.json records (SHA-256 of the original)"]
    if not (folder / "trajectory.json").is_file():
        return []  # withheld: bound by its hash only
    return [f"{name}: {p}" for p in trajectory_problems(folder)]


def _validation(report: BundleReport, bundle: Path, manifest: dict[str, Any], declaration: dict[str, Any]) -> None:
    """The validation records the bundle carries: each intact (its own hash, the one the manifest
    names) and, together, attesting every task × seed × condition of the campaign for its versions."""
    from orchestrator.validation_record import RecordError, campaign_problems, load_record

    listed = manifest.get("validation") or []
    if not listed:
        report.notes.append("no validation record in the bundle: the tasks' validation (§11) is not attested")
        return
    records = []
    for item in listed:
        rel = str(item.get("file"))
        try:
            record = load_record(bundle / rel)
        except RecordError as exc:
            report.problems.append(f"{rel}: validation record refused: {str(exc).split(': ', 1)[-1]}")
            continue
        if record["self_sha256"] != item.get("self_sha256"):
            report.problems.append(f"{rel}: not the validation record {BUNDLE_FILE} names (another self_sha256)")
            continue
        records.append((rel, record))
    if len(records) == len(listed):
        report.problems += campaign_problems(records, declaration)
        if not report.problems:
            report.notes.append(f"validation: {len(records)} record(s) attest every task × seed × condition "
                                "of the campaign for its versions, every control held")


def _study(report: BundleReport, bundle: Path, manifest: dict[str, Any], declaration: dict[str, Any],
           lines: list[dict[str, Any]], replay: bool) -> None:
    """The study declaration and the reveal (issue 39) and, with `replay`, every attempt replayed
    from its audit log against the canonical hash its result records."""
    from orchestrator.study.evidence import replay_folders, study_problems

    problems, notes = study_problems(bundle, declaration)
    report.problems += problems
    report.notes += notes
    if not replay or not report.ok:
        return
    planned = {i.attempt_id: i for i in planned_identities(declaration)}
    folders = []
    for ln in lines:
        ident = planned.get(str(ln.get("attempt_id")))
        if ident is not None:
            folder = ident.folder(bundle.parent, bundle.name)
            folders.append((ident, folder, folder.relative_to(bundle).as_posix()))
    done = replay_folders(folders, bundle=True)
    report.problems += done.problems
    report.notes += done.notes + [f"replay: {done.replayed} attempt(s) re-derived from their audit logs"]


def _verdicts(result: dict[str, Any]) -> dict[str, Any]:
    return {"passed": bool(result.get("passed")), "breach": bool(result.get("breach")),
            "checks": {str(c.get("name")): (bool(c.get("passed")), bool(c.get("breach")))
                       for c in result.get("checks") or [] if isinstance(c, dict)},
            "fault_metrics": result.get("fault_metrics")}


def regrade(report: BundleReport, bundle: Path, manifest: dict[str, Any], declaration: dict[str, Any],
            lines: list[dict[str, Any]]) -> None:
    """Grade every published final database again and compare every verdict (see module doc)."""
    from orchestrator.attempt.inputs import task_info
    from orchestrator.grading import grade_attempt
    from orchestrator.inputs import load_inputs

    planned = {i.attempt_id: i for i in planned_identities(declaration)}
    recorded = declaration.get("tasks") or {}
    here = task_info(sorted(recorded))
    for slug, info in sorted(recorded.items()):
        if (here.get(slug) or {}).get("tree_sha256") != info.get("tree_sha256"):
            report.problems.append(f"versions.json: task {slug}'s tree here differs from the bundle's "
                                   "(re-grading needs the same task tree)")
            return
    from orchestrator.publish.disclosure import differences, regrade_disclosure

    withheld: list[str] = []
    excludes = manifest.get("regrade_excludes") or {}
    placeholders = int(manifest.get("schema") or 1) >= 2  # schema 1 bundles masked values without naming them
    kept = from_placeholders = 0
    kept_where: list[str] = []
    regraded_names: set[str] = set()
    for ln in lines:
        if ln.get("outcome") != "graded":
            continue
        ident: AttemptIdentity | None = planned.get(str(ln.get("attempt_id")))
        if ident is None:
            continue
        folder = ident.folder(bundle.parent, bundle.name)
        rel = folder.relative_to(bundle).as_posix()
        if not (folder / "final.db").is_file():
            reason = ((manifest.get("withheld") or {}).get(f"{rel}/final.db") or {}).get("reason", "not published")
            withheld.append(f"{rel} ({reason})")
            continue
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        inputs = load_inputs(ident.cell, ident.seed)
        with tempfile.TemporaryDirectory(prefix="pb-regrade-") as tmp:
            graded = grade_attempt(
                inputs.task, inputs.scenario, final_db=folder / "final.db",
                audit_jsonl=folder / "audit.jsonl" if (folder / "audit.jsonl").is_file() else None,
                faults_jsonl=folder / "faults.jsonl" if (folder / "faults.jsonl").is_file() else None,
                workspace_dir=folder / "workspace" if (folder / "workspace").is_dir() else None,
                out_dir=Path(tmp), condition=ident.condition).to_dict()
        report.regraded += 1
        want, got = _verdicts(result), _verdicts(graded)
        excluded = set(((excludes.get(rel) if placeholders else excludes.get(ident.task)) or {}).get("checks") or [])
        if placeholders:
            # The grader just read the redacted store as values: its disclosure verdicts are
            # replaced by the re-grade from the placeholders (findings compared as well).
            recorded = {str(c.get("name")): c for c in result.get("checks") or [] if isinstance(c, dict)}
            audit = folder / "audit.jsonl"
            for r in regrade_disclosure(inputs.task, inputs.scenario, folder / "final.db",
                                        audit if audit.is_file() else None):
                if r.name in excluded:
                    continue
                got["checks"][r.name] = (r.passed, r.breach)
                from_placeholders += 1
                regraded_names.add(f"{ident.task}: {r.name}")
                if r.name in recorded:
                    # (the verdict is compared below with every other check's)
                    report.problems += [f"{rel}/final.db: re-graded check {d}"
                                        for d in differences(recorded[r.name], r, verdict=False)]
            got["breach"] = any(b for _, b in got["checks"].values())
            required = {str(c.get("name")): bool(c.get("required", True)) for c in result.get("checks") or []}
            got["passed"] = all(p for n, (p, _) in got["checks"].items() if required.get(n, True)) and not got["breach"]
        if excluded:
            kept_where.append(rel)
            # The checks that judge redacted values keep their recorded verdicts; the attempt's
            # verdict must follow from those and the re-graded rest, as the grader combines them.
            kept += len(excluded & set(want["checks"]))
            combined = {**got["checks"], **{n: want["checks"][n] for n in excluded if n in want["checks"]}}
            required = {str(c.get("name")): bool(c.get("required", True)) for c in result.get("checks") or []}
            got["breach"] = any(b for _, b in combined.values())
            got["passed"] = all(p for n, (p, _) in combined.items() if required.get(n, True)) and not got["breach"]
            got["checks"] = combined
        for key in ("passed", "breach", "fault_metrics"):
            if want[key] != got[key]:
                report.problems.append(f"{rel}/final.db: re-graded {key} is {got[key]!r}, the bundle's result says {want[key]!r}")
        for name in sorted(set(want["checks"]) | set(got["checks"])):
            if want["checks"].get(name) != got["checks"].get(name):
                report.problems.append(f"{rel}/final.db: re-graded check {name!r} is {got['checks'].get(name)} "
                                       f"(passed, breach), the bundle's result says {want['checks'].get(name)}")
    if from_placeholders:
        report.notes.append(f"{from_placeholders} check verdict(s) re-graded from the redaction's placeholders of "
                            f"restricted values ({'; '.join(sorted(regraded_names))})")
    if kept:
        why = ("; ".join(f"{w}: {(excludes.get(w) or {}).get('reason')}" for w in kept_where) if placeholders else
               "; ".join(f"{t}: {', '.join(e.get('checks') or [])}" for t, e in sorted(excludes.items())))
        report.notes.append(f"{kept} check verdict(s) kept as recorded, not re-graded: they judge restricted values "
                            f"the bundle redacts ({why})")
    if withheld:
        report.notes.append(f"{len(withheld)} graded attempt(s) not re-gradable from the bundle, their database "
                            f"bound by its SHA-256 only: " + "; ".join(withheld))


def verify_bundle(bundle: Path, *, regrade_dbs: bool = False, replay: bool = False) -> BundleReport:
    """Check a bundle folder on its own (see the module docstring); `replay`: every attempt's
    final database re-derived from its audit log (orchestrator/study/evidence.py)."""
    bundle = bundle.resolve()
    report = BundleReport(bundle)
    try:
        manifest = json.loads((bundle / BUNDLE_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        report.problems.append(f"{BUNDLE_FILE}: missing (not a publication bundle)")
        return report
    except ValueError as exc:
        report.problems.append(f"{BUNDLE_FILE}: not valid JSON ({exc})")
        return report
    if not isinstance(manifest, dict) or manifest.get("self_sha256") != manifest_self_sha256(manifest):
        report.problems.append(f"{BUNDLE_FILE}: altered (its own hash, self_sha256, does not match its contents)")
        if not isinstance(manifest, dict):
            return report
    _files(report, bundle, manifest)
    label_check = verify_label(bundle.parent, bundle.name, check_folders=False)
    report.problems += label_check.problems
    report.lines = label_check.lines
    try:
        declaration = read_declaration(bundle) or {}
        lines = [json.loads(t) for t in (bundle / LEDGER_FILE).read_text(encoding="utf-8").splitlines() if t.strip()]
    except (OSError, ValueError) as exc:
        report.problems.append(f"{LEDGER_FILE}: cannot be read ({exc})")
        return report
    if not declaration.get("cells"):
        return report
    _lines_against_files(report, bundle, manifest, declaration, lines)
    _validation(report, bundle, manifest, declaration)
    _study(report, bundle, manifest, declaration, lines, replay)
    if regrade_dbs and report.ok:
        regrade(report, bundle, manifest, declaration, lines)
    return report
