"""Models of a task pack: `task.yaml` (identity, dates, turns, checks, controls) and
`clauses.yaml` (clauses); YAML loading with errors that name the file and the field.

A pack lives in `tasks/<folder>/`, the folder being the pack's id with `-` written `_`
(`payment-run` -> `tasks/payment_run/`), so that its Python modules form a package
(`tasks.payment_run.generator`) that mypy checks and the loader imports by name:

    task.yaml        identity, dates, agent user, turns and their budgets, checks (each citing
                     handbook clauses), negative controls, fault profiles, variant_of
    generator.py     `generate(ctx: GeneratorContext) -> None` (tasks/context.py); the framework
                     runs it in a subprocess and writes the scenario directory (contracts §7)
    clauses.yaml     the clause registry the handbook is rendered from (`extends:` for variants)
    handbook/        rendered from clauses.yaml and committed (`orchestrate handbook render`)
    projections.sql  named SQL blocks (`-- name: X`) over the final database
    policies.py      POLICIES: the oracle and the negative controls (contracts §8)
    __init__.py      empty: makes the folder a package

The full guide, with the task.yaml reference, is docs/pack-authoring.md. Check types are the
models in `tasks/checks/` (discovered). Any check value may be a `'{truth:key}'` placeholder,
filled from truth.json `values` when grading. Every model forbids unknown keys, so a typo in a
pack is an error, not a silently ignored field. Errors name the file and the field at fault in
one line (`PackError`).
"""
from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# Re-exported: the check models moved to tasks/checks/ (discovered there).
from tasks.checks import CHECK_TYPES, Check  # noqa: F401
from tasks.checks.base import CHECK_NAME_RE, CLAUSE_ID_RE, TRUTH_PLACEHOLDER_RE  # noqa: F401
from tasks.errors import GenerationError  # generators import it from here

# A clause id inside running text (cross-references between clauses).
CLAUSE_REF_RE = re.compile(r"\b[A-Z]{2,5}-\d+(?:\.\d+)*\b")
POLICY_NAME_RE = re.compile(r"^(oracle|alt|null|neg:[a-z0-9][a-z0-9_-]*)$")
PROJECTION_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
# A pack id: lower-case words joined by single hyphens (the folder writes them with `_`).
TASK_ID_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

REPO_ROOT = Path(__file__).resolve().parent.parent


class PackError(ValueError):
    exit_class = "bad_input"  # the orchestrator's exit class (orchestrator.exit_codes.Failure)
    """A task pack is malformed; the message names the file and the field at fault."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ------------------------------------------------------------------------------- task.yaml


class FaultProfile(_Strict):
    """A named fault condition: the fault spec and the controls that must fail under it."""

    faults: str = Field(min_length=1)
    negative_controls: dict[str, list[str]] = Field(default_factory=dict)
    description: str | None = None


class TurnSpec(_Strict):
    """One turn of task.yaml: its business date, who asks, the request and the time budget."""

    date: dt.date
    from_user: str
    request: str = Field(min_length=1)
    budget_s: int = Field(default=1200, ge=1)


class TaskSpec(_Strict):
    """The contents of `task.yaml`: the one definition of the pack's identity, dates and turns."""

    id: str
    version: int = Field(ge=1)
    band: Literal["clerical", "analyst", "controller"]
    title: str
    summary: str | None = None
    family: str | None = None
    agent_user: str
    start_date: dt.date
    grading_date: dt.date
    turns: list[TurnSpec] = Field(min_length=1)
    variant_of: str | None = None
    # A variant with inherit_checks runs its parent's checks, controls and fault profiles
    # first, then its own (merged before validation by the registry).
    inherit_checks: bool = False
    checks: list[Check] = Field(min_length=1)
    negative_controls: dict[str, list[str]] = Field(default_factory=dict)
    fault_profiles: dict[str, FaultProfile] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        if not TASK_ID_RE.match(v):
            raise ValueError(f"{v!r} is not a pack id (lower-case words joined by '-', like payment-run)")
        return v

    @model_validator(mode="after")
    def _dates(self) -> TaskSpec:
        if self.grading_date < self.start_date:
            raise ValueError(f"grading_date {self.grading_date} is before start_date {self.start_date}")
        prev = self.start_date
        for i, turn in enumerate(self.turns):
            if turn.date < prev:
                raise ValueError(f"turns[{i}].date {turn.date} is before {prev} (turns run in date order, "
                                 f"from start_date)")
            if turn.date > self.grading_date:
                raise ValueError(f"turns[{i}].date {turn.date} is after grading_date {self.grading_date}")
            prev = turn.date
        return self

    @model_validator(mode="after")
    def _cross_refs(self) -> TaskSpec:
        names = [c.name for c in self.checks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate check names: {dup}")
        known = set(names)

        def _controls(where: str, controls: dict[str, list[str]]) -> None:
            for policy, targets in controls.items():
                if not POLICY_NAME_RE.match(policy) or policy in ("oracle", "alt", "null"):
                    raise ValueError(f"{where}: {policy!r} is not a negative control name (neg:<name>)")
                if not targets:
                    raise ValueError(f"{where}.{policy}: names no check it must fail")
                unknown = [t for t in targets if t not in known]
                if unknown:
                    raise ValueError(f"{where}.{policy}: unknown check(s) {unknown}")

        _controls("negative_controls", self.negative_controls)
        for pname, prof in self.fault_profiles.items():
            _controls(f"fault_profiles.{pname}.negative_controls", prof.negative_controls)
        return self


# --------------------------------------------------------------------------- clauses.yaml


class HandbookFile(_Strict):
    """One rendered handbook file: its title and optional introduction."""

    title: str
    intro: str | None = None


class Clause(_Strict):
    """One handbook clause: rendered as `**ID** text` in its file."""

    id: str
    file: str
    section: str | None = None
    text: str
    binds: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        if not CLAUSE_ID_RE.match(v):
            raise ValueError(f"{v!r} does not match [A-Z]{{2,5}}-N(.N)*")
        return v

    @field_validator("file")
    @classmethod
    def _file_ok(cls, v: str) -> str:
        if "/" in v or not v.endswith(".md"):
            raise ValueError(f"{v!r} must be a bare file name ending in .md")
        return v


class ClauseRegistry(_Strict):
    """The contents of one `clauses.yaml` (before merging a parent's)."""

    extends: str | None = None
    params: dict[str, str | int | float] = Field(default_factory=dict)
    files: dict[str, HandbookFile] = Field(default_factory=dict)
    clauses: list[Clause] = Field(default_factory=list)

    @field_validator("files")
    @classmethod
    def _file_names(cls, v: dict[str, HandbookFile]) -> dict[str, HandbookFile]:
        for name in v:
            if "/" in name or not name.endswith(".md"):
                raise ValueError(f"{name!r} must be a bare file name ending in .md")
        return v


# ------------------------------------------------------------------------------ YAML loading


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate mapping keys (YAML silently keeps the last one)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: Path) -> Any:
    """Parse a YAML file strictly (no duplicate keys); errors name the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PackError(f"{_rel(path)}: file missing") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise PackError(f"{_rel(path)}:{where}: {problem}") from None


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _loc(loc: tuple, data: Any) -> str:
    """Render a pydantic error location like `checks[3].tolerance`, naming checks by name."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            label = f"[{part}]"
            if isinstance(node, list) and part < len(node):
                item = node[part]
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    label = f"[{part}:{item['name']}]"
                node = item
            else:
                node = None
            out += label
        else:
            # Discriminated unions add the tag as a location part; it says nothing new.
            if isinstance(node, dict) and part not in node and part in CHECK_TYPES:
                continue
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out or "(top level)"


def validation_error(path: Path, exc: ValidationError, data: Any) -> PackError:
    """Turn a pydantic error into one line: `file: field: message (+N more)`."""
    errors = exc.errors(include_url=False)
    # A misspelt field shows as "unknown field" plus "field required" for the real one: the
    # unknown field is the cause, so it is named first.
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    elif first["type"] == "union_tag_invalid":
        msg = f"unknown check type {first.get('input', {}).get('type')!r}; one of {', '.join(CHECK_TYPES)}"
    elif first["type"] == "union_tag_not_found":
        msg = "check has no type"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return PackError(f"{_rel(path)}: {_loc(tuple(first['loc']), data)}: {msg}{more}")


def parse_model(model: type[BaseModel], path: Path) -> Any:
    """Load YAML `path` into `model`, raising PackError naming the file and field at fault."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise PackError(f"{_rel(path)}: top level must be a mapping")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(path, exc, data) from None


# ------------------------------------------------------------------------------- projections

_BLOCK_RE = re.compile(r"^--\s*name:\s*(\S+)\s*$", re.MULTILINE)


def parse_projections(path: Path) -> dict[str, str]:
    """Split `projections.sql` into {name: sql} by `-- name: X` header lines."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    heads = list(_BLOCK_RE.finditer(text))
    if not heads and text.strip():
        raise PackError(f"{_rel(path)}: no '-- name: X' block headers")
    if heads and text[: heads[0].start()].strip() and not all(
        line.strip().startswith("--") or not line.strip()
        for line in text[: heads[0].start()].splitlines()
    ):
        raise PackError(f"{_rel(path)}: SQL before the first '-- name:' header")
    out: dict[str, str] = {}
    for i, head in enumerate(heads):
        name = head.group(1)
        if not PROJECTION_NAME_RE.match(name):
            raise PackError(f"{_rel(path)}: projection name {name!r} must match [a-z][a-z0-9_]*")
        if name in out:
            raise PackError(f"{_rel(path)}: projection {name!r} defined twice")
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        sql = text[head.end() : end].strip().rstrip(";").strip()
        if not sql:
            raise PackError(f"{_rel(path)}: projection {name!r} is empty")
        out[name] = sql
    return out


# ----------------------------------------------------------------------------------- the pack


def folder_name(slug: str) -> str:
    """The folder (and Python package) of pack `slug`: its id with `-` written `_`."""
    return slug.replace("-", "_")


def slug_of(folder: str) -> str:
    """The pack id of a pack folder (`payment_run` -> `payment-run`)."""
    return folder.replace("_", "-")


SCENARIO_FILES = ("scenario.db", "scenario.json", "world.json", "turns.yaml", "truth.json", "handbook")


class TaskPack:
    """A parsed, validated task pack (contracts §10)."""

    def __init__(self, slug: str, directory: Path, spec: TaskSpec, projections: dict[str, str]):
        self.slug = slug
        self.dir = directory
        self.spec = spec
        self.projections = projections

    # Contract attributes (contracts §10).
    @property
    def version(self) -> int:
        return self.spec.version

    @property
    def checks(self) -> list[Check]:
        return list(self.spec.checks)

    @property
    def negative_controls(self) -> dict[str, list[str]]:
        return dict(self.spec.negative_controls)

    @property
    def fault_profiles(self) -> dict[str, FaultProfile]:
        return dict(self.spec.fault_profiles)

    @property
    def variant_of(self) -> str | None:
        return self.spec.variant_of

    @property
    def agent_user(self) -> str:
        return self.spec.agent_user

    @property
    def root(self) -> Path:
        """The folder of packs this pack was found in."""
        return self.dir.parent

    @property
    def policies_module(self) -> Path:
        """The pack's policies.py; a variant without its own runs its parent's policies."""
        own = self.dir / "policies.py"
        if not own.exists() and self.spec.variant_of:
            return self.root / folder_name(self.spec.variant_of) / "policies.py"
        return own

    @property
    def alt_module(self) -> Path:
        """The pack's alt.py: the second policy, written from the handbook alone (issue 41). It is
        a file of its own, mounted alone into `alt` cells, so it cannot call the oracle's code; a
        variant without one runs its parent's."""
        own = self.dir / "alt.py"
        if not own.exists() and self.spec.variant_of:
            return self.root / folder_name(self.spec.variant_of) / "alt.py"
        return own

    @property
    def generator(self) -> Path:
        """The pack's generator module (a variant may have none: its parent's then runs alone)."""
        return self.dir / "generator.py"

    @property
    def handbook_dir(self) -> Path:
        return self.dir / "handbook"

    def check(self, name: str) -> Check:
        """The check called `name` (KeyError if none)."""
        for c in self.spec.checks:
            if c.name == name:
                return c
        raise KeyError(f"{self.slug}: no check named {name!r}")

    def controls_for(self, condition: str | None = None) -> dict[str, list[str]]:
        """Negative controls that apply under `condition` (a fault profile name or clean)."""
        out = dict(self.spec.negative_controls)
        if condition and condition != "clean" and condition in self.spec.fault_profiles:
            out.update(self.spec.fault_profiles[condition].negative_controls)
        return out

    def all_controls(self) -> dict[str, list[str]]:
        """Every negative control the pack declares, clean or under any fault profile."""
        out = dict(self.spec.negative_controls)
        for prof in self.spec.fault_profiles.values():
            out.update(prof.negative_controls)
        return out

    def generate(self, seed: int, out_dir: Path, *, timeout_s: float = 600,
                 history_cache: tuple[Path, str] | None = None) -> Path:
        """Run the pack's generator chain at `seed` into `out_dir` (contracts §7), isolated in a
        subprocess of this interpreter (`python -m tasks.generate`); return the scenario dir.

        `history_cache` (folder, key of the shared sources) lets the company's history be reused
        across packs and runs (tasks/northgate/history_cache.py)."""
        import os

        from tasks.northgate.history_cache import CACHE_ENV, KEY_ENV

        out_dir = Path(out_dir)
        env = dict(os.environ)
        env.pop(CACHE_ENV, None)
        env.pop(KEY_ENV, None)
        if history_cache is not None:
            env[CACHE_ENV], env[KEY_ENV] = str(history_cache[0]), history_cache[1]
        # The subprocess imports the project from the repository (never from the pack's folder).
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        )
        env["PYTHONHASHSEED"] = "0"  # generators must not depend on hash order; make sure
        env["PB_GENERATE_PARENT"] = str(os.getpid())  # the generator dies with us (tasks.generate)
        proc = subprocess.run(
            [sys.executable, "-m", "tasks.generate", "--task", self.slug, "--root", str(self.root),
             "--seed", str(int(seed)), "--out", str(out_dir)],
            cwd=str(REPO_ROOT),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise GenerationError(f"{self.slug}: generator --seed {seed} exited {proc.returncode}:\n{tail}")
        missing = [n for n in SCENARIO_FILES if not (out_dir / n).exists()]
        if missing:
            raise GenerationError(f"{self.slug}: generator --seed {seed} did not write {missing}")
        return out_dir

    def __repr__(self) -> str:
        return f"TaskPack({self.slug!r}, version={self.version})"
