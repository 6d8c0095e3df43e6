"""The attempt's identity: the one source of its id, its folder and its place in ledger order.

An attempt is this attempt because of (task, system, condition, interface, seed, repetition, task
version); the same identity always gives the same `attempt_id` and the same folder,
`runs/<label>/<cell>/seed-<n>/rep-<k>/` (contracts §9). The records (attempt.json, result.json),
the campaign's plan and ledger, the publication bundle and the report all take these three from
here, never compute them themselves. One execution of an attempt is a *try*, with its own
`run_id` (`AttemptIdentity.new_run_id`); an `infra_error` is retried as a new try of the same
attempt, in the same folder (earlier tries are kept beside it as `rep-<k>.try-<j>`).

Imports only the orchestrator's root modules: the attempt, the campaign and publication all use it.
"""
from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from orchestrator.cells import CLI, Cell
from orchestrator.hashing import canonical_json, sha256_bytes


def cell_dirname(cell: Cell) -> str:
    """The folder of a cell under the label: the cell's slug (`null__payment-run`)."""
    return cell.slug


class AttemptIdentity(BaseModel):
    """Everything that makes one attempt this attempt (frozen: an identity never changes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    system: str
    condition: str
    seed: int
    rep: int
    task_version: str
    interface: str = CLI  # part of the identity (issue 17); a cli attempt's id is as it always was

    @field_validator("task_version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> str:
        # A pack's version is an int (task.yaml); records before schema 2 wrote it as a number.
        return str(value)

    @classmethod
    def of(cls, cell: Cell, seed: int, rep: int, task_version: Any) -> AttemptIdentity:
        """The identity of `cell` at `seed`, repetition `rep`, on the pack's `task_version`."""
        return cls(task=cell.task, system=cell.system, condition=cell.condition, interface=cell.interface,
                   seed=seed, rep=rep, task_version=task_version)

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
        """The identity as a plain mapping with the cell text (a ledger line's `identity`)."""
        out: dict[str, Any] = self.model_dump()
        if self.interface == CLI:
            del out["interface"]  # so the ids and ledger lines of cli attempts never changed
        out["cell"] = self.cell.text
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttemptIdentity:
        """The identity `as_dict` (or a record) wrote; a cli attempt's may have no `interface`."""
        return cls(task=data["task"], system=data["system"], condition=data["condition"], seed=data["seed"],
                   rep=data["rep"], task_version=data["task_version"], interface=data.get("interface") or CLI)

    def sort_key(self) -> tuple[str, str, str, str, int, int]:
        """Ledger order: task, system, condition, interface, seed, repetition."""
        return (self.task, self.system, self.condition, self.interface, self.seed, self.rep)

    def run_id_prefix(self) -> str:
        """The start of the run id of every try of this attempt (the `pb.attempt` label of its
        engine objects, whatever try made them: a lost Ray node's leftovers are found by it)."""
        return f"{self.cell.slug[:40]}-s{self.seed}-r{self.rep}-".replace("_", "-")

    def new_run_id(self) -> str:
        """A new try's id, unique per try: engine object names, their labels and the try's log lines."""
        return self.run_id_prefix() + uuid.uuid4().hex[:8]

    def folder(self, runs_root: Path, label: str) -> Path:
        """`runs/<label>/<cell>/seed-<n>/rep-<k>/` (contracts §9)."""
        return runs_root / label / cell_dirname(self.cell) / f"seed-{self.seed}" / f"rep-{self.rep}"


def try_folder(final_dir: Path, index: int) -> Path:
    """Where the `index`-th earlier try of the attempt in `final_dir` is kept: `rep-<k>.try-<j>`."""
    return final_dir.with_name(f"{final_dir.name}.try-{index}")


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
