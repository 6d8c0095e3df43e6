"""Find and load task packs: `load_task(slug)`, `list_tasks()`, `lineage(pack)`, `load_clauses(slug)`.

Packs are discovered: a task pack is any folder of the tasks root holding a `task.yaml`; the
folder is the pack id with `-` written `_` (`tasks/payment_run/` holds `payment-run`). Loading
validates everything that can be checked without running anything: the YAML models, the
check → projection references, the parent of a variant, and (for `load_clauses`) the merged
clause registry.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from tasks.packs import (
    Clause,
    ClauseRegistry,
    HandbookFile,
    PackError,
    TaskPack,
    TaskSpec,
    _rel,
    folder_name,
    load_yaml,
    parse_model,
    parse_projections,
    slug_of,
    validation_error,
)

TASKS_ROOT = Path(__file__).resolve().parent


def _root(root: Path | None) -> Path:
    if root is not None:
        return Path(root)
    env = os.environ.get("PB_TASKS_ROOT")
    return Path(env) if env else TASKS_ROOT


def tasks_root() -> Path:
    """Where packs are looked up: `PB_TASKS_ROOT` (tests) or the `tasks/` folder."""
    return _root(None)


def list_tasks(root: Path | None = None) -> list[str]:
    """Ids of every pack under the tasks root (each folder holding a task.yaml), sorted."""
    base = _root(root)
    return sorted(slug_of(p.parent.name) for p in base.glob("*/task.yaml"))


def pack_dir(slug: str, root: Path | None = None) -> Path:
    """The folder of pack `slug` (whether or not it exists)."""
    return _root(root) / folder_name(slug)


def _parse_spec(base: Path, task_file: Path) -> TaskSpec:
    """Parse task.yaml; a variant with `inherit_checks: true` gets its parent's checks, negative
    controls and fault profiles merged in first (its own add to them, never replace them)."""
    data = load_yaml(task_file)
    if isinstance(data, dict) and data.get("inherit_checks") and data.get("variant_of"):
        parent_file = base / folder_name(str(data["variant_of"])) / "task.yaml"
        if not parent_file.exists():
            raise PackError(f"{_rel(task_file)}: variant_of: no task {data['variant_of']!r}")
        parent = load_yaml(parent_file)
        data = dict(data)
        data["checks"] = list(parent.get("checks") or []) + list(data.get("checks") or [])
        for key in ("negative_controls", "fault_profiles"):
            merged = dict(parent.get(key) or {})
            merged.update(data.get(key) or {})
            data[key] = merged
    if not isinstance(data, dict):
        raise PackError(f"{_rel(task_file)}: top level must be a mapping")
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise validation_error(task_file, exc, data) from None


def load_task(slug: str, root: Path | None = None) -> TaskPack:
    """Parse and validate `tasks/<slug>/task.yaml` (+ projections.sql); PackError if bad."""
    base = _root(root)
    directory = base / folder_name(slug)
    task_file = directory / "task.yaml"
    if not task_file.exists():
        known = ", ".join(list_tasks(base)) or "none"
        hint = f"; the folder of {slug!r} is {folder_name(slug)!r}" if (base / slug).is_dir() and "-" in slug else ""
        raise PackError(f"{_rel(task_file)}: no such task {slug!r} (known: {known}){hint}")
    spec = _parse_spec(base, task_file)
    if spec.id != slug:
        raise PackError(f"{_rel(task_file)}: id: {spec.id!r} differs from the folder name {folder_name(slug)!r} "
                        f"(the folder is the id with '-' written '_')")
    if spec.variant_of is not None and (
            spec.variant_of == slug or not (base / folder_name(spec.variant_of) / "task.yaml").exists()):
        raise PackError(f"{_rel(task_file)}: variant_of: no task {spec.variant_of!r}")

    proj_file = directory / "projections.sql"
    if not proj_file.exists() and spec.variant_of:
        # A variant without its own projections grades with its parent's.
        proj_file = base / folder_name(spec.variant_of) / "projections.sql"
    projections = parse_projections(proj_file)
    for i, check in enumerate(spec.checks):
        for proj in check.projections:
            if proj not in projections:
                have = ", ".join(sorted(projections)) or "none"
                raise PackError(
                    f"{_rel(task_file)}: checks[{i}:{check.name}].projection: unknown projection "
                    f"{proj!r} ({_rel(proj_file)} has: {have})"
                )
    return TaskPack(slug, directory, spec, projections)


def lineage(pack: TaskPack) -> list[TaskPack]:
    """The pack's ancestors and itself, root ancestor first (PackError on a cycle)."""
    chain = [pack]
    while chain[-1].variant_of is not None:
        parent = chain[-1].variant_of
        if parent in [p.slug for p in chain]:
            raise PackError(f"{_rel(pack.dir / 'task.yaml')}: variant_of: cycle through {parent!r}")
        chain.append(load_task(parent, pack.root))
    return list(reversed(chain))


@dataclass
class ResolvedClauses:
    """A pack's clause registry with its parents' merged in (parents first).

    `own_files` are the handbook files this pack's own clauses.yaml declares or adds clauses to;
    the others come unchanged from the parent chain.
    """

    slug: str
    chain: list[str]
    params: dict[str, object]
    files: dict[str, HandbookFile]
    clauses: list[Clause]
    own_clause_ids: set[str] = field(default_factory=set)
    own_files: set[str] = field(default_factory=set)
    # Where each clause id was defined, in definition order (duplicates kept for the lint).
    placements: dict[str, list[str]] = field(default_factory=dict)

    def clause(self, cid: str) -> Clause | None:
        for c in self.clauses:
            if c.id == cid:
                return c
        return None

    @property
    def clause_ids(self) -> set[str]:
        return {c.id for c in self.clauses}


def clauses_file(slug: str, root: Path | None = None) -> Path:
    """The clauses.yaml of pack `slug`."""
    return pack_dir(slug, root) / "clauses.yaml"


def load_clauses(slug: str, root: Path | None = None) -> ResolvedClauses:
    """Load `clauses.yaml`, following `extends:`; children add, never redefine, clauses."""
    base = _root(root)
    chain: list[tuple[str, ClauseRegistry, Path]] = []
    cur: str | None = slug
    while cur is not None:
        if cur in [c[0] for c in chain]:
            raise PackError(f"{_rel(clauses_file(chain[-1][0], base))}: extends: cycle through {cur!r}")
        path = clauses_file(cur, base)
        if not path.exists() and cur != slug:
            raise PackError(f"{_rel(clauses_file(chain[-1][0], base))}: extends: no clauses.yaml for {cur!r}")
        reg: ClauseRegistry = parse_model(ClauseRegistry, path)
        chain.append((cur, reg, path))
        cur = reg.extends

    params: dict[str, object] = {}
    files: dict[str, HandbookFile] = {}
    clauses: list[Clause] = []
    placements: dict[str, list[str]] = {}
    own_ids: set[str] = set()
    own_files: set[str] = set()
    for depth, (name, reg, path) in enumerate(reversed(chain)):
        is_own = depth == len(chain) - 1
        for key, val in reg.params.items():
            if key in params and params[key] != val:
                raise PackError(f"{_rel(path)}: params.{key}: redefines a parameter of a parent pack")
            params[key] = val
        for fname, hf in reg.files.items():
            if fname in files:
                raise PackError(f"{_rel(path)}: files.{fname}: redefines a parent's handbook file")
            files[fname] = hf
            if is_own:
                own_files.add(fname)
        parent_ids = {c.id for c in clauses}
        for i, clause in enumerate(reg.clauses):
            if clause.id in parent_ids:
                raise PackError(
                    f"{_rel(path)}: clauses[{i}:{clause.id}]: redefines a clause of a parent pack"
                )
            if clause.file not in files:
                raise PackError(
                    f"{_rel(path)}: clauses[{i}:{clause.id}].file: {clause.file!r} is not declared under files"
                )
            placements.setdefault(clause.id, []).append(f"{name}:{clause.file}")
            clauses.append(clause)
            if is_own:
                own_ids.add(clause.id)
                own_files.add(clause.file)
    return ResolvedClauses(
        slug=slug,
        chain=[c[0] for c in chain],
        params=params,
        files=files,
        clauses=clauses,
        own_clause_ids=own_ids,
        own_files=own_files,
        placements=placements,
    )
