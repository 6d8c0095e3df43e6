"""Scenario cache: `ensure_scenario(slug, seed)` (contracts §10).

A scenario is the generator's output at a seed (contracts §7) plus `reference/`: the oracle's
final-state projections as CSV, built once by running the oracle through the *local* backend and
checked against truth.json (`expect` rows present, `absent` rows absent), and `oracle-run/`: that
run's requests, workspace files and canonical hash (orchestrator/scenarios/oracle_run.py, what the
harness oracle replays). A scenario cached before `oracle-run/` existed gets it on first use (the
oracle is run once more). It is cached under

    <cache_root>/<slug>/<tree hash[:16]>-seed-<n>/

where the tree hash covers the task pack (and its parents), the shared task code (tasks/*.py and
every folder of tasks/ that is not a pack), `erp_service`, `agent_sandbox` (the policies'
client) and the projection formatter: change any of them and a
new scenario is built. Creation is atomic (build in a temp dir, then rename) and serialised by a
lock file, so concurrent campaigns never see half a scenario nor build the same one twice.

The folder itself (`Scenario`, `ScenarioError`, the cache's default root) is
`orchestrator/scenarios/folder.py`, which the attempt runtime reads; this module builds on the
runtime (`orchestrator/scenarios/reference.py` runs the oracle), never the other way round.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.hashing import update_with_tree
from orchestrator.leftovers import remove_stale_builds
from orchestrator.scenarios.folder import Scenario, ScenarioError, cache_root_default
from orchestrator.scenarios.oracle_run import ORACLE_RUN_DIR, OracleRunError, record_oracle_run, record_unavailable
from orchestrator.scenarios.reference import oracle_final_db_local
from tasks.packs import REPO_ROOT, TaskPack
from tasks.registry import load_task

# Code outside the pack that shapes a scenario or its reference (besides every shared folder of
# tasks/, i.e. every folder that is not a pack, such as the company generator).
_SHARED_TREES = ["erp_service", "agent_sandbox"]
_SHARED_FILES = ["orchestrator/grading/projections.py"]


# ------------------------------------------------------------------------------------- hashing


def task_tree_hash(slug: str, *, repo: Path = REPO_ROOT) -> str:
    """SHA-256 over the pack, its parent packs, shared task code and the ERP/agent sources."""
    h = hashlib.sha256(b"scenario-v1\n")
    seen: list[str] = []
    cur: str | None = slug
    while cur is not None and cur not in seen:
        seen.append(cur)
        pack = load_task(cur)
        update_with_tree(h, pack.dir.parent, pack.dir.name)
        cur = pack.variant_of
    _update_with_shared(h, repo)
    return h.hexdigest()


def shared_sources_hash(repo: Path = REPO_ROOT) -> str:
    """SHA-256 over what every pack's scenario depends on but no pack holds: the task framework,
    the company generator and the ERP/agent sources (the history cache's key)."""
    h = hashlib.sha256(b"shared-v1\n")
    _update_with_shared(h, repo)
    return h.hexdigest()


def _update_with_shared(h: Any, repo: Path) -> None:
    code = repo / "tasks"
    for p in sorted(code.iterdir()):
        if p.name.startswith((".", "__pycache__")):
            continue
        # A pack's folder (task.yaml, or task.draft.yaml while it is written) is not shared code.
        is_pack = p.is_dir() and any((p / name).exists() for name in ("task.yaml", "task.draft.yaml"))
        if p.is_file() and p.suffix == ".py" or p.is_dir() and not is_pack:
            update_with_tree(h, repo, f"tasks/{p.name}")
    for rel in _SHARED_TREES + _SHARED_FILES:
        update_with_tree(h, repo, rel)


# ------------------------------------------------------------------------------------- reference

# (task, scenario without reference, scratch dir) -> path of the oracle's final database.
ReferenceRun = Callable[[TaskPack, Scenario, Path], Path]


def _cell_matches(got: str, want: Any) -> bool:
    from orchestrator.grading.checks import norm_text, parse_number

    w = "" if want is None else (format(want, "g") if isinstance(want, float) else str(want))
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        x = parse_number(got)
        return x is not None and abs(x - float(want)) <= 0.005
    return norm_text(got, True) == norm_text(w, True)


def check_truth(reference: dict[str, Any], truth: dict[str, Any]) -> list[str]:
    """Problems where the reference contradicts truth.json's `expect` / `absent` rows."""
    from orchestrator.grading.projections import Table

    problems = []
    for section, want_present in (("expect", True), ("absent", False)):
        for proj, rows in (truth.get(section) or {}).items():
            table = reference.get(proj)
            if not isinstance(table, Table):
                problems.append(f"truth.json {section}.{proj}: no such reference projection ({table})")
                continue
            for row in rows:
                unknown = [c for c in row if c not in table.columns]
                if unknown:
                    problems.append(f"truth.json {section}.{proj}: columns {unknown} not in {table.columns}")
                    continue
                hit = any(all(_cell_matches(r[c], v) for c, v in row.items()) for r in table.rows)
                if hit != want_present:
                    problems.append(
                        f"reference {proj}: row {json.dumps(row, sort_keys=True)} "
                        + ("missing" if want_present else "present but truth.json says absent")
                    )
    return problems


def build_reference(task: TaskPack, scenario: Scenario, scratch: Path,
                    reference_run: ReferenceRun | None = None, out_dir: Path | None = None,
                    oracle_dest: Path | None = None) -> Path:
    """Write `reference/*.csv` (or into `out_dir`) from the oracle's final state; check truth.json.
    With `oracle_dest`, also record the oracle's run there when the reference run left its attempt
    folder (audit.jsonl beside the final database; the default one does)."""
    from orchestrator.grading.grader import projection_params
    from orchestrator.grading.projections import run_all, write_csvs

    final_db = (reference_run or oracle_final_db_local)(task, scenario, scratch)
    meta = scenario.meta
    tables = run_all(final_db, task.projections, projection_params(
        meta, str(meta.get("grading_date") or task.spec.grading_date)))
    failed = {n: t for n, t in tables.items() if isinstance(t, Exception)}
    if failed:
        raise ScenarioError(f"{task.slug}: projection(s) failed on the oracle's final state: "
                            + "; ".join(f"{n}: {e}" for n, e in failed.items()))
    problems = check_truth(tables, scenario.truth)
    if problems:
        raise ScenarioError(f"{task.slug} seed {scenario.seed}: task bug, the oracle's reference "
                            f"contradicts truth.json: " + "; ".join(problems[:10]))
    dest = out_dir or scenario.reference_dir
    write_csvs(tables, dest)
    if oracle_dest is not None and (final_db.parent / "audit.jsonl").is_file():
        _record_oracle_run(final_db.parent, scenario, oracle_dest)
    return dest


def _record_oracle_run(attempt_dir: Path, scenario: Scenario, dest: Path) -> None:
    turns = [(t.n, t.date) for t in scenario.turns]
    try:
        record_oracle_run(attempt_dir, turns, scenario.meta.get("agent_token_id"), dest)
    except OracleRunError as exc:  # the scenario stays usable; its harness oracle says why not
        shutil.rmtree(dest, ignore_errors=True)
        record_unavailable(dest, str(exc))


# ------------------------------------------------------------------------------------ the cache


def ensure_scenario(slug: str, seed: int, *, cache_root: Path | None = None,
                    reference: bool = True, reference_run: ReferenceRun | None = None) -> Scenario:
    """The cached scenario of (task tree, seed), generated (and its reference built) if missing."""
    task = load_task(slug)
    key = task_tree_hash(slug)[:16]
    base = Path(cache_root) if cache_root is not None else cache_root_default()
    final = base / slug / f"{key}-seed-{int(seed)}"
    final.parent.mkdir(parents=True, exist_ok=True)
    done_marker = final / ".complete"

    def ready() -> bool:
        # The oracle's recorded run comes with the default reference run's reference (a custom one
        # may leave no attempt folder to record it from).
        return done_marker.exists() and (not reference or (final / "reference").is_dir()
                                         and (reference_run is not None or (final / ORACLE_RUN_DIR).is_dir()))

    if ready():
        return Scenario(slug, int(seed), final, key)
    lock_path = final.parent / f".{final.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building this very scenario
        if ready():
            return Scenario(slug, int(seed), final, key)
        remove_stale_builds(final.parent, final.name)  # we hold the lock: those builders are dead
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
        try:
            if done_marker.exists():
                # Generated earlier without a reference or without the oracle's recorded run: add
                # what is missing, atomically (the reference is built again and checked either way).
                scen = Scenario(slug, int(seed), final, key)
                build_reference(task, scen, tmp / "reference-run", reference_run, out_dir=tmp / "reference",
                                oracle_dest=tmp / ORACLE_RUN_DIR)
                if (tmp / ORACLE_RUN_DIR).is_dir() and not (final / ORACLE_RUN_DIR).exists():
                    os.rename(tmp / ORACLE_RUN_DIR, final / ORACLE_RUN_DIR)
                if not (final / "reference").is_dir():
                    os.rename(tmp / "reference", final / "reference")
                return scen
            task.generate(int(seed), tmp / "scenario", history_cache=(base / "_history", shared_sources_hash()[:16]))
            built = Scenario(slug, int(seed), tmp / "scenario", key)
            meta = built.meta
            if meta.get("seed") not in (None, int(seed)) or meta.get("task") not in (None, slug):
                raise ScenarioError(f"{slug}: scenario.json says task {meta.get('task')!r} seed "
                                    f"{meta.get('seed')!r}, expected {slug!r} seed {seed}")
            if reference:
                build_reference(task, built, tmp / "reference-run", reference_run, oracle_dest=built.dir / ORACLE_RUN_DIR)
            (built.dir / ".complete").write_text(json.dumps({"key": key}) + "\n")
            if final.exists():
                shutil.rmtree(final)  # a crashed build's leftovers (never a complete scenario)
            os.rename(built.dir, final)
        except ScenarioError as exc:
            kept = _keep_failed_build(tmp, final)
            if kept is None:
                raise
            raise ScenarioError(f"{exc} (the failed build is kept in {kept})") from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return Scenario(slug, int(seed), final, key)


def _keep_failed_build(tmp: Path, final: Path) -> Path | None:
    """Move a failed build (scenario and the oracle's attempt record) aside for inspection.

    Only the latest failure per scenario is kept, under `.failed-<name>` beside the cache
    entry, so it is never mistaken for a scenario and never accumulates.
    """
    if not any(tmp.iterdir()):
        return None
    dest = final.parent / f".failed-{final.name}"
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    return dest
