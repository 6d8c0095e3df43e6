"""The turn entrypoint's own behaviour that needs no ERP: setup errors, exit codes, budget, signals.

Turns that talk to a running ERP (a command system calling `erp`, a policy module using the
client) are in test_agent_cli.py next to the live server fixture.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PY = sys.executable


def make_turn(tmp_path: Path, system: dict, *, budget_s: float = 30, prompt: str = "hello\n") -> tuple[Path, dict[str, str]]:
    turn = tmp_path / "turn"
    ws = tmp_path / "ws"
    (ws / "handbook").mkdir(parents=True)
    turn.mkdir()
    (turn / "prompt.txt").write_text(prompt)
    (turn / "system.json").write_text(json.dumps(system))
    (turn / "context.json").write_text(json.dumps({"turn": 1, "date": "2026-10-05", "agent_user": "dana", "budget_s": budget_s}))
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "WORKSPACE": str(ws),
        # Nothing listens here; these turns never call the ERP.
        "ERP_URL": "http://127.0.0.1:9",
        "ERP_TOKEN": "tok-unused",
        "TURN_BUDGET_S": str(budget_s),
    }
    return turn, env


def run_turn(turn: Path, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "agent_sandbox.turn", "--turn-dir", str(turn)], env=env, timeout=timeout, capture_output=True, text=True)


def out(turn: Path, name: str) -> str:
    return (turn / "out" / name).read_text()


def test_command_exit_code_outputs_and_cwd(tmp_path: Path) -> None:
    script = 'echo "cwd=$(pwd)"; echo "prompt=$(cat "$1")"; echo "budget=$2 env=$X_SET"; echo oops >&2; exit 3'
    turn, env = make_turn(tmp_path, {"kind": "command", "name": "t", "argv": ["sh", "-c", script, "t", "{prompt_file}", "{budget_s}"], "env": {"X_SET": "yes"}})
    proc = run_turn(turn, env)
    assert proc.returncode == 3, proc.stderr
    stdout = out(turn, "stdout.txt")
    assert f"cwd={tmp_path / 'ws'}" in stdout and "prompt=hello" in stdout and "budget=30 env=yes" in stdout
    assert out(turn, "stderr.txt") == "oops\n"
    assert json.loads(out(turn, "usage.json")) == {}
    record = json.loads(out(turn, "turn.json"))
    assert record["exit_code"] == 3 and record["timed_out"] is False and record["system"] == "t"
    assert not (turn / "out" / "traceback.txt").exists()


def test_missing_program_is_127(tmp_path: Path) -> None:
    turn, env = make_turn(tmp_path, {"kind": "command", "name": "t", "argv": ["no-such-agent-cli-xyz"]})
    assert run_turn(turn, env).returncode == 127
    assert "program not found: no-such-agent-cli-xyz" in out(turn, "stderr.txt")


def test_budget_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    # A background child that would write the marker later must die with the session.
    script = f'(sleep 4; touch "{marker}") & sleep 60'
    turn, env = make_turn(tmp_path, {"kind": "command", "name": "t", "argv": ["sh", "-c", script]}, budget_s=1)
    started = time.monotonic()
    proc = run_turn(turn, env)
    assert proc.returncode == 124
    assert time.monotonic() - started < 20
    assert json.loads(out(turn, "turn.json"))["timed_out"] is True
    time.sleep(4.5)
    assert not marker.exists()


def test_sigterm_is_forwarded(tmp_path: Path) -> None:
    script = 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done'
    turn, env = make_turn(tmp_path, {"kind": "command", "name": "t", "argv": ["sh", "-c", script]})
    proc = subprocess.Popen([PY, "-m", "agent_sandbox.turn", "--turn-dir", str(turn)], env=env)
    try:
        stdout_file = turn / "out" / "stdout.txt"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (stdout_file.exists() and "ready" in stdout_file.read_text()):
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 7
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "got-term" in out(turn, "stdout.txt")
    assert json.loads(out(turn, "turn.json"))["signal"] == signal.SIGTERM


@pytest.mark.parametrize(
    ("system", "files", "message"),
    [
        ({"kind": "robot", "name": "x"}, {}, "kind must be 'command' or 'policy'"),
        ({"kind": "command", "name": "x", "argv": "sh"}, {}, "argv must be a non-empty list"),
        ({"kind": "command", "name": "x", "argv": ["sh", "{nope}"]}, {}, "unknown placeholder {nope}"),
        ({"kind": "policy", "name": "oracle", "module": "/nonexistent/policies.py"}, {}, "does not exist"),
        ({"kind": "policy", "name": "oracle", "module": "MOD"}, {"MOD": "X = 1\n"}, "has no POLICIES dict"),
        ({"kind": "policy", "name": "neg:foo", "module": "MOD"}, {"MOD": "POLICIES = {'oracle': print}\n"}, "it has: oracle"),
    ],
)
def test_setup_errors_are_125_with_a_message(tmp_path: Path, system: dict, files: dict, message: str) -> None:
    for text in files.values():
        path = tmp_path / "policies.py"
        path.write_text(text)
        system = {**system, "module": str(path)}
    turn, env = make_turn(tmp_path, system)
    assert run_turn(turn, env).returncode == 125
    assert message in out(turn, "traceback.txt")
    assert json.loads(out(turn, "usage.json")) == {}


def test_missing_turn_files_and_env(tmp_path: Path) -> None:
    turn, env = make_turn(tmp_path, {"kind": "command", "name": "t", "argv": ["true"]})
    (turn / "context.json").unlink()
    assert run_turn(turn, env).returncode == 125
    assert "context.json is missing" in out(turn, "traceback.txt")
    turn2, env2 = make_turn(tmp_path / "b", {"kind": "command", "name": "t", "argv": ["true"]})
    del env2["ERP_TOKEN"]
    assert run_turn(turn2, env2).returncode == 125
    assert "ERP_TOKEN is not set" in out(turn2, "traceback.txt")


def test_null_policy_needs_no_module_and_no_request(tmp_path: Path) -> None:
    turn, env = make_turn(tmp_path, {"kind": "policy", "name": "null"})
    assert run_turn(turn, env).returncode == 0
    assert json.loads(out(turn, "usage.json")) == {"requests": 0}


def test_policy_budget_and_exception(tmp_path: Path) -> None:
    module = tmp_path / "policies.py"
    module.write_text(
        "import time\n"
        "def slow(turn, client, workspace, context):\n"
        "    try:\n"
        "        time.sleep(30)\n"
        "    except Exception:\n"
        "        pass  # a policy's broad except must not swallow the budget\n"
        "def boom(turn, client, workspace, context):\n"
        "    print('before', turn, workspace.name, context['date'])\n"
        "    raise RuntimeError('policy bug')\n"
        "POLICIES = {'oracle': slow, 'neg:boom': boom}\n"
    )
    turn, env = make_turn(tmp_path / "a", {"kind": "policy", "name": "oracle", "module": str(module)}, budget_s=1)
    assert run_turn(turn, env).returncode == 124
    assert "TurnTimeout" in out(turn, "traceback.txt")
    turn2, env2 = make_turn(tmp_path / "b", {"kind": "policy", "name": "neg:boom", "module": str(module)})
    assert run_turn(turn2, env2).returncode == 1
    assert "RuntimeError: policy bug" in out(turn2, "traceback.txt")
    assert out(turn2, "stdout.txt") == "before 1 ws 2026-10-05\n"
