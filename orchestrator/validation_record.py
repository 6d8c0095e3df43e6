"""The validation record: what `orchestrate validate --record FILE` proved, bound to versions.

A JSON file (schema 1) holding every entry of the validation matrix — per task × seed ×
condition × control: the verdict (`ok`), the note, the attempt's failed checks and canonical
database hash — with the versions it was proved for: each task's version and tree hash, the
shared sources' hashes and the images' content-hash tags (`orchestrator.campaign.sources`), the
image digests the attempts recorded, the backend and the commit. `run` is what the run that
wrote it cost (wall time, attempts, attempts per minute, scenario builds; a resumed run counts
only what it ran itself). `self_sha256` is the SHA-256 of its canonical JSON without that field.

The record is written after every task, so a validation that stops can be resumed
(`--resume`): a task whose matrix the record holds complete, for the same versions and options,
with no attempt lost to the infrastructure, is not run again.

`campaign_problems` checks records against a campaign's declaration (`orchestrate publish
--validation`, `export --verify` on a bundle): each record intact, strict, complete, covering
every task × seed × condition of the campaign's cells, every control held, and the versions the
same as the campaign's (task versions and trees, shared sources, image tags, a docker campaign
validated in containers).
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from orchestrator.cells import CLEAN
from orchestrator.hashing import canonical_json, sha256_bytes
from orchestrator.validate import Entry, Report

RECORD_SCHEMA = 1
RECORD_KIND = "process-bench validation record"


class RecordError(ValueError):
    """A validation record that cannot be read or has been altered."""


def record_self_sha256(record: dict[str, Any]) -> str:
    """The record's own hash: its canonical JSON without `self_sha256`."""
    return sha256_bytes(canonical_json({k: v for k, v in record.items() if k != "self_sha256"}).encode())


def current_versions(tasks: list[str], backend: str) -> dict[str, Any]:
    """The versions a validation of `tasks` on `backend` proves things for (read from this checkout)."""
    from orchestrator.attempt.inputs import task_info
    from orchestrator.campaign.provenance import git_commit
    from orchestrator.campaign.sources import label_sources

    return {"tasks": task_info(tasks), "sources": label_sources(), "project": git_commit(), "backend": backend,
            "image_digests": {}}


def _entry_dict(e: Entry) -> dict[str, Any]:
    return {"task": e.task, "seed": e.seed, "condition": e.condition, "control": e.control, "ok": e.ok,
            "note": e.note, "failed_checks": list(e.failed), "canonical_db": e.canonical, "infra": e.infra}


def _entry(d: dict[str, Any]) -> Entry:
    return Entry(d["task"], d["control"], d["seed"], bool(d["ok"]), d.get("note", ""), d.get("condition", CLEAN),
                 list(d.get("failed_checks") or []), d.get("canonical_db"), bool(d.get("infra")))


def build_record(rep: Report, versions: dict[str, Any], options: dict[str, Any], done: list[str],
                 carried: dict[str, Any] | None = None) -> dict[str, Any]:
    """The record of `rep` so far; `done`: the tasks whose matrix is complete; `carried`: the
    notes and disclosure tallies of reused tasks, from the record they were reused from."""
    carried = carried or {}
    complete = not rep.interrupted and set(done) >= set(rep.tasks)
    record: dict[str, Any] = {
        "kind": RECORD_KIND,
        "schema": RECORD_SCHEMA,
        "created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "options": options,
        "versions": versions,
        "tasks_done": sorted(done),
        "complete": complete,
        "ok": complete and rep.ok,
        "problems": len(rep.problems),
        "entries": [_entry_dict(e) for e in rep.entries],
        # The seeds used in development and validation: held-out (sealed) seeds must avoid them.
        "seeds": sorted({int(e.seed) for e in rep.entries if e.seed is not None}),
        "notes": list(carried.get("notes") or []) + list(rep.notes),
        "disclosure": dict(sorted({**(carried.get("disclosure") or {}),
                                   **{t: tally.summary() for t, tally in rep.disclosure.items()}}.items())),
        # What this run cost (a resumed run: only what it ran itself): wall time, attempts per minute.
        "run": rep.figures.as_dict() if rep.figures is not None else None,
    }
    record["self_sha256"] = record_self_sha256(record)
    return record


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write the record atomically (a stop while writing leaves the previous one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_record(path: Path) -> dict[str, Any]:
    """Read a record and check its own hash; RecordError says what is wrong."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise RecordError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(record, dict) or record.get("kind") != RECORD_KIND:
        raise RecordError(f"{path}: not a validation record")
    if record.get("schema") != RECORD_SCHEMA:
        raise RecordError(f"{path}: validation record schema {record.get('schema')!r}, this checkout reads {RECORD_SCHEMA}")
    if record.get("self_sha256") != record_self_sha256(record):
        raise RecordError(f"{path}: altered (its own hash, self_sha256, does not match its contents)")
    return record


def reusable(record: dict[str, Any], versions: dict[str, Any], options: dict[str, Any]) -> tuple[dict[str, list[Entry]], str]:
    """Task -> its recorded entries, for each task a resumed validation need not run again, and
    why nothing is reused when the record is for other options or sources ("" otherwise)."""
    if record.get("options") != options:
        return {}, "it was made with other options (tasks, seeds, --strict, --faults)"
    old = record.get("versions") or {}
    for key in ("sources", "backend"):
        if old.get(key) != versions.get(key):
            return {}, f"its {key} {'differ' if key.endswith('s') else 'differs'} from this checkout's"
    out: dict[str, list[Entry]] = {}
    entries = [_entry(d) for d in record.get("entries") or []]
    for slug in record.get("tasks_done") or []:
        if (old.get("tasks") or {}).get(slug) != (versions.get("tasks") or {}).get(slug):
            continue  # the pack changed since: validate it again
        mine = [e for e in entries if e.task == slug]
        if mine and not any(e.infra for e in mine):
            out[slug] = mine
    return out, ""


def carried_over(record: dict[str, Any], tasks: set[str]) -> dict[str, Any]:
    """The notes and disclosure tallies `record` holds for `tasks` (reused by a resumed run)."""
    notes = [n for n in record.get("notes") or [] if str(n).split(":", 1)[0].split(" ", 1)[0] in tasks]
    return {"notes": notes, "disclosure": {t: d for t, d in (record.get("disclosure") or {}).items() if t in tasks}}


# ------------------------------------------------------------------ a record against a campaign


def _task_problems(record: dict[str, Any], name: str, slug: str, info: dict[str, Any], seeds: list[int],
                   conditions: set[str]) -> list[str]:
    """Why `record` (called `name`) does not attest task `slug` of the campaign (empty: it does)."""
    out: list[str] = []
    have = ((record.get("versions") or {}).get("tasks") or {}).get(slug) or {}
    for key in ("version", "tree_sha256"):
        if have.get(key) != info.get(key):
            out.append(f"{name}: task {slug}'s {key} is {have.get(key)!r} there, the campaign ran {info.get(key)!r} "
                       "(the record is for other versions)")
    if out:
        return out
    if slug not in (record.get("tasks_done") or []):
        return [f"{name}: task {slug}'s validation was not finished"]
    entries = [e for e in record.get("entries") or [] if e.get("task") == slug]
    for seed in seeds:
        for cond in sorted(conditions):
            controls = {e.get("control") for e in entries if e.get("seed") == seed and e.get("condition") == cond}
            for needed in ("oracle#1", "oracle#2", "null", "alt"):
                if needed not in controls:
                    out.append(f"{name}: does not cover task {slug} seed {seed} condition {cond} (no {needed} control)")
    for e in entries:
        if not e.get("ok"):
            where = f"task {slug}" + ("" if e.get("seed") is None else f" seed {e['seed']}") + f" ({e.get('condition')})"
            out.append(f"{name}: control {e.get('control')} of {where} did not hold: {str(e.get('note'))[:200]}")
    return out


def _source_problems(record: dict[str, Any], name: str, declaration: dict[str, Any]) -> list[str]:
    out: list[str] = []
    versions = record.get("versions") or {}
    mine, theirs = versions.get("sources") or {}, declaration.get("sources") or {}
    for part, digest in sorted((theirs.get("parts") or {}).items()):
        if (mine.get("parts") or {}).get(part) != digest:
            out.append(f"{name}: shared source {part} differs from the campaign's (the record is for other versions)")
    for role, tag in sorted((theirs.get("images") or {}).items()):
        if (mine.get("images") or {}).get(role) != tag:
            out.append(f"{name}: the {role} image is {(mine.get('images') or {}).get(role)!r} there, the campaign "
                       f"ran {tag!r} (the record is for other images)")
    if declaration.get("backend") == "docker" and versions.get("backend") != "docker":
        out.append(f"{name}: validated on the {versions.get('backend')!r} backend; the campaign ran in containers "
                   "(validate with --backend docker)")
    return out


def campaign_problems(records: list[tuple[str, dict[str, Any]]], declaration: dict[str, Any]) -> list[str]:
    """Why `records` (name, loaded record) do not attest the campaign `declaration` (empty: they do).

    Each record must be strict, complete and of the campaign's shared sources and images; each
    task of the campaign must be attested by one record: same version and tree, every seed ×
    condition of its cells covered (oracle twice, null, alt), every control of it held."""
    if not records:
        return ["no validation record given"]
    out: list[str] = []
    usable: list[tuple[str, dict[str, Any]]] = []
    for name, record in records:
        probs = _source_problems(record, name, declaration)
        if not (record.get("options") or {}).get("strict"):
            probs.append(f"{name}: not a --strict validation")
        out += probs
        if not probs:
            usable.append((name, record))
    seeds = [int(s) for s in declaration.get("seeds") or []]
    by_task: dict[str, set[str]] = {}
    for cell in declaration.get("cells") or []:
        by_task.setdefault(str(cell.get("task")), set()).add(str(cell.get("condition") or CLEAN))
    for slug, info in sorted((declaration.get("tasks") or {}).items()):
        tried = [(n, r) for n, r in usable if slug in ((r.get("versions") or {}).get("tasks") or {})]
        if not tried:
            out.append(f"no validation record covers task {slug}")
            continue
        found = [_task_problems(r, n, slug, info, seeds, by_task.get(slug, {CLEAN})) for n, r in tried]
        if not any(not f for f in found):
            out += found[0]
    return out
