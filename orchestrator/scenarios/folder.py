"""A scenario as a folder: the `Scenario` the runtime and the grader read, its `Turn`s, the
`ScenarioError` of a task or scenario bug, and where the cache keeps the folders
(`cache_root_default`).

The cache that builds these folders (generation, the oracle's reference) is
`orchestrator/scenarios/cache.py`; it runs the attempt runtime for the reference, so what the runtime
needs of a scenario lives here, in a module that imports neither (contracts §7, §10).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from orchestrator.config import REPO_ROOT
from orchestrator.scenarios.oracle_run import ORACLE_RUN_DIR

DEFAULT_CACHE = REPO_ROOT / ".cache" / "scenarios"


class ScenarioError(RuntimeError):
    exit_class = "task_error"  # orchestrator.exit_codes.Failure
    exit_prefix = "task error: "
    """A scenario could not be built, or its reference contradicts truth.json (a task bug)."""


@dataclass(frozen=True)
class Turn:
    """One turn of a scenario (`turns.yaml`)."""

    n: int
    date: str
    from_user: str
    from_name: str
    from_title: str
    request: str
    budget_s: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Scenario:
    """A generated scenario directory (and its reference, once built)."""

    slug: str
    seed: int
    dir: Path
    key: str

    @property
    def db(self) -> Path:
        return self.dir / "scenario.db"

    @property
    def world(self) -> Path:
        return self.dir / "world.json"

    @property
    def handbook_dir(self) -> Path:
        return self.dir / "handbook"

    @property
    def reference_dir(self) -> Path:
        return self.dir / "reference"

    @property
    def oracle_run_dir(self) -> Path:
        """The oracle's recorded run (orchestrator/scenarios/oracle_run.py), kept with the reference."""
        return self.dir / ORACLE_RUN_DIR

    @property
    def meta(self) -> dict[str, Any]:
        return json.loads((self.dir / "scenario.json").read_text(encoding="utf-8"))

    @property
    def truth(self) -> dict[str, Any]:
        p = self.dir / "truth.json"
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}

    @property
    def turns(self) -> list[Turn]:
        raw = yaml.safe_load((self.dir / "turns.yaml").read_text(encoding="utf-8")) or []
        turns = []
        for i, t in enumerate(raw):
            try:
                turns.append(Turn(n=int(t["n"]), date=str(t["date"]), from_user=str(t["from_user"]),
                                  from_name=str(t["from_name"]), from_title=str(t["from_title"]),
                                  request=str(t["request"]), budget_s=float(t["budget_s"])))
            except (KeyError, TypeError, ValueError) as exc:
                raise ScenarioError(f"{self.dir / 'turns.yaml'}: turn [{i}]: {exc!r}") from None
        return turns


def cache_root_default() -> Path:
    """The scenario cache's folder: `$PB_SCENARIO_CACHE`, else `.cache/scenarios/` of the repo."""
    env = os.environ.get("PB_SCENARIO_CACHE")
    return Path(env) if env else DEFAULT_CACHE
