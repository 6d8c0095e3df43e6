"""Generating a scenario: run a pack's generator chain and write the scenario directory.

`python -m tasks.generate --task SLUG --seed N --out DIR [--root ROOT]` is what
`TaskPack.generate` runs, in a subprocess of its own (a generator's imports, globals and
failures stay out of the orchestrator). The chain is the pack's ancestors first: a variant's
parent generator fills the context, then the variant's changes it; nothing is written until
the last one returns. Then the framework dates and finishes the database and writes
world.json, turns.yaml, truth.json, scenario.json and handbook/ (docs/contracts.md §7).
"""
from __future__ import annotations

import gc

if __name__ == "__main__":
    # The imports below (the ERP's models, tables and route declarations) make objects that live as
    # long as this process; the cyclic collector traversing them, during the imports and again
    # under the pack's own work, cost about a third of a second pack's CPU. It is off while they
    # are made; `main` moves them out of its sight (gc.freeze) and turns it back on.
    gc.disable()

import argparse
import json
import os
import shutil
import signal
import sqlite3
import sys
from pathlib import Path

import yaml

from erp_service.world import parse_world, world_data, world_json
from tasks.context import GeneratorContext
from tasks.loader import load_generator
from tasks.packs import GenerationError, TaskPack
from tasks.registry import lineage, load_task


def run_chain(pack: TaskPack, ctx: GeneratorContext) -> None:
    """Call every generator of the pack's lineage (root ancestor first) on one context."""
    for member in lineage(pack):
        fn = load_generator(member)
        if fn is not None:
            fn(ctx)


def _people(db_path: Path) -> tuple[str, dict[str, tuple[str, str]]]:
    """The company's name and {user id: (name, title)} from the finished database."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM company WHERE key = 'name'").fetchone()
        users = {uid: (name, title or "") for uid, name, title in conn.execute("SELECT id, name, title FROM users")}
    finally:
        conn.close()
    return (row[0] if row else ""), users


def write_scenario(pack: TaskPack, ctx: GeneratorContext) -> None:
    """Write every file of the scenario directory but scenario.db from the filled context."""
    problems = ctx.turn_problems()
    if problems:
        raise GenerationError(f"{pack.slug}: turns differ from task.yaml: " + "; ".join(problems))
    if ctx.truth.task != pack.slug or ctx.truth.seed != ctx.seed:
        raise GenerationError(f"{pack.slug}: truth.task/seed are {ctx.truth.task!r}/{ctx.truth.seed}, "
                              f"expected {pack.slug!r}/{ctx.seed}")
    out = ctx.out
    company, users = _people(ctx.db_path)

    def person(user_id: str, where: str) -> tuple[str, str]:
        if user_id not in users:
            raise GenerationError(f"{pack.slug}: {where}: {user_id!r} is not a user of the company")
        return users[user_id]

    dump = lambda obj: json.dumps(obj, indent=1, sort_keys=True) + "\n"  # noqa: E731
    # Validated again as a whole: an in-place edit (`ctx.world.calls.append({...})`) bypasses
    # the validation of assignment, and a misspelt field must never reach the file.
    world = parse_world(world_data(ctx.world), f"{pack.slug}: ctx.world")
    (out / "world.json").write_text(world_json(world))
    (out / "truth.json").write_text(dump(ctx.truth.model_dump(mode="json")))
    turns = []
    for t in ctx.turns:
        name, title = person(t.from_user, f"turn {t.n}: from_user")
        turns.append({"n": t.n, "date": t.date, "from_user": t.from_user, "from_name": name,
                      "from_title": title, "request": t.request, "budget_s": t.budget_s})
    (out / "turns.yaml").write_text(yaml.safe_dump(turns, sort_keys=False, allow_unicode=True, width=100))
    agent_name, agent_title = person(ctx.agent_user, "agent_user")
    meta = {"task": pack.slug, "version": pack.version, "seed": ctx.seed, "company": company,
            "start_date": ctx.start_date, "grading_date": ctx.grading_date,
            "agent_user": ctx.agent_user, "agent_name": agent_name, "agent_title": agent_title,
            "agent_token": ctx.agent_token, "agent_token_id": f"tok-{ctx.agent_user}"}
    if ctx.disclosed_users:  # absent when none: the other packs' scenario.json stays as it was
        meta["disclosed_token_ids"] = [f"tok-{u}" for u in ctx.disclosed_users]
    (out / "scenario.json").write_text(dump(meta))
    if (out / "handbook").exists():
        shutil.rmtree(out / "handbook")
    shutil.copytree(pack.handbook_dir, out / "handbook")


def generate(pack: TaskPack, seed: int, out: Path) -> Path:
    """Generate the pack's scenario at `seed` into `out` in this process (the subprocess body)."""
    out = Path(out)
    ctx = GeneratorContext(pack.spec, seed, out)
    run_chain(pack, ctx)
    ctx.finish_database()
    write_scenario(pack, ctx)
    return out


def die_with_parent() -> None:
    """Linux: be SIGKILLed when the process that started us dies (PR_SET_PDEATHSIG), so a killed
    orchestrator leaves no generator writing into its cache. `PB_GENERATE_PARENT` is the pid of
    the parent that set it (`TaskPack.generate`); if that parent is already gone, stop now."""
    parent = os.environ.get("PB_GENERATE_PARENT", "")
    if not sys.platform.startswith("linux") or not parent.isdigit():
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != int(parent):
        sys.exit("tasks.generate: the parent process died before the generator started")


def main(argv: list[str] | None = None) -> int:
    """Command line of the generation subprocess."""
    gc.freeze()
    gc.enable()
    die_with_parent()
    parser = argparse.ArgumentParser(prog="python -m tasks.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True, help="pack id, e.g. payment-run")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--root", type=Path, help="folder of packs (default: the tasks package)")
    args = parser.parse_args(argv)
    generate(load_task(args.task, args.root), args.seed, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
