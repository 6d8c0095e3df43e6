"""The label's declaration (`campaign.json`), its plan of attempts, and whether one is finished.

The attempt's identity, id and folder are `orchestrator.identity.AttemptIdentity`'s. The label
root holds `campaign.json`, which declares the campaign; re-running a label compares the
new declaration with the stored one and refuses when a value that matters has changed: the cells,
seeds, reps, systems, the task packs' trees, and (`sources`, orchestrator/campaign/sources.py) every
shared source tree a scenario, a verdict or a policy depends on and the images' content tags, so a
label never holds results of two versions.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.campaign.sources import describe_change
from orchestrator.cells import CLI, Cell
from orchestrator.hashing import canonical_json
from orchestrator.identity import AttemptIdentity

DECLARATION_FILE = "campaign.json"
DECLARATION_SCHEMA = 1
# Keys of campaign.json that never make a re-run a different campaign.
VOLATILE_KEYS = frozenset({"volatile", "created_utc", "updated_utc", "runs"})
# Outcomes that end an attempt for good; an `infra_error` is tried again when the label resumes.
# A `task_error` is final too: running the same broken task again gives the same error.
FINAL_OUTCOMES = frozenset({"graded", "agent_error", "task_error"})


def read_result(folder: Path, name: str = "result.json") -> dict[str, Any] | None:
    """The attempt's result.json (or another of its JSON records), or None when it is missing or
    unreadable (not final)."""
    path = folder / name
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_finished(folder: Path) -> bool:
    """True when the attempt has a final result.json (graded, agent_error or task_error)."""
    result = read_result(folder)
    return result is not None and result.get("outcome") in FINAL_OUTCOMES


def plan_attempts(cells: list[Cell], seeds: list[int], reps: int, task_versions: dict[str, str]) -> list[AttemptIdentity]:
    """Every attempt of the campaign, in ledger order."""
    out = [
        AttemptIdentity.of(c, seed, rep, task_versions[c.task])
        for c in cells
        for seed in seeds
        for rep in range(1, reps + 1)
    ]
    return sorted(out, key=AttemptIdentity.sort_key)


# --------------------------------------------------------------------------- the declaration


class DeclarationChanged(RuntimeError):
    exit_class = "bad_input"  # orchestrator.exit_codes.Failure
    """The label already holds a different campaign; the message lists what changed."""


class DeclaredCell(BaseModel):
    """One cell as `campaign.json` lists it (a cli cell's `interface` is left out)."""

    model_config = ConfigDict(extra="forbid")

    cell: str
    system: str
    task: str
    condition: str
    interface: str = CLI

    @property
    def ref(self) -> Cell:
        """The cell it declares."""
        return Cell(self.system, self.task, self.condition, self.interface)


class CampaignDeclaration(BaseModel):
    """`campaign.json`: what a label is. Everything outside `volatile` (and `runs`) matters for
    resuming: a re-run with another value is another campaign (`check_or_write_declaration`)."""

    model_config = ConfigDict(extra="forbid")

    schema_: int = Field(DECLARATION_SCHEMA, alias="schema")
    label: str
    cells: list[DeclaredCell]
    conditions: list[str]
    seeds: list[int]
    reps: int
    tasks: dict[str, dict[str, Any]]  # slug -> {"version", "tree_sha256", "variant_of"}
    systems: dict[str, Any]  # system -> {"kind": "policy"} or {"kind": "command", "sha256", ...}
    timeouts: dict[str, Any]
    backend: str
    isolation: str
    volatile: dict[str, Any] = Field(default_factory=dict)
    sources: dict[str, Any] | None = None  # orchestrator.campaign.sources.label_sources()
    runs: list[dict[str, Any]] = Field(default_factory=list)  # the volatile values of each resume
    # A rescored label's origin (orchestrator/regrade/): never resumed as a fresh campaign.
    rescoring: dict[str, Any] | None = None
    # A campaign run `--declared` (orchestrator/campaign/declared.py): the study's SHA-256 and the
    # budgets and limits it ran under.
    study: dict[str, Any] | None = None
    created_utc: str | None = None  # written by early versions; never material
    updated_utc: str | None = None

    def planned(self) -> list[AttemptIdentity]:
        """Every attempt the declaration asks for, in ledger order."""
        versions = {slug: str(info.get("version")) for slug, info in self.tasks.items()}
        cells = [c.ref for c in self.cells]
        return plan_attempts(cells, self.seeds, self.reps, {c.task: versions.get(c.task, "None") for c in cells})

    def to_json(self) -> dict[str, Any]:
        """The file's content (python values: a non-finite float of an early file stays one)."""
        data = self.model_dump(by_alias=True)
        for key in ("sources", "created_utc", "updated_utc", "rescoring", "study"):
            if data[key] is None:
                del data[key]
        if not data["runs"]:
            del data["runs"]
        for cell in data["cells"]:
            if cell["interface"] == CLI:
                del cell["interface"]
        return data


def build_declaration(
    *,
    label: str,
    cells: list[Cell],
    seeds: list[int],
    reps: int,
    task_info: dict[str, dict[str, Any]],
    systems: dict[str, Any],
    turn_timeout_s: float | None,
    backend: str,
    volatile: dict[str, Any],
    sources: dict[str, Any] | None = None,
) -> CampaignDeclaration:
    """The declaration of a campaign.

    `task_info` maps task slug to `{"version", "tree_sha256"}`; `systems` maps system name to a
    hash of its definition (command systems) or to how it is defined (scripted policies);
    `sources` is `orchestrator.campaign.sources.label_sources()` (None: not recorded, for tests
    of the other parts of a declaration).
    """
    return CampaignDeclaration(
        label=label,
        cells=[DeclaredCell(cell=c.text, system=c.system, task=c.task, condition=c.condition, interface=c.interface)
               for c in cells],
        conditions=sorted({c.condition for c in cells}),
        seeds=list(seeds),
        reps=reps,
        tasks={slug: task_info[slug] for slug in sorted(task_info)},
        systems={name: systems[name] for name in sorted(systems)},
        timeouts={"turn_s": turn_timeout_s},
        backend=backend,
        isolation="docker" if backend == "docker" else "none",
        volatile=volatile,
        sources=sources,
    )


def material(decl: dict[str, Any]) -> dict[str, Any]:
    """The part of a declaration that identifies the campaign (volatile keys removed)."""
    return {k: v for k, v in decl.items() if k not in VOLATILE_KEYS}


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(f"{sub}: added ({canonical_json(new[key])})")
            elif key not in new:
                out.append(f"{sub}: removed (was {canonical_json(old[key])})")
            else:
                _diff(old[key], new[key], sub, out)
    elif old != new:
        out.append(f"{path}: was {canonical_json(old)}, now {canonical_json(new)}")


def declaration_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences between two declarations, volatile values ignored."""
    out: list[str] = []
    _diff(material(old), material(new), "", out)
    return out


def load_declaration(root: Path) -> CampaignDeclaration | None:
    """The stored `campaign.json` of a label, or None for a new label."""
    path = root / DECLARATION_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise DeclarationChanged(f"{path} is not valid JSON ({exc}); refusing to guess the campaign") from None
    if not isinstance(data, dict):
        raise DeclarationChanged(f"{path} is not a JSON object")
    try:
        return CampaignDeclaration.model_validate(data)
    except ValidationError as exc:
        raise DeclarationChanged(f"{path} is not a campaign declaration ({exc}); refusing to guess the campaign") from None


def write_declaration(root: Path, decl: CampaignDeclaration) -> None:
    """Write `campaign.json` atomically (indented: people read it)."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / (DECLARATION_FILE + ".tmp")
    tmp.write_text(json.dumps(decl.to_json(), indent=2, sort_keys=True) + "\n")
    tmp.replace(root / DECLARATION_FILE)


def _explained(change: str) -> str:
    """A change line with what it means appended (`sources.parts.erp_service: ... (the ERP changed...)`)."""
    what = describe_change(change.split(":", 1)[0])
    return f"{change} ({what})" if what else change


def _next_label(root: Path) -> str:
    """A label beside `root` that does not exist yet: `<label>-2`, `-3`, ..."""
    n = 2
    while (root.parent / f"{root.name}-{n}").exists():
        n += 1
    return f"{root.name}-{n}"


def check_or_write_declaration(root: Path, decl: CampaignDeclaration) -> bool:
    """Store the declaration for a new label, or check a resumed one; True when resuming.

    Raises `DeclarationChanged` listing every material difference. The stored file keeps its
    original volatile values apart from the latest run's, which are recorded under `runs`.
    """
    old = load_declaration(root)
    if old is None:
        write_declaration(root, decl)
        return False
    changes = [_explained(c) for c in declaration_changes(old.to_json(), decl.to_json())]
    if changes:
        raise DeclarationChanged(
            f"label {root.name!r} already holds a different campaign ({root / DECLARATION_FILE}):\n  "
            + "\n  ".join(changes)
            + f"\nStart a new label to run on what changed (e.g. --label {_next_label(root)}), or restore "
            "it and run the same declaration to resume this one."
        )
    write_declaration(root, old.model_copy(update={"runs": [*old.runs, decl.volatile]}))
    return True
