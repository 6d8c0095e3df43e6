"""The harness-oracle validation control: `orchestrate validate --harness-oracle claude-code,codex`.

Per task × seed × system, one attempt of `SYSTEM:TASK` (clean) whose model access declares the
harness oracle for every provider: the fake provider plays the conversation derived from the
scenario's recorded oracle run (orchestrator/harness_oracle/conversation.py), and the real CLI
executes it in the attempt's isolation. The control holds when the attempt completes every turn
(exit 0, no timeout), passes every check, the fake provider was asked for every step of the
script (the whole conversation was played, nothing was skipped), and the final canonical database
hash is the oracle's. It proves the machinery has no harness-shaped blind spot for that task; it
validates the harness path, not the task (the §11 controls of `orchestrate validate` do that).
"""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from orchestrator.cells import Cell
from orchestrator.scenarios.oracle_run import OracleRun, load_oracle_run
from orchestrator.validate import CellAttempts, Report, oracle_problems

HARNESS_SYSTEMS = ("claude-code", "codex")
CONTROL = "harness-oracle"
FAKE_MODELS = {"anthropic": "fake-claude", "openai": "fake-gpt"}
# Per attempt: the conversation reports ~1,600 tokens a step; a few hundred steps fit.
BUDGET_TOKENS = 5_000_000
SCRIPT_FILE = "harness-oracle-script.json"  # orchestrator.attempt.model_run.HARNESS_ORACLE_FILE
FAKE_RECORD = "fake-provider.jsonl"         # orchestrator.attempt.model_run.FAKE_RECORD_FILE


def harness_oracle_access() -> dict[str, Any]:
    """A model-access document whose every provider is the fake playing the harness oracle."""
    return {"providers": {p: {"harness_oracle": True, "models": [m]} for p, m in FAKE_MODELS.items()},
            "budget": {"max_tokens": BUDGET_TOKENS}}


def write_access_file(folder: Path) -> Path:
    """Write `harness_oracle_access()` as a model-access file in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model-access-harness-oracle.yaml"
    path.write_text(yaml.safe_dump(harness_oracle_access(), sort_keys=True), encoding="utf-8")
    return path


def steps_played(attempt_dir: Path) -> tuple[int, int]:
    """(steps of the script the fake was asked for, steps in the script) of an attempt's folder."""
    script = json.loads((attempt_dir / SCRIPT_FILE).read_text(encoding="utf-8"))
    taken: set[int] = set()
    record = attempt_dir / FAKE_RECORD
    if record.is_file():
        for line in record.read_text(encoding="utf-8").splitlines():
            step = json.loads(line).get("step") if line.strip() else None
            if isinstance(step, int):
                taken.add(step)
    return len(taken), len(script.get("steps") or [])


def harness_problems(result: dict[str, Any], oracle: OracleRun, n_turns: int) -> list[str]:
    """Why a harness-oracle attempt does not hold (empty when it does)."""
    probs = oracle_problems(result, n_turns, who="harness oracle")
    if probs:
        return probs
    folder = result.get("_dir")
    if folder and (Path(folder) / SCRIPT_FILE).is_file():
        taken, total = steps_played(Path(folder))
        if taken != total:
            probs.append(f"the harness asked the fake provider for {taken} of the script's {total} steps")
    else:
        probs.append("no harness-oracle script in the attempt folder (was the harness oracle declared?)")
    got = (result.get("hashes") or {}).get("canonical_db")
    if got != oracle.canonical_db:
        probs.append(f"canonical hash {str(got)[:12]} is not the oracle's {oracle.canonical_db[:12]}")
    return probs


def validate_harness_oracle(tasks: list[str], seeds: list[int], systems: list[str], *,
                            run_one: Callable[..., dict[str, Any]],
                            scenario_for: Callable[[str, int], Any] | None = None,
                            progress: Callable[[str], None] | None = None, concurrency: int = 1,
                            stopped: Callable[[], bool] = lambda: False) -> Report:
    """Run the control for every task × seed × system; return the report (no printing)."""
    from tasks.registry import load_task

    if scenario_for is None:
        from orchestrator.scenarios.cache import ensure_scenario

        scenario_for = ensure_scenario
    say = progress or (lambda _m: None)
    rep = Report(tasks, seeds, "clean")
    for slug in tasks:
        task = load_task(slug)
        for seed in seeds:
            if stopped():
                rep.interrupted = True
                return rep
            say(f"{slug} seed {seed}: scenario and the oracle's recorded run")
            try:
                scen = scenario_for(slug, seed)
                oracle = load_oracle_run(scen.oracle_run_dir)
            except Exception as exc:  # a generator, reference or recording failure (OracleRunError)
                rep.add(slug, "oracle run", seed, [f"{type(exc).__name__}: {exc}"])
                continue
            rep.add(slug, "oracle run", seed, [], f"{len(oracle.requests)} request(s), {len(oracle.files)} file(s)")

            def one_control(system: str, scen: Any = scen, seed: int = seed, slug: str = slug,
                        task: Any = task) -> dict[str, Any]:
                say(f"{slug} seed {seed}: {CONTROL} {system}")
                try:
                    return run_one(Cell(system, slug), seed, 1, scenario=scen, task=task)
                except Exception as exc:  # bad input or a crash in the lifecycle: a problem, not a stop
                    return {"outcome": "infra_error", "error": {"message": f"{type(exc).__name__}: {exc}"}}

            with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
                results = list(pool.map(one_control, systems))
            for system, res in zip(systems, results, strict=True):
                rep.add(slug, f"{CONTROL}:{system}", seed, harness_problems(res, oracle, len(scen.turns)),
                        "pass, oracle's hash", result=res)
    return rep


def run_harness_validation(tasks: list[str], seeds: list[int], systems: list[str], *, backend: str,
                           runs_root: Path | None = None, keep: bool = False, concurrency: int = 1,
                           cancel: threading.Event | None = None, systems_file: Path | None = None) -> Report:
    """The control through real attempts on `backend` (records under `runs_root`, or a temporary
    folder removed afterwards unless `keep` or there were problems)."""
    import datetime as dt

    label = "harness-oracle-" + dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    root = Path(runs_root) if runs_root else Path(tempfile.mkdtemp(prefix="pb-harness-oracle-"))
    attempts = CellAttempts(backend, root, label, cancel, model_access=write_access_file(root / label),
                            systems_file=systems_file)
    rep = validate_harness_oracle(tasks, seeds, systems, run_one=attempts, concurrency=concurrency,
                                  progress=lambda m: print(f"… {m}", flush=True), stopped=attempts.cancel.is_set)
    rep.interrupted = rep.interrupted or attempts.cancel.is_set()
    if rep.problems or keep or runs_root or rep.interrupted:
        rep.notes.append(f"attempt records: {root / label}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return rep
