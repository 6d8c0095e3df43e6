"""Writing a scenario directory (docs/contracts.md §7) from a built database and the pack's
turns, world, truth and handbook."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .people import BY_ID, COMPANY_NAME


@dataclass(frozen=True)
class TurnPlan:
    """One turn: its business date, who asks, the request and the time budget."""

    n: int
    date: str
    from_user: str
    request: str
    budget_s: int = 1200

    def as_dict(self) -> dict[str, Any]:
        """The turns.yaml entry."""
        sender = BY_ID[self.from_user]
        return {"n": self.n, "date": self.date, "from_user": sender.id, "from_name": sender.name,
                "from_title": sender.title, "request": self.request, "budget_s": self.budget_s}


@dataclass
class ScenarioFiles:
    """Everything a generator writes besides scenario.db."""

    task: str
    version: int
    seed: int
    start_date: str
    grading_date: str
    agent_user: str
    agent_token: str
    agent_token_id: str
    turns: list[TurnPlan]
    world: dict[str, Any]
    truth: dict[str, Any]
    handbook_dir: Path
    extra: dict[str, Any] = field(default_factory=dict)


def write_scenario(out: Path, files: ScenarioFiles) -> None:
    """Write world.json, turns.yaml, truth.json, scenario.json and copy handbook/ into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    agent = BY_ID[files.agent_user]
    dump = lambda obj: json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n"  # noqa: E731
    (out / "world.json").write_text(dump(files.world))
    (out / "truth.json").write_text(dump(files.truth))
    (out / "turns.yaml").write_text(yaml.safe_dump([t.as_dict() for t in files.turns], sort_keys=False,
                                                   allow_unicode=True, width=100))
    meta = {"task": files.task, "version": files.version, "seed": files.seed, "company": COMPANY_NAME,
            "start_date": files.start_date, "grading_date": files.grading_date,
            "agent_user": agent.id, "agent_name": agent.name, "agent_title": agent.title,
            "agent_token": files.agent_token, "agent_token_id": files.agent_token_id, **files.extra}
    (out / "scenario.json").write_text(dump(meta))
    if (out / "handbook").exists():
        shutil.rmtree(out / "handbook")
    shutil.copytree(files.handbook_dir, out / "handbook")


def generator_main(generate, description: str, argv: list[str] | None = None) -> int:
    """The command line every task generator shares: `gen.py --seed N --out DIR`."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    generate(args.seed, args.out)
    return 0
