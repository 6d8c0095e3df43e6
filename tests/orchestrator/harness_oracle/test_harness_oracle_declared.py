"""How the harness oracle is declared: the model access, the isolated pilot's campaign file, the
`validate --harness-oracle` arguments, and what an attempt refuses (no containers)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from repo_paths import REPO_ROOT

from agent_sandbox.systems import BUILTIN_SYSTEMS, load_systems
from orchestrator.attempt.model_run import HARNESS_ORACLE_FILE, harness_oracle_script
from orchestrator.campaign.spec import spec_from_args
from orchestrator.cells import Cell
from orchestrator.commands.validate import harness_systems
from orchestrator.errors import ConfigError, TaskError
from orchestrator.harness_oracle.control import harness_oracle_access
from orchestrator.model_access import ModelAccessError, load_model_access, parse_model_access

PILOT_DIR = REPO_ROOT / "campaigns" / "pilot-isolated"
PILOT_TASKS = {"requisition-approval-queue", "procure-to-pay-week", "payment-run", "mrp-planner-week",
               "month-end-close", "margin-bridge"}


def test_harness_oracle_is_a_third_kind_of_upstream() -> None:
    access = parse_model_access(harness_oracle_access(), "x")
    assert all(p.harness_oracle and p.is_fake and p.read_key() is None for p in access.providers.values())
    assert access.identity()["providers"]["anthropic"] == {"base_url": None, "models": ["fake-claude"],
                                                           "harness_oracle": True}
    real = parse_model_access({"providers": {"anthropic": {"base_url": "https://x", "models": ["m"]}}}, "x")
    assert "harness_oracle" not in real.identity()["providers"]["anthropic"]  # other identities unchanged
    for bad in ({"base_url": "https://x", "harness_oracle": True}, {"harness_oracle": False},
                {"harness_oracle": True, "key_env": "OPENAI_API_KEY"}):
        with pytest.raises(ModelAccessError):
            parse_model_access({"providers": {"openai": {**bad, "models": ["m"]}}}, "x")


def test_the_pilot_campaign_file_declares_the_pilot(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = spec_from_args(str(PILOT_DIR / "campaign.yaml"))
    cells = spec.cell_refs
    assert {c.task for c in cells} == PILOT_TASKS and {c.system for c in cells} == {"claude-code", "codex-high"}
    assert len(cells) == 12 and all(c.condition == "clean" and c.interface == "cli" for c in cells)
    assert spec.seeds == [0] and spec.reps == 5 and spec.backend == "docker"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    real = load_model_access(Path(spec.model_access or ""))
    assert {p: a.base_url for p, a in real.providers.items()} == {
        "anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}
    assert real.budget.max_tokens and real.budget.max_cost_usd
    keyless = load_model_access(PILOT_DIR / "model-access-harness-oracle.yaml")
    assert all(p.harness_oracle for p in keyless.providers.values())
    # The smoke run plays the same systems and models as the run with keys; only the upstream differs.
    systems = {**BUILTIN_SYSTEMS, **load_systems(Path(spec.systems or ""))}
    assert systems["codex-high"].limits.declared() == {"reasoning_effort": "high"}  # as the pilot ran Codex
    for name in ("claude-code", "codex-high"):
        model = systems[name].model
        assert model is not None
        assert keyless.model_for(model.provider, model.model) == real.model_for(model.provider, model.model)
        assert keyless.budget.max_tokens == real.budget.max_tokens


def test_validate_harness_systems(tmp_path: Path) -> None:
    assert harness_systems("claude-code, codex", None) == ["claude-code", "codex"]
    for bad in ("", "claude-code,claude-code", "oracle", "nobody"):
        with pytest.raises(ValueError, match="--harness-oracle"):
            harness_systems(bad, None)
    systems = tmp_path / "systems.yaml"
    systems.write_text("systems:\n  mine:\n    extends: claude-code\n    mounts: []\n  plain:\n    argv: [echo]\n")
    assert harness_systems("mine", systems) == ["mine"]
    with pytest.raises(ValueError, match="calls a model"):
        harness_systems("plain", systems)


def run_of(tmp_path: Path, cell: Cell, scenario_dir: Path) -> SimpleNamespace:
    (tmp_path / "attempt").mkdir(exist_ok=True)
    return SimpleNamespace(spec=SimpleNamespace(cell=cell, seed=0), scenario=SimpleNamespace(dir=scenario_dir),
                           paths=SimpleNamespace(root=tmp_path / "attempt"))


def test_an_attempt_takes_its_scenarios_conversation_or_refuses(tmp_path: Path) -> None:
    access = parse_model_access(harness_oracle_access(), "x")
    claude = BUILTIN_SYSTEMS["claude-code"]
    scen = tmp_path / "scenario"
    oracle = scen / "oracle-run"
    (oracle / "workspace").mkdir(parents=True)
    (oracle / "requests.jsonl").write_text(json.dumps({
        "turn": 1, "date": "2026-10-01", "method": "GET", "path": "/whoami", "query": {}, "idem_key": None,
        "status": 200, "outcome": "ok"}) + "\n")
    (oracle / "oracle.json").write_text(json.dumps({"canonical_db": "a" * 64, "files": [],
                                                    "turns": [{"n": 1, "date": "2026-10-01", "requests": 1}]}))
    run = run_of(tmp_path, Cell("claude-code", "payment-run"), scen)
    script = harness_oracle_script(run, access, claude)
    assert script is not None and b"erp get /whoami" in script
    assert (tmp_path / "attempt" / HARNESS_ORACLE_FILE).read_bytes() == script  # kept with the attempt
    with pytest.raises(ConfigError, match="condition"):  # the recording is of the clean run
        harness_oracle_script(run_of(tmp_path, Cell("claude-code", "payment-run", "lost-writes"), scen), access, claude)
    with pytest.raises(TaskError, match="no recorded oracle run"):
        harness_oracle_script(run_of(tmp_path, Cell("claude-code", "payment-run"), tmp_path / "none"), access, claude)
    real = parse_model_access({"providers": {"anthropic": {"base_url": "https://x", "models": ["m"]}}}, "x")
    assert harness_oracle_script(run, real, claude) is None


@pytest.mark.parametrize("extra,why", [
    (["--harness-oracle", "nobody"], "not a command system that calls a model"),
    (["--harness-oracle", "claude-code", "--faults", "lost-writes"], "on clean scenarios"),
    (["--systems", "x.yaml"], "only with --harness-oracle"),
])
def test_validate_refuses_bad_harness_oracle_input(extra: list[str], why: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    assert main(["validate", "--tasks", "payment-run", *extra]) == 2
    assert why in capsys.readouterr().err
