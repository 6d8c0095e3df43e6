"""docs/exit-codes.md is the table of every command's exit codes; each command keeps to it.

Every command is run as the operator runs it (the `orchestrate` script, a subprocess) with
DOCKER_HOST pointing at a socket nobody listens on: those that need the engine print one line
and exit with the engine_unavailable code, never a traceback and never 1 (agent_error); those
that do not need it behave as documented.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT

from orchestrator.exit_codes import COMMANDS, Failure, failure_for, parse_table, render_table

REPO = REPO_ROOT
DOC = REPO / "docs" / "exit-codes.md"


def test_the_docs_table_is_the_mapping():
    documented = parse_table(DOC.read_text())
    expected = parse_table(render_table())
    assert documented == expected
    assert set(documented) == {c.command for c in COMMANDS}
    # one code per class, whatever the command
    codes: dict[str, set[int]] = {}
    for pairs in documented.values():
        for code, name in pairs:
            codes.setdefault(name, set()).add(code)
    assert all(len(v) == 1 for v in codes.values()), codes
    assert codes["engine_unavailable"] == {3} and codes["agent_error"] == {1}


def test_every_registered_command_is_in_the_table():
    from orchestrator.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    names = set(sub.choices)  # type: ignore[arg-type]
    tabled = {c.command.split()[0] for c in COMMANDS}
    assert names == tabled


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture
def dead_engine(tmp_path: Path) -> dict[str, str]:
    sock = tmp_path / "nobody.sock"  # never created: nobody listens
    env = {k: v for k, v in os.environ.items() if k not in ("PB_TRACEBACK",)}
    env["DOCKER_HOST"] = f"unix://{sock}"
    env["PYTHONPATH"] = str(REPO)
    return env


@pytest.mark.parametrize("entry", COMMANDS, ids=[c.command for c in COMMANDS])
def test_each_command_against_a_dead_engine(entry, dead_engine, tmp_path):
    argv = entry.command.split() + [a.replace("{tmp}", str(tmp_path)) for a in entry.probe_args]
    proc = _run(argv, dead_engine, tmp_path)
    documented = dict((name, code) for code, name in parse_table(DOC.read_text())[entry.command])
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in documented.values(), (proc.returncode, proc.stderr)
    if entry.engine == "no":
        # needs no engine: the probe (a label or task that does not exist) is plain bad input
        assert proc.returncode == documented["bad_input"] == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        return
    assert proc.returncode == documented["engine_unavailable"] == 3, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "engine_unavailable" in ln]
    assert len(lines) == 1, proc.stderr
    assert str(tmp_path / "nobody.sock") in lines[0]
    assert proc.stderr.strip().splitlines()[-1] == lines[0]
    # nothing was declared or recorded for a run that could not start
    assert not list((tmp_path / "runs").rglob("*.json")) if (tmp_path / "runs").exists() else True


def test_failure_classes_of_typical_exceptions():
    from orchestrator.errors import ConfigError

    assert failure_for(ConfigError("bad")).failure is Failure.BAD_INPUT
    assert failure_for(KeyboardInterrupt()).code == 130
    bug = failure_for(ZeroDivisionError("x"))
    assert bug.failure is Failure.INFRA_ERROR and bug.code == 3 and "\n" not in bug.message

    from orchestrator.scenarios.folder import ScenarioError

    assert failure_for(ScenarioError("projection run_payments: no such column")).code == 4

    class LooksLikeOne(RuntimeError):  # a name is not a class: only a declared exit class counts
        pass

    LooksLikeOne.__name__ = "ScenarioError"
    assert failure_for(LooksLikeOne("x")).failure is Failure.INFRA_ERROR


def test_each_error_class_carries_its_exit_class():
    """The classes that end commands declare their class themselves (no name matching), the
    packages that may not import the orchestrator included; a cause down the chain counts, and a
    task error wins over bad input."""
    from agent_sandbox.systems import SystemsFileError
    from erp_service.faults import FaultSpecError
    from orchestrator.campaign.declaration import DeclarationChanged
    from orchestrator.campaign.spec import CampaignSpecError
    from orchestrator.cells import CellError
    from orchestrator.errors import ConfigError, TaskError
    from orchestrator.images.model import ImageBuildError
    from orchestrator.scenarios.folder import ScenarioError
    from tasks.packs import PackError

    expected = {CellError: Failure.BAD_INPUT, CampaignSpecError: Failure.BAD_INPUT, PackError: Failure.BAD_INPUT,
                SystemsFileError: Failure.BAD_INPUT, FaultSpecError: Failure.BAD_INPUT,
                DeclarationChanged: Failure.BAD_INPUT, ConfigError: Failure.BAD_INPUT,
                ScenarioError: Failure.TASK_ERROR, TaskError: Failure.TASK_ERROR, ImageBuildError: Failure.INFRA_ERROR}
    for cls, failure in expected.items():
        assert failure_for(cls("what went wrong")).failure is failure, cls
    assert failure_for(ImageBuildError("no base")).message == "image build failed: no base"
    wrapped = RuntimeError("while building the scenario")
    wrapped.__cause__ = PackError("task.yaml: bad field")
    assert failure_for(wrapped).failure is Failure.BAD_INPUT
    both = PackError("bad")
    both.__cause__ = TaskError("projection failed")
    assert failure_for(both).failure is Failure.TASK_ERROR


def test_the_docs_class_table_gives_each_class_its_code():
    import re

    rows = re.findall(r"^\| (\d+) \| `([a-z_]+)` \|", DOC.read_text(), flags=re.M)
    assert {name: int(code) for code, name in rows} == {f.value: int(f.code) for f in Failure}
