"""A stand-in harness for fast local tests: runs the shell commands of a fake-provider script.

    python script_shell.py --script SCRIPT.json --prompt-file {prompt_file}

A command system for the local backend (no model, no CLI): for the turn it is started for (read
from context.json beside the prompt), it runs, with bash in its working directory (the
workspace), every tool call of that turn's steps in order, as a real harness would run them from
its shell tool (Claude Code's `Bash` `command`, Codex's `exec_command` `cmd`). A turn's steps end
at a text-only step, as the harness's session does. It proves what the script makes the shell
do; the real CLIs are tested in containers.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def turn_steps(script: dict[str, Any], turn: int) -> list[dict[str, Any]]:
    """The steps of turn `turn` (from 1): the `turn`-th run of tool steps ended by a text-only one."""
    turns: list[list[dict[str, Any]]] = [[]]
    for step in script.get("steps") or []:
        turns[-1].append(step)
        if not any(b.get("type") == "tool_use" for b in step.get("content") or []):
            turns.append([])
    return turns[turn - 1] if turn - 1 < len(turns) else []


def command_of(block: dict[str, Any]) -> str:
    """The shell command of a tool_use block (Bash or exec_command)."""
    args = block.get("input") or {}
    return str(args.get("command") if block.get("name") == "Bash" else args.get("cmd"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True, type=Path)
    parser.add_argument("--prompt-file", required=True, type=Path)
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8"))
    turn = int(json.loads((args.prompt_file.parent / "context.json").read_text(encoding="utf-8"))["turn"])
    for step in turn_steps(script, turn):
        for block in step.get("content") or []:
            if block.get("type") == "tool_use":
                done = subprocess.run(["bash", "-c", command_of(block)], check=False)
                print(f"script_shell: turn {turn}: exit {done.returncode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
