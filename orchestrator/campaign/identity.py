"""Deterministic attempt identity, attempt folders, and the label's declaration (`campaign.json`).

An attempt is identified by (cell, task version, seed, repetition, condition); the same identity
always gives the same attempt id and the same folder, `runs/<label>/<cell>/seed-<n>/rep-<k>/`.
The label root holds `campaign.json`, which declares the campaign; re-running a label compares the
new declaration with the stored one and refuses when a value that matters has changed: the cells,
seeds, reps, systems, the task packs' trees, and (`sources`, orchestrator/campaign/sources.py) every
shared source tree a scenario, a verdict or a policy depends on and the images' content tags, so a
label never holds results of two versions.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrator.campaign.sources import describe_change
from orchestrator.cells import CLI, Cell

DECLARATION_FILE = "campaign.json"
DECLARATION_SCHEMA = 1
# Keys of campaign.json that never make a re-run a different campaign.
VOLATILE_KEYS = frozenset({"volatile", "created_utc", "updated_utc", "runs"})
# Outcomes that end an attempt for good; an `infra_error` is tried again when the label resumes.
# A `task_error` is final too: running the same broken task again gives the same error.
FINAL_OUTCOMES = frozenset({"graded", "agent_error", "task_error"})



def canonical_json(obj: Any) -> str:
    """The one serialisation used for hashing and for ledger lines: sorted keys, no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def cell_dirname(cell: Cell) -> str:
    """The folder of a cell under the label: the runtime's `Cell.slug` (`null__payment-run`).

    Both sides must agree on it, so the runtime's definition is the only one.
    """
    return Cell(cell.system, cell.task, cell.condition, cell.interface).slug


@dataclass(frozen=True, order=True)
class AttemptIdentity:
    """Everything that makes one attempt this attempt; ordering is the ledger's sort order."""

    task: str
    system: str
    condition: str
    seed: int
    rep: int
    task_version: str
    interface: str = CLI  # part of the identity (issue 17); a cli attempt's id is as it always was

    @property
    def cell(self) -> Cell:
        """The attempt's cell."""
        return Cell(self.system, self.task, self.condition, self.interface)

    @property
    def attempt_id(self) -> str:
        """Readable and deterministic: `<cell dir>.s<seed>.r<rep>.<hash of the identity>`."""
        digest = sha256_bytes(canonical_json(self.as_dict()).encode())[:10]
        return f"{cell_dirname(self.cell)}.s{self.seed}.r{self.rep}.{digest}"

    def as_dict(self) -> dict[str, Any]:
        """The identity as a plain mapping, with the cell text."""
        out = asdict(self)
        if self.interface == CLI:
            del out["interface"]  # so the ids and ledger lines of cli attempts never changed
        out["cell"] = self.cell.text
        return out

    def sort_key(self) -> tuple:
        """Ledger order: task, system, condition, interface, seed, repetition."""
        return (self.task, self.system, self.condition, self.interface, self.seed, self.rep)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttemptIdentity:
        """The identity `as_dict` wrote (a ledger line's `identity`); a cli attempt's has no `interface`."""
        return cls(task=str(data["task"]), system=str(data["system"]), condition=str(data["condition"]),
                   seed=int(data["seed"]), rep=int(data["rep"]), task_version=str(data["task_version"]),
                   interface=str(data.get("interface", CLI)))


def label_root(runs_root: Path, label: str) -> Path:
    """`runs/<label>/`."""
    return runs_root / label


def attempt_dir(runs_root: Path, label: str, ident: AttemptIdentity) -> Path:
    """`runs/<label>/<cell>/seed-<n>/rep-<k>/` (contracts section 9)."""
    return label_root(runs_root, label) / cell_dirname(ident.cell) / f"seed-{ident.seed}" / f"rep-{ident.rep}"


def retry_dirs(final_dir: Path) -> list[Path]:
    """The folders of earlier tries of one attempt (`rep-<k>.try-<j>`), in try order."""
    if not final_dir.parent.is_dir():
        return []
    found = []
    for p in final_dir.parent.iterdir():
        m = re.fullmatch(re.escape(final_dir.name) + r"\.try-(\d+)", p.name)
        if m and p.is_dir():
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def read_result(folder: Path) -> dict[str, Any] | None:
    """The attempt's result.json, or None when it is missing or unreadable (not final)."""
    path = folder / "result.json"
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
        AttemptIdentity(c.task, c.system, c.condition, seed, rep, task_versions[c.task], c.interface)
        for c in cells
        for seed in seeds
        for rep in range(1, reps + 1)
    ]
    return sorted(out, key=AttemptIdentity.sort_key)


# --------------------------------------------------------------------------- the declaration


class DeclarationChanged(RuntimeError):
    exit_class = "bad_input"  # orchestrator.exit_codes.Failure
    """The label already holds a different campaign; the message lists what changed."""


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
) -> dict[str, Any]:
    """The content of `campaign.json`. Everything outside `volatile` matters for resuming.

    `task_info` maps task slug to `{"version", "tree_sha256"}`; `systems` maps system name to a
    hash of its definition (command systems) or to how it is defined (scripted policies);
    `sources` is `orchestrator.campaign.sources.label_sources()` (None: not recorded, for tests
    of the other parts of a declaration).
    """
    decl: dict[str, Any] = {
        "schema": DECLARATION_SCHEMA,
        "label": label,
        "cells": [
            {"cell": c.text, "system": c.system, "task": c.task, "condition": c.condition,
             **({"interface": c.interface} if c.interface != CLI else {})} for c in cells
        ],
        "conditions": sorted({c.condition for c in cells}),
        "seeds": list(seeds),
        "reps": reps,
        "tasks": {slug: task_info[slug] for slug in sorted(task_info)},
        "systems": {name: systems[name] for name in sorted(systems)},
        "timeouts": {"turn_s": turn_timeout_s},
        "backend": backend,
        "isolation": "docker" if backend == "docker" else "none",
        "volatile": volatile,
    }
    if sources is not None:
        decl["sources"] = sources
    return decl


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


def load_declaration(root: Path) -> dict[str, Any] | None:
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
    return data


def write_declaration(root: Path, decl: dict[str, Any]) -> None:
    """Write `campaign.json` atomically (indented: people read it)."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / (DECLARATION_FILE + ".tmp")
    tmp.write_text(json.dumps(decl, indent=2, sort_keys=True) + "\n")
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


def check_or_write_declaration(root: Path, decl: dict[str, Any]) -> bool:
    """Store the declaration for a new label, or check a resumed one; True when resuming.

    Raises `DeclarationChanged` listing every material difference. The stored file keeps its
    original volatile values apart from the latest run's, which are recorded under `runs`.
    """
    old = load_declaration(root)
    if old is None:
        write_declaration(root, decl)
        return False
    changes = declaration_changes(old, decl)
    changes = [_explained(c) for c in changes]
    if changes:
        raise DeclarationChanged(
            f"label {root.name!r} already holds a different campaign ({root / DECLARATION_FILE}):\n  "
            + "\n  ".join(changes)
            + f"\nStart a new label to run on what changed (e.g. --label {_next_label(root)}), or restore "
            "it and run the same declaration to resume this one."
        )
    runs = list(old.get("runs", []))
    runs.append(decl.get("volatile", {}))
    write_declaration(root, {**old, "runs": runs})
    return True
