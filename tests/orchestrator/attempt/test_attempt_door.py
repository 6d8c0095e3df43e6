"""One door into an attempt (`orchestrator.attempt.run_cell`), and a single attempt never climbing
into `campaign/` (local backend, a fake scenario; the AST of the orchestrator for the layout)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT
from runtime_support import fake_scenario

from orchestrator.attempt import AttemptSpec, run_cell
from orchestrator.backends.local import LocalBackend
from orchestrator.campaign.declaration import DECLARATION_FILE, DeclarationChanged, build_declaration, write_declaration
from orchestrator.campaign.lifecycle import Campaign
from orchestrator.campaign.spec import spec_from_args
from orchestrator.cells import parse_cell
from orchestrator.config import RuntimeConfig
from orchestrator.errors import ConfigError, TaskError
from orchestrator.identity import AttemptIdentity
from orchestrator.scenarios.folder import ScenarioError

ORCH = REPO_ROOT / "orchestrator"


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """Every orchestrator module `path` imports, anywhere in it (functions, TYPE_CHECKING too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("orchestrator")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("orchestrator"):
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _closure(start: str) -> set[str]:
    """The orchestrator modules `start` reaches through imports (a package's __init__ included)."""
    files = {_module_of(p): p for p in ORCH.rglob("*.py")}
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in files:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(2, len(parts))]  # the packages it runs
        todo += [m for m in _imported(files[name]) if m in files]
    return seen


@pytest.mark.parametrize("entry", ["orchestrator.commands.attempt", "orchestrator.commands.human",
                                   "orchestrator.attempt", "orchestrator.scenarios.reference"])
def test_a_single_attempt_never_imports_the_campaign(entry: str):
    reached = _closure(entry)
    assert entry in reached
    assert not {m for m in reached if m.startswith("orchestrator.campaign")}, sorted(reached)


def test_run_attempt_is_called_only_through_the_door():
    """Every caller (attempt/human commands, the campaign's job, validate, the reference run) uses
    `run_cell`; `run_attempt` is the lifecycle behind it."""
    callers = []
    for path in ORCH.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
                if name == "run_attempt":
                    callers.append(path.relative_to(REPO_ROOT).as_posix())
    assert callers == ["orchestrator/attempt/door.py"]
    users = {p.relative_to(REPO_ROOT).as_posix() for p in ORCH.rglob("*.py") if "run_cell(" in p.read_text()}
    assert {"orchestrator/commands/attempt.py", "orchestrator/campaign/runtime.py", "orchestrator/validate.py",
            "orchestrator/scenarios/reference.py"} <= users


def _local(tmp_path: Path) -> tuple[LocalBackend, RuntimeConfig]:
    cfg = RuntimeConfig.from_env(runs_root=tmp_path / "runs", scratch_root=tmp_path / "scratch", campaign="door")
    return LocalBackend(cfg), cfg


def test_the_door_runs_the_attempt_into_its_identitys_folder(tmp_path: Path):
    backend, cfg = _local(tmp_path)
    scenario, task = fake_scenario(tmp_path / "scenario", turns=1)
    asked: list[tuple[str, int]] = []

    def source(slug: str, seed: int):
        asked.append((slug, seed))
        return scenario

    spec = AttemptSpec(parse_cell("null:fake"), 3, rep=2, label="door")
    result = run_cell(spec, backend=backend, config=cfg, task=task, scenario_for=source, grade=False)
    assert asked == [("fake", 3)] and result.outcome == "graded"
    ident = AttemptIdentity.of(spec.cell, 3, 2, task.version)
    assert result.paths.root == ident.folder(cfg.runs_root, "door") and result.attempt_id == ident.attempt_id
    assert (result.paths.root / "result.json").is_file()


def test_the_door_says_whose_fault_a_missing_input_is(tmp_path: Path):
    backend, cfg = _local(tmp_path)
    _, task = fake_scenario(tmp_path / "scenario", turns=1)
    spec = AttemptSpec(parse_cell("null:fake"), 0, label="door")

    def broken(slug: str, seed: int):
        raise ScenarioError("the generator raised")

    with pytest.raises(TaskError, match="scenario of 'fake' seed 0: the generator raised"):
        run_cell(spec, backend=backend, config=cfg, task=task, scenario_for=broken)
    with pytest.raises(ConfigError, match="no-such-pack"):  # the user named a task that is not there
        run_cell(AttemptSpec(parse_cell("null:no-such-pack"), 0), backend=backend, config=cfg, scenario_for=broken)
    with pytest.raises(TypeError, match="scenario"):
        run_cell(spec, backend=backend, config=cfg, task=task)
    assert not (cfg.runs_root / "door").exists()  # nothing started, nothing recorded


def test_the_campaign_checks_before_it_prepares_and_declares_last(tmp_path: Path):
    runs = tmp_path / "runs"
    spec = spec_from_args("null:payment-run", seeds="0", label="lc", backend="local")
    campaign = Campaign(spec, runs_root=runs)
    with pytest.raises(RuntimeError, match="phase order"):
        campaign.declare()
    campaign.check()
    assert [i.attempt_id for i in campaign.plan] == [
        AttemptIdentity.of(parse_cell("null:payment-run"), 0, 1, campaign.checked.tasks["payment-run"]["version"]).attempt_id]
    assert not (runs / "lc").exists()  # checked, nothing written
    campaign.declare()
    assert (runs / "lc" / DECLARATION_FILE).is_file()


def test_the_campaign_refuses_bad_input_and_another_campaign_at_check(tmp_path: Path):
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError, match="no-such-pack"):
        Campaign(spec_from_args("null:no-such-pack", label="bad", backend="local"), runs_root=runs).check()
    with pytest.raises(ConfigError, match="--ray-address"):
        Campaign(spec_from_args("null:payment-run", label="r", backend="local"), runs_root=runs, executor="ray")
    other = build_declaration(label="lc", cells=[parse_cell("null:payment-run")], seeds=[9], reps=1,
                              task_info={"payment-run": {"version": "1", "tree_sha256": "t"}},
                              systems={"null": {"kind": "policy"}}, turn_timeout_s=None, backend="local", volatile={})
    write_declaration(runs / "lc", other)
    with pytest.raises(DeclarationChanged, match="already holds a different campaign"):
        Campaign(spec_from_args("null:payment-run", seeds="0", label="lc", backend="local"), runs_root=runs).check()
    assert not (runs / "bad").exists() and sorted(p.name for p in (runs / "lc").iterdir()) == [DECLARATION_FILE]
