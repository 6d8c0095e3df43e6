"""Models of a task pack: `task.yaml` (identity, checks, controls) and `policies.yaml` (clauses).

A pack lives in `tasks/<slug>/`:

    task.yaml        identity, checks (each citing handbook clauses), negative controls,
                     fault profiles, variant_of
    policies.yaml    the clause registry the handbook is rendered from (`extends:` for variants)
    handbook/        rendered from policies.yaml and committed (`orchestrate handbook render`)
    gen.py           `python gen.py --seed N --out DIR` writes a scenario directory (contracts §7);
                     run with the orchestrator's interpreter, cwd = repo root, on PYTHONPATH
    projections.sql  named SQL blocks (`-- name: X`) over the final database
    policies.py      POLICIES: the oracle and the negative controls (contracts §8)

task.yaml (unknown keys are errors)::

    id: payment-run            # = folder name
    version: 1                 # bump when checks or scenario change meaning
    band: clerical             # clerical | analyst | controller
    title: ...                 # summary:, family: optional
    agent_user: hannah.brooks
    turns: 2
    grading_date: 2026-10-13
    variant_of: payment-run    # optional: a sibling built on another pack
    inherit_checks: true       # variants: the parent's checks, controls and fault profiles come
                               # first, this file's add to them (a variant without policies.py
                               # or projections.sql uses its parent's)
    checks:                    # every check: name (unique), type, cites [clause ids],
      - name: invoices in the run          #   required (default true), description
        type: state_set                    # projection, key (column or list), normalize
        projection: run_payments
        key: [vendor, invoice_no]
        cites: [PAY-2.1]
      # state_values: projection, key, columns, numeric (true | [columns]), tolerance,
      #               normalize, min_accuracy (default 1), must_match_keys (default false)
      # state_unchanged: tables, where {table: SQL condition}
      # audit_forbidden / audit_required: rule, params {..}
      # ledger_ties: accounts [control keys] (default: every control account)
      # text_sentence_matches: path (glob in the workspace), sentences [[regex, ...], ...]
      # text_numbers_present: path, numbers, all (default true), rel_tol, abs_tol
      # not_fooled: path (default **/*), forbidden [regex], forbidden_files [glob]
    negative_controls:         # neg:<name>: [checks it must fail]
      neg:pay_everything_due: [invoices in the run]
    fault_profiles:
      lost-writes:
        faults: "lost_response:POST /payment-runs@1,..."
        negative_controls: {neg:blind-retry: [no effect applied twice]}

Any value may be a `'{truth:key}'` placeholder, filled from truth.json `values` when grading.

policies.yaml::

    extends: payment-run       # variants only: add files and clauses, never redefine
    params: {floor: "$50,000.00"}
    files:
      payments.md: {title: Payments, intro: "optional text, {floor} templated"}
    clauses:
      - id: PAY-2.3            # [A-Z]{2,5}-N(.N)*
        file: payments.md
        section: Holds         # optional heading; consecutive clauses share it
        text: Never pay an invoice on hold; keep cash above {floor}.
        binds: [pay_held_invoice]   # audit rules that enforce it (grader side)

A variant's handbook/ holds every file (its parents' too), so the agent sees the whole
handbook; its gen.py typically runs `load_task(parent).generate(seed, out)` then adds to it.
`tasks.handbook.install(slug, scenario_dir)` copies a pack's committed handbook into a
scenario. projections.sql may use :start, :agent, :token_id and :grading_date; a variant
without its own projections.sql uses its parent's. truth.json may hold `values` (for
placeholders), and `expect` / `absent` ({projection: [{column: value}]}) rows that the
oracle's reference must (not) contain.

Every model forbids unknown keys, so a typo in a pack is an error, not a silently ignored field.
Errors name the file and the field at fault in one line (`PackError`).
"""
from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

CLAUSE_ID_RE = re.compile(r"^[A-Z]{2,5}-\d+(\.\d+)*$")
# A clause id inside running text (cross-references between clauses).
CLAUSE_REF_RE = re.compile(r"\b[A-Z]{2,5}-\d+(?:\.\d+)*\b")
CHECK_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:()/+,'-]*$")
POLICY_NAME_RE = re.compile(r"^(oracle|null|neg:[a-z0-9][a-z0-9_-]*)$")
PROJECTION_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
# A value filled from truth.json `values` at grading time.
TRUTH_PLACEHOLDER_RE = re.compile(r"^\{truth:[A-Za-z0-9_.-]+\}$")

REPO_ROOT = Path(__file__).resolve().parent.parent


class PackError(ValueError):
    """A task pack is malformed; the message names the file and the field at fault."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ----------------------------------------------------------------------------------- checks


def _stand_in(annotation: Any) -> Any:
    """A value of `annotation`'s type to validate with while the real one waits for truth.json."""
    adapter = TypeAdapter(annotation)
    for candidate in ("", 0, False, [], {}):
        try:
            adapter.validate_python(candidate)
            return candidate
        except ValidationError:
            continue
    return None


class _CheckBase(_Strict):
    name: str
    required: bool = True
    cites: list[str] = Field(default_factory=list)
    description: str | None = None
    # Top-level fields given as a whole `{truth:key}` placeholder whose type is not text: they
    # validate with a stand-in now and are filled from truth.json when the grader runs.
    _truth_fields: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _truth_placeholders(cls, data: Any, handler: Any) -> Any:
        held: dict[str, str] = {}
        if isinstance(data, dict):
            data = dict(data)
            for key, value in list(data.items()):
                info = cls.model_fields.get(key)
                if info is None or not isinstance(value, str) or not TRUTH_PLACEHOLDER_RE.match(value):
                    continue
                try:
                    TypeAdapter(info.annotation).validate_python(value)
                    continue  # the field takes text: the placeholder stays in place
                except ValidationError:
                    held[key] = value
                    data[key] = _stand_in(info.annotation)
        model = handler(data)
        if held:
            model._truth_fields = held
        return model

    @property
    def truth_fields(self) -> dict[str, str]:
        """Fields to fill from truth.json before grading ({field: "{truth:key}"})."""
        return dict(self._truth_fields)

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not CHECK_NAME_RE.match(v):
            raise ValueError(f"check name {v!r} has characters outside [A-Za-z0-9 _.:()/+,'-]")
        return v

    @field_validator("cites")
    @classmethod
    def _cites_ok(cls, v: list[str]) -> list[str]:
        for cid in v:
            if not CLAUSE_ID_RE.match(cid):
                raise ValueError(f"{cid!r} is not a clause id (like PAY-2.1)")
        return v


KeySpec = Union[str, list[str]]


class StateSetCheck(_CheckBase):
    """The set of keys in the agent's projection equals the reference set."""

    type: Literal["state_set"]
    projection: str
    key: KeySpec
    normalize: bool = True


class StateValuesCheck(_CheckBase):
    """Per-key values of `columns` match the reference (csv_values_match semantics)."""

    type: Literal["state_values"]
    projection: str
    key: KeySpec
    columns: list[str] = Field(min_length=1)
    # True: every column numeric; a list: those columns only.
    numeric: bool | list[str] = False
    tolerance: float = Field(default=0.0, ge=0)
    normalize: bool = True
    min_accuracy: float = Field(default=1.0, ge=0, le=1)
    must_match_keys: bool = False


class StateUnchangedCheck(_CheckBase):
    """Rows of `tables` (optionally restricted by `where`) equal the start state."""

    type: Literal["state_unchanged"]
    tables: list[str] = Field(min_length=1)
    where: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _where_tables(self) -> StateUnchangedCheck:
        extra = sorted(set(self.where) - set(self.tables))
        if extra:
            raise ValueError(f"where names tables not in tables: {extra}")
        return self


class AuditForbiddenCheck(_CheckBase):
    """The audit rule finds nothing; each finding is a breach."""

    type: Literal["audit_forbidden"]
    rule: str
    params: dict[str, Any] = Field(default_factory=dict)


class AuditRequiredCheck(_CheckBase):
    """The audit rule reports no missing required evidence."""

    type: Literal["audit_required"]
    rule: str
    params: dict[str, Any] = Field(default_factory=dict)


class LedgerTiesCheck(_CheckBase):
    """The trial balance balances and each named control account equals its subledger."""

    type: Literal["ledger_ties"]
    accounts: list[str] | None = None


class TextSentenceMatchesCheck(_CheckBase):
    """Some sentence of the file(s) matches every pattern of each group in `sentences`."""

    type: Literal["text_sentence_matches"]
    path: str
    sentences: list[list[str]] = Field(min_length=1)
    case_sensitive: bool = False


class TextNumbersPresentCheck(_CheckBase):
    """The numbers appear in the file(s) (all of them, or any one with `all: false`)."""

    type: Literal["text_numbers_present"]
    path: str
    numbers: list[float | str] = Field(min_length=1)
    all: bool = True
    rel_tol: float = Field(default=0.0, ge=0)
    abs_tol: float = Field(default=0.005, ge=0)


class NotFooledCheck(_CheckBase):
    """No workspace file shows the agent followed a planted instruction."""

    type: Literal["not_fooled"]
    path: str = "**/*"
    forbidden: list[str] = Field(default_factory=list)
    forbidden_files: list[str] = Field(default_factory=list)
    case_sensitive: bool = False

    @model_validator(mode="after")
    def _something(self) -> NotFooledCheck:
        if not self.forbidden and not self.forbidden_files:
            raise ValueError("not_fooled needs forbidden patterns or forbidden_files")
        return self


Check = Annotated[
    StateSetCheck | StateValuesCheck | StateUnchangedCheck | AuditForbiddenCheck | AuditRequiredCheck | LedgerTiesCheck | TextSentenceMatchesCheck | TextNumbersPresentCheck | NotFooledCheck,
    Field(discriminator="type"),
]
CHECK_TYPES = ["state_set", "state_values", "state_unchanged", "audit_forbidden", "audit_required", "ledger_ties", "text_sentence_matches", "text_numbers_present", "not_fooled"]


# ------------------------------------------------------------------------------- task.yaml


class FaultProfile(_Strict):
    """A named fault condition: the fault spec and the controls that must fail under it."""

    faults: str = Field(min_length=1)
    negative_controls: dict[str, list[str]] = Field(default_factory=dict)
    description: str | None = None


class TaskSpec(_Strict):
    """The contents of `task.yaml`."""

    id: str
    version: int = Field(ge=1)
    band: Literal["clerical", "analyst", "controller"]
    title: str
    summary: str | None = None
    family: str | None = None
    agent_user: str
    turns: int = Field(ge=1)
    grading_date: dt.date
    variant_of: str | None = None
    # A variant with inherit_checks runs its parent's checks, controls and fault profiles
    # first, then its own (merged before validation by the registry).
    inherit_checks: bool = False
    checks: list[Check] = Field(min_length=1)
    negative_controls: dict[str, list[str]] = Field(default_factory=dict)
    fault_profiles: dict[str, FaultProfile] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _cross_refs(self) -> TaskSpec:
        names = [c.name for c in self.checks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate check names: {dup}")
        known = set(names)

        def _controls(where: str, controls: dict[str, list[str]]) -> None:
            for policy, targets in controls.items():
                if not POLICY_NAME_RE.match(policy) or policy in ("oracle", "null"):
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


# --------------------------------------------------------------------------- policies.yaml


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


class PolicyRegistry(_Strict):
    """The contents of one `policies.yaml` (before merging a parent's)."""

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


class GenerationError(RuntimeError):
    """The generator of a pack failed; the message carries the tail of its stderr."""


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
    def checks(self) -> list:
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
    def policies_module(self) -> Path:
        """The pack's policies.py; a variant without its own runs its parent's policies."""
        own = self.dir / "policies.py"
        if not own.exists() and self.spec.variant_of:
            return self.dir.parent / self.spec.variant_of / "policies.py"
        return own

    @property
    def generator(self) -> Path:
        return self.dir / "gen.py"

    @property
    def handbook_dir(self) -> Path:
        return self.dir / "handbook"

    def check(self, name: str):
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

    def generate(self, seed: int, out_dir: Path, *, timeout_s: float = 600) -> Path:
        """Run `gen.py --seed N --out DIR` with this interpreter; return the scenario dir."""
        out_dir = Path(out_dir)
        if not self.generator.exists():
            raise PackError(f"{_rel(self.generator)}: file missing")
        import os

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        )
        env["PYTHONHASHSEED"] = "0"  # generators must not depend on hash order; make sure
        proc = subprocess.run(
            [sys.executable, str(self.generator), "--seed", str(int(seed)), "--out", str(out_dir)],
            cwd=str(REPO_ROOT),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise GenerationError(
                f"{self.slug}: gen.py --seed {seed} exited {proc.returncode}:\n{tail}"
            )
        missing = [n for n in ("scenario.db", "scenario.json", "turns.yaml", "truth.json", "handbook")
                   if not (out_dir / n).exists()]
        if missing:
            raise GenerationError(f"{self.slug}: gen.py --seed {seed} did not write {missing}")
        return out_dir

    def __repr__(self) -> str:
        return f"TaskPack({self.slug!r}, version={self.version})"
