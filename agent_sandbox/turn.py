"""One turn of one attempt, for any system: `python -m agent_sandbox.turn --turn-dir DIR`.

Inputs (contracts §8): DIR/prompt.txt, DIR/system.json, DIR/context.json and the environment
(ERP_URL, ERP_TOKEN, HOME, WORKSPACE, TURN_BUDGET_S). Outputs in DIR/out/: stdout.txt,
stderr.txt, usage.json, turn.json, and traceback.txt when something raised.

- A command system runs as its own process group with the workspace as working directory;
  the budget is enforced (SIGTERM to the group at the budget, SIGKILL 10 s later) and a
  SIGTERM/SIGINT sent to this entrypoint is forwarded to the group (SIGKILL 1 s later).
- A scripted policy is loaded from the task's module by file path and called in-process as
  `policy(turn, client, workspace, context)` with an `ErpClient` holding the agent's token.

Exit status: the system's own (a policy that raises -> 1); 124 when the budget ran out;
128+N when killed by signal N; 125 when the turn could not be started (bad turn directory,
missing environment: the message is in out/traceback.txt). A missing program gives 127.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from agent_sandbox.argv_template import render_argv
from agent_sandbox.client import ErpClient
from agent_sandbox.provider_wait import extended_deadline, provider_wait_s
from agent_sandbox.usage import extract_usage

EXIT_TIMEOUT = 124
EXIT_SETUP = 125
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127
KILL_GRACE_S = 10.0  # at the budget: SIGTERM to the session, SIGKILL this much later
SIGNAL_GRACE_S = 1.0  # when the entrypoint itself is told to stop
DEFAULT_BUDGET_S = 1200.0

Policy = Callable[[int, ErpClient, Path, dict[str, Any]], None]


class TurnSetupError(Exception):
    """The turn directory or environment is unusable; nothing was run."""


class TurnTimeout(BaseException):
    """Raised inside a policy when the budget runs out (BaseException: `except Exception` won't eat it)."""


class TurnTerminated(BaseException):
    """Raised inside a policy when the entrypoint is asked to stop."""


# -- inputs -------------------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object file, or TurnSetupError naming it."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TurnSetupError(f"{path} is missing") from None
    except (OSError, ValueError) as exc:
        raise TurnSetupError(f"{path} is not readable JSON: {exc}") from None
    if not isinstance(value, dict):
        raise TurnSetupError(f"{path} must hold a JSON object")
    return value


def need_env(name: str) -> str:
    """A required environment variable."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise TurnSetupError(f"environment variable {name} is not set")
    return value


def budget_seconds(context: dict[str, Any]) -> float:
    """TURN_BUDGET_S, else context.json's budget_s, else 1200 s."""
    raw = os.environ.get("TURN_BUDGET_S") or context.get("budget_s") or DEFAULT_BUDGET_S
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise TurnSetupError(f"turn budget is not a number of seconds: {raw!r}") from None
    if value <= 0:
        raise TurnSetupError(f"turn budget must be positive: {raw!r}")
    return value


# -- signals ------------------------------------------------------------------------------------


class StopFlag:
    """Records SIGTERM/SIGINT so the running system can be stopped in an orderly way."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.raise_in_policy = False

    def handler(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        if self.raise_in_policy:
            self.raise_in_policy = False
            raise TurnTerminated(f"stopped by signal {signum}")

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self.handler)
        signal.signal(signal.SIGINT, self.handler)


def exit_code_of(returncode: int) -> int:
    """Popen's negative `-N` for a signal becomes the shell's 128+N."""
    return 128 - returncode if returncode < 0 else returncode


# -- command systems ----------------------------------------------------------------------------


def erp_on_path(env: dict[str, str], spare_dir: Path) -> None:
    """Make sure `erp` resolves in the child's PATH (the image installs it; locally we may not have)."""
    path = env.get("PATH", os.defpath)
    if shutil.which("erp", path=path):
        return
    sibling = Path(sys.executable).parent / "erp"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        env["PATH"] = f"{sibling.parent}{os.pathsep}{path}"
        return
    spare_dir.mkdir(parents=True, exist_ok=True)
    shim = spare_dir / "erp"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agent_sandbox.erp_cli "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env["PATH"] = f"{spare_dir}{os.pathsep}{path}"


def kill_group(pgid: int, sig: int) -> None:
    """Signal a whole process group, ignoring one that is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_command(turn_dir: Path, system: dict[str, Any], context: dict[str, Any], stop: StopFlag) -> tuple[int, bool, dict[str, Any]]:
    """Run a command system; return (exit code, timed out, usage)."""
    argv = system.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(w, str) for w in argv):
        raise TurnSetupError("system.json: argv must be a non-empty list of strings")
    extra_env = system.get("env") or {}
    if not isinstance(extra_env, dict):
        raise TurnSetupError("system.json: env must be an object of name -> value")
    prompt_file = turn_dir / "prompt.txt"
    if not prompt_file.is_file():
        raise TurnSetupError(f"{prompt_file} is missing")
    workspace = Path(need_env("WORKSPACE"))
    if not workspace.is_dir():
        raise TurnSetupError(f"WORKSPACE {workspace} is not a folder")
    need_env("ERP_URL")
    need_env("ERP_TOKEN")
    budget = budget_seconds(context)
    out_dir = turn_dir / "out"
    try:
        words = render_argv(argv, {"prompt_file": prompt_file, "workspace": workspace, "out_dir": out_dir, "budget_s": f"{budget:g}"})
    except ValueError as exc:
        raise TurnSetupError(f"system.json: argv: {exc}") from None
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in extra_env.items()})
    env["TURN_BUDGET_S"] = f"{budget:g}"
    erp_on_path(env, turn_dir / "bin")

    usage_name = system.get("usage")
    with open(out_dir / "stdout.txt", "wb") as out, open(out_dir / "stderr.txt", "wb") as err:
        try:
            proc = subprocess.Popen(
                words, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
            )
        except FileNotFoundError:
            err.write(f"turn: program not found: {words[0]}\n".encode())
            return EXIT_NOT_FOUND, False, {}
        except PermissionError:
            err.write(f"turn: program not executable: {words[0]}\n".encode())
            return EXIT_NOT_EXECUTABLE, False, {}
        started = time.monotonic()
        deadline = started + budget
        timed_out = False
        kill_at: float | None = None
        while True:
            try:
                returncode = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if kill_at is None and now >= deadline and stop.signum is None:
                # Time spent waiting for the model provider's capacity is not the agent's.
                deadline = max(deadline, extended_deadline(started, budget, provider_wait_s()))
            if kill_at is None and (now >= deadline or stop.signum is not None):
                timed_out = stop.signum is None
                kill_group(proc.pid, signal.SIGTERM)
                # Whoever signalled us kills us soon after (the local backend: 2 s), and the
                # session would outlive us: keep its grace shorter than ours.
                kill_at = now + (KILL_GRACE_S if timed_out else SIGNAL_GRACE_S)
            elif kill_at is not None and now >= kill_at:
                kill_group(proc.pid, signal.SIGKILL)
        # Background processes the session left behind must not outlive the turn.
        kill_group(proc.pid, signal.SIGKILL)
    code = EXIT_TIMEOUT if timed_out else exit_code_of(returncode)
    try:
        usage = extract_usage(usage_name, out_dir)
    except Exception as exc:  # a broken report must not lose the turn's exit status
        with open(out_dir / "stderr.txt", "a", encoding="utf-8") as err_text:
            err_text.write(f"turn: usage extractor {usage_name!r} failed: {exc}\n")
        usage = {}
    return code, timed_out, usage


# -- scripted policies --------------------------------------------------------------------------


def load_module(path: Path) -> ModuleType:
    """Import a Python file by path under a name derived from its path."""
    if not path.is_file():
        raise TurnSetupError(f"policy module {path} does not exist")
    name = "bb_policies_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TurnSetupError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module


def null_policy(turn: int, client: ErpClient, workspace: Path, context: dict[str, Any]) -> None:
    """The built-in `null` policy: does nothing (the floor every task must fail)."""


def find_policy(system: dict[str, Any]) -> Policy:
    """The callable for system.json's policy name (`null` is built in)."""
    name = system.get("name")
    if not isinstance(name, str) or not name:
        raise TurnSetupError("system.json: policy name is missing")
    module_path = system.get("module")
    policies: dict[str, Any] = {}
    if module_path:
        module = load_module(Path(module_path))
        policies = getattr(module, "POLICIES", None)  # type: ignore[assignment]
        if not isinstance(policies, dict):
            raise TurnSetupError(f"{module_path} has no POLICIES dict")
    candidates = [name]
    if name.startswith("neg:"):
        candidates.append(name[4:])  # accept packs that key negative controls by bare name
    for cand in candidates:
        if cand in policies:
            fn = policies[cand]
            if not callable(fn):
                raise TurnSetupError(f"POLICIES[{cand!r}] in {module_path} is not callable")
            return fn
    if name == "null":
        return null_policy
    known = ", ".join(sorted(map(str, policies))) or "none"
    raise TurnSetupError(f"policy {name!r} is not in POLICIES of {module_path or '(no module)'}; it has: {known}")


def run_policy(turn_dir: Path, system: dict[str, Any], context: dict[str, Any], stop: StopFlag) -> tuple[int, bool, dict[str, Any]]:
    """Run a scripted policy in-process; return (exit code, timed out, usage)."""
    workspace = Path(need_env("WORKSPACE"))
    if not workspace.is_dir():
        raise TurnSetupError(f"WORKSPACE {workspace} is not a folder")
    url, token = need_env("ERP_URL"), need_env("ERP_TOKEN")
    budget = budget_seconds(context)
    turn_n = context.get("turn")
    if not isinstance(turn_n, int):
        raise TurnSetupError("context.json: turn must be an integer")
    policy = find_policy(system)
    out_dir = turn_dir / "out"
    client = _policy_client(system, url, token)
    code, timed_out = 0, False

    def on_alarm(_signum: int, _frame: FrameType | None) -> None:
        raise TurnTimeout(f"turn budget of {budget:g} s ran out")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    old_cwd = os.getcwd()
    with open(out_dir / "stdout.txt", "w", encoding="utf-8") as out, open(out_dir / "stderr.txt", "w", encoding="utf-8") as err:
        try:
            os.chdir(workspace)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                stop.raise_in_policy = True
                signal.setitimer(signal.ITIMER_REAL, budget)
                try:
                    policy(turn_n, client, workspace, dict(context))
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    stop.raise_in_policy = False
        except TurnTimeout:
            code, timed_out = EXIT_TIMEOUT, True
            write_traceback(out_dir, err)
        except TurnTerminated:
            code = 128 + (stop.signum or signal.SIGTERM)
            write_traceback(out_dir, err)
        except Exception:
            code = 1
            write_traceback(out_dir, err)
        finally:
            signal.signal(signal.SIGALRM, previous)
            os.chdir(old_cwd)
            client.close()
    return code, timed_out, {"requests": client.request_count}


def _policy_client(system: dict[str, Any], url: str, token: str) -> ErpClient:
    """The policy's client: plain HTTP, or every call a tool of the MCP server (`interface: mcp`)."""
    if system.get("interface") != "mcp":
        return ErpClient(url, token)
    # Imported here so that only MCP cells load the MCP SDK (and pydantic) into the turn.
    from agent_sandbox.mcp_client import McpError, mcp_erp_client

    try:
        return mcp_erp_client(url, need_env("ERP_MCP_URL"), token)
    except McpError as exc:
        raise TurnSetupError(str(exc)) from exc


def write_traceback(out_dir: Path, also: Any = None) -> None:
    """The current exception's traceback to out/traceback.txt (and to `also`)."""
    text = traceback.format_exc()
    (out_dir / "traceback.txt").write_text(text, encoding="utf-8")
    if also is not None:
        also.write(text)


# -- entry point --------------------------------------------------------------------------------


def run_turn(turn_dir: Path) -> int:
    """Run the turn described by `turn_dir`; write its outputs; return the exit status."""
    out_dir = turn_dir / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    stop = StopFlag()
    stop.install()
    started = time.monotonic()
    kind = name = None
    timed_out = False
    usage: dict[str, Any] = {}
    try:
        system = read_json(turn_dir / "system.json")
        context = read_json(turn_dir / "context.json")
        kind, name = system.get("kind"), system.get("name")
        if kind == "command":
            code, timed_out, usage = run_command(turn_dir, system, context, stop)
        elif kind == "policy":
            code, timed_out, usage = run_policy(turn_dir, system, context, stop)
        else:
            raise TurnSetupError(f"system.json: kind must be 'command' or 'policy', got {kind!r}")
    except TurnSetupError as exc:
        code = EXIT_SETUP
        (out_dir / "traceback.txt").write_text(f"turn setup error: {exc}\n", encoding="utf-8")
        with open(out_dir / "stderr.txt", "a", encoding="utf-8") as err:
            err.write(f"turn: {exc}\n")
    except Exception:
        code = EXIT_SETUP
        write_traceback(out_dir)
    for name_ in ("stdout.txt", "stderr.txt"):
        (out_dir / name_).touch()
    (out_dir / "usage.json").write_text(json.dumps(usage, sort_keys=True) + "\n", encoding="utf-8")
    record = {
        "kind": kind,
        "system": name,
        "exit_code": code,
        "timed_out": timed_out,
        "signal": stop.signum,
        "wall_s": round(time.monotonic() - started, 3),
    }
    (out_dir / "turn.json").write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")
    return code


def main(argv: list[str] | None = None) -> None:
    """`python -m agent_sandbox.turn --turn-dir DIR`."""
    parser = argparse.ArgumentParser(prog="python -m agent_sandbox.turn", description="Run one agent turn (contracts §8).")
    parser.add_argument("--turn-dir", required=True, type=Path, help="folder with prompt.txt, system.json, context.json")
    args = parser.parse_args(argv)
    if not args.turn_dir.is_dir():
        parser.error(f"--turn-dir {args.turn_dir} is not a folder")
    raise SystemExit(run_turn(args.turn_dir.resolve()))


if __name__ == "__main__":
    main()
