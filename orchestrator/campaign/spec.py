"""The declared campaign: which cells, seeds, repetitions and budgets.

A campaign comes from command-line flags or from a YAML file (`--cells campaign.yaml`). Both are
turned into one `CampaignSpec`, a pydantic model that refuses unknown fields and names the field
of any error. Seeds and repetitions are always explicit in the result, even when defaulted.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from orchestrator.attempt.inputs import MAX_TURN_BUDGET_S, check_label, check_turn_budget
from orchestrator.cells import Cell, CellError, parse_cell
from orchestrator.errors import ConfigError

# The README's main job (`orchestrate campaign --label demo`) runs this when no --cells is given.
DEFAULT_CELLS = ("oracle:payment-run", "null:payment-run")
DEFAULT_SEEDS = (0,)
DEFAULT_REPS = 1
DEFAULT_INFRA_RETRIES = 2
MAX_INFRA_RETRIES = 10

class CampaignSpecError(ConfigError):
    """A campaign declaration that cannot be run; the message names the field (bad input, as
    every `ConfigError`: the input checks of `orchestrator.attempt.inputs` raise that)."""


def parse_cell_text(text: str) -> Cell:
    """Parse `SYSTEM:TASK[+CONDITION]` (`orchestrator.cells`); a `CampaignSpecError` naming `cells`."""
    try:
        return parse_cell(text)
    except CellError as exc:
        raise CampaignSpecError(f"cells: {exc}") from None


class Budgets(BaseModel):
    """Limits declared for the whole campaign (all optional; `None` keeps the task's own)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn_s: float | None = Field(default=None, gt=0, le=MAX_TURN_BUDGET_S, allow_inf_nan=False,
                                 description="override of every turn budget")
    infra_retries: int = Field(default=DEFAULT_INFRA_RETRIES, ge=0, le=MAX_INFRA_RETRIES)


class CampaignSpec(BaseModel):
    """A campaign declaration, as read from a YAML file or assembled from flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cells: list[str] = Field(min_length=1)
    seeds: list[int] = Field(default_factory=lambda: list(DEFAULT_SEEDS), min_length=1)
    reps: int = Field(default=DEFAULT_REPS, ge=1, le=1000)
    timeout: float | None = Field(default=None, gt=0, le=MAX_TURN_BUDGET_S, allow_inf_nan=False,
                                  description="per-turn budget override, seconds")
    budgets: Budgets = Field(default_factory=Budgets)
    systems: str | None = Field(default=None, description="systems file for command systems")
    model_access: str | None = Field(default=None, description="model access file for systems that call a model")
    label: str | None = None
    concurrency: int | None = Field(default=None, ge=1, le=64)
    backend: str | None = None

    @field_validator("cells")
    @classmethod
    def _cells_parse(cls, cells: list[str]) -> list[str]:
        out = []
        for text in cells:
            try:
                out.append(parse_cell_text(text).text)
            except CampaignSpecError as exc:
                raise ValueError(str(exc).removeprefix("cells: ")) from None
        if len(set(out)) != len(out):
            dupes = sorted({c for c in out if out.count(c) > 1})
            raise ValueError(f"duplicate cells: {', '.join(dupes)}")
        return out

    @field_validator("seeds")
    @classmethod
    def _seeds_ok(cls, seeds: list[int]) -> list[int]:
        if any(s < 0 for s in seeds):
            raise ValueError("seeds must be >= 0")
        if len(set(seeds)) != len(seeds):
            raise ValueError("duplicate seeds")
        return sorted(seeds)

    @field_validator("label")
    @classmethod
    def _label_ok(cls, label: str | None) -> str | None:
        if label is not None:
            try:
                check_label(label)
            except ConfigError as exc:
                raise ValueError(str(exc).removeprefix("--label: ")) from None
        return label

    @field_validator("backend")
    @classmethod
    def _backend_ok(cls, backend: str | None) -> str | None:
        if backend is not None and backend not in ("docker", "local"):
            raise ValueError(f"{backend!r}: must be docker or local")
        return backend

    @model_validator(mode="after")
    def _timeout_consistent(self) -> CampaignSpec:
        if self.timeout is not None and self.budgets.turn_s is not None and self.timeout != self.budgets.turn_s:
            raise ValueError("timeout and budgets.turn_s disagree; declare one")
        return self

    @property
    def cell_refs(self) -> list[Cell]:
        """The cells, parsed, in declaration order."""
        return [parse_cell_text(c) for c in self.cells]

    @property
    def turn_timeout_s(self) -> float | None:
        """The declared per-turn budget override, if any."""
        return self.timeout if self.timeout is not None else self.budgets.turn_s


def _format_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"invalid campaign ({source}):"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def build_spec(data: dict[str, Any], source: str) -> CampaignSpec:
    """Validate a campaign mapping; raise `CampaignSpecError` naming each bad field."""
    try:
        return CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise CampaignSpecError(_format_validation_error(exc, source)) from None


def load_spec_file(path: Path) -> CampaignSpec:
    """Read a campaign YAML file; a relative `systems` path is taken relative to the file."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise CampaignSpecError(f"cannot read campaign file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise CampaignSpecError(f"campaign file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise CampaignSpecError(f"campaign file {path}: expected a mapping at the top level")
    for key in ("systems", "model_access"):
        if isinstance(data.get(key), str) and not Path(data[key]).is_absolute():
            data[key] = str((path.parent / data[key]).resolve())
    return build_spec(data, str(path))


def parse_int_list(text: str, what: str) -> list[int]:
    """Parse `0,1,2` (or a range `0-4`) into integers; errors name the flag."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if re.match(r"^\d+-\d+$", part):
                lo, hi = (int(x) for x in part.split("-"))
                if hi < lo:
                    raise ValueError
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise CampaignSpecError(f"{what}: {part!r} is not an integer or a range a-b") from None
    if not out:
        raise CampaignSpecError(f"{what}: empty list")
    return out


def split_cells(text: str) -> list[str]:
    """Split a comma list of cells, keeping commas inside a condition.

    A fault spec combines items with commas (`+flaky-writes:seed=3,rate=0.1`,
    `+lost_response:POST /payment-runs@1,fail_before:POST /payment-runs/*/submit@1`), so a piece
    starts the next cell only when it begins as a cell does, `SYSTEM:TASK` before any `+` or `#`
    (a fault item never does: a rule holds a space and a path, a parameter no ':'); any other
    piece continues the condition of the cell before it.
    """
    out: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if not _starts_a_cell(piece) and out and "+" in out[-1]:
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


_CELL_HEAD = re.compile(r"^(?:neg:)?[a-z0-9][a-z0-9._-]*:[a-z0-9][a-z0-9._-]*$")


def _starts_a_cell(piece: str) -> bool:
    """Whether a comma piece of `--cells` begins a new cell (`SYSTEM:TASK[+...][#...]`)."""
    head = re.split(r"[+#]", piece, maxsplit=1)[0]
    return bool(_CELL_HEAD.match(head))


def _names_a_file(text: str) -> bool:
    """True when `text` is the path of an existing file. A long cell list is no path at all
    (the OS refuses a name over 255 bytes with ENAMETOOLONG, which `is_file` does not absorb)."""
    try:
        return Path(text).is_file()
    except OSError:
        return False


def spec_from_args(
    cells: str | None,
    *,
    seeds: str | None = None,
    reps: int | None = None,
    timeout: float | None = None,
    systems: str | None = None,
    model_access: str | None = None,
    label: str | None = None,
    concurrency: int | None = None,
    backend: str | None = None,
    retries: int | None = None,
) -> CampaignSpec:
    """Assemble the campaign from command-line flags.

    `cells` is a comma list of cells, a path to a YAML file, or None for the built-in default.
    Flags given beside a file override the file's values (the file stays the base). Every
    value, flags included, goes through the model's validation (`--retries` too).
    """
    overrides: dict[str, Any] = {}
    if seeds is not None:
        overrides["seeds"] = parse_int_list(seeds, "--seeds")
    if reps is not None:
        overrides["reps"] = reps
    if timeout is not None:
        overrides["timeout"] = _spec_checked(check_turn_budget, timeout)
    if systems is not None:
        overrides["systems"] = str(Path(systems).resolve())
    if model_access is not None:
        overrides["model_access"] = str(Path(model_access).resolve())
    if label is not None:
        overrides["label"] = label
    if concurrency is not None:
        overrides["concurrency"] = concurrency
    if backend is not None:
        overrides["backend"] = backend
    if cells is not None and (cells.endswith((".yaml", ".yml")) or _names_a_file(cells)):
        base = load_spec_file(Path(cells)).model_dump(exclude_none=True)
        source = cells
    else:
        cell_list = list(DEFAULT_CELLS) if cells is None else split_cells(cells)
        base = {"cells": cell_list}
        source = "--cells" if cells is not None else "built-in default campaign"
    base.update(overrides)
    if retries is not None:
        if not 0 <= retries <= MAX_INFRA_RETRIES:
            raise CampaignSpecError(f"--retries: {retries}: must be between 0 and {MAX_INFRA_RETRIES}")
        base["budgets"] = {**(base.get("budgets") or {}), "infra_retries": retries}
    spec = build_spec(base, source)
    _spec_checked(check_turn_budget, spec.turn_timeout_s)
    return spec


def _spec_checked(check: Any, value: Any) -> Any:
    """`check(value)`, its refusal a `CampaignSpecError` (the flag's name is in the message)."""
    try:
        return check(value)
    except CampaignSpecError:
        raise
    except ConfigError as exc:
        raise CampaignSpecError(str(exc)) from None
