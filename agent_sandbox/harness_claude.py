"""The `claude-code` system: one non-interactive Claude Code session per turn.

    python -m agent_sandbox.harness_claude --prompt-file F --out-dir D [--bin claude]

Runs inside the agent container as the agent user (Claude Code refuses to skip permissions as
root). The turn's HOME is fresh and empty; this prepares it so the CLI never prompts (onboarding
done, the permission-bypass mode accepted, no auto-update), turns non-essential traffic off, and
runs

    claude -p PROMPT --output-format json --dangerously-skip-permissions \
        --disallowedTools WebSearch,WebFetch --model $PB_MODEL

with the workspace as its working directory, pointed at the model gateway through
ANTHROPIC_BASE_URL and the attempt's virtual key in ANTHROPIC_API_KEY (both set by the runtime).
Its JSON result goes to stdout (the turn's stdout.txt: the turn's transcript, and what the
`claude-json` usage extractor reads); the session's own log files are copied to
D/claude-session/ afterwards. Exit status: Claude Code's.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from agent_sandbox.adapter_limits import read_limits
from agent_sandbox.mcp_config import claude_mcp_args

REQUIRED_ENV = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "PB_MODEL", "HOME")
# Everything that is not the model call itself is switched off: no update checks, telemetry,
# error reports or feedback surveys go anywhere (they could not leave the attempt anyway).
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "NO_COLOR": "1",
}
EXIT_SETUP = 125
# Tools that reach outside the attempt through the provider (WebSearch is Anthropic's server-side
# web_search tool) or would try the network: never offered to the model. The gateway refuses
# provider-executed tools anyway (model_gateway.policy); this keeps an honest agent from
# tripping over it every turn.
DISALLOWED_TOOLS = ("WebSearch", "WebFetch")
# What this adapter always sets, whatever the system declares: recorded beside the declared
# limits on every turn (orchestrator/attempt/adapter_record.py).
FIXED_SETTINGS = {"permission_mode": "bypassPermissions", "output_format": "json"}
TOOLS_DENIED = DISALLOWED_TOOLS


def prepare_home(home: Path) -> None:
    """Write the files that keep Claude Code from asking anything on first start."""
    home.mkdir(parents=True, exist_ok=True)
    state = {"hasCompletedOnboarding": True, "bypassPermissionsModeAccepted": True, "numStartups": 1,
             "autoUpdates": False, "hasAcknowledgedCostThreshold": True}
    (home / ".claude.json").write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    settings_dir = home / ".claude"
    settings_dir.mkdir(exist_ok=True)
    settings = {"permissions": {"defaultMode": "bypassPermissions", "deny": list(DISALLOWED_TOOLS)},
                "includeCoAuthoredBy": False,
                "cleanupPeriodDays": 1}
    (settings_dir / "settings.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")


def claude_argv(binary: str, prompt: str, model: str, limits: dict[str, Any] | None = None) -> list[str]:
    """The one command line of a turn, with the declared limits (adapter_limits.py) applied."""
    limits = limits or {}
    denied = [*DISALLOWED_TOOLS, *(t for t in limits.get("tools_denied") or () if t not in DISALLOWED_TOOLS)]
    argv = [binary, "-p", prompt, "--output-format", "json", "--dangerously-skip-permissions",
            "--disallowedTools", ",".join(denied), "--model", model]
    if limits.get("tools_allowed") is not None:
        argv += ["--allowedTools", ",".join(limits["tools_allowed"])]
    if limits.get("max_turns") is not None:
        argv += ["--max-turns", str(int(limits["max_turns"]))]
    return argv


def limits_env(limits: dict[str, Any]) -> dict[str, str]:
    """The environment that carries a declared limit Claude Code reads from there."""
    if limits.get("max_output_tokens") is None:
        return {}
    return {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(int(limits["max_output_tokens"]))}


def copy_session_logs(home: Path, out_dir: Path) -> None:
    """Claude Code's own JSONL logs of the session (~/.claude/projects/...) into the output folder."""
    projects = home / ".claude" / "projects"
    if not projects.is_dir():
        return
    dest = out_dir / "claude-session"
    for path in sorted(projects.rglob("*.jsonl")):
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / path.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness_claude", description="one Claude Code session for one turn")
    parser.add_argument("--prompt-file", required=True, type=Path)
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--bin", default="claude", help="the claude binary (default: claude on PATH)")
    args = parser.parse_args(argv)
    missing = [name for name in REQUIRED_ENV if not os.environ.get(name)]
    if missing:
        print(f"harness_claude: environment lacks {', '.join(missing)} (the runtime sets them when the "
              "system declares a model)", file=sys.stderr)
        return EXIT_SETUP
    if os.geteuid() == 0 and os.environ.get("IS_SANDBOX") != "1":
        print("harness_claude: refusing to run as root (Claude Code will not skip permissions as root)", file=sys.stderr)
        return EXIT_SETUP
    try:
        prompt = args.prompt_file.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"harness_claude: cannot read the prompt: {exc}", file=sys.stderr)
        return EXIT_SETUP
    try:
        limits = read_limits()
    except ValueError as exc:
        print(f"harness_claude: {exc}", file=sys.stderr)
        return EXIT_SETUP
    home = Path(os.environ["HOME"])
    prepare_home(home)
    env = dict(os.environ, **QUIET_ENV, **limits_env(limits))
    binary = shutil.which(args.bin) or args.bin
    argv = claude_argv(binary, prompt, env["PB_MODEL"], limits) + claude_mcp_args(home, env)  # an mcp cell's MCP server
    try:
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        print(f"harness_claude: {args.bin} not found (use the agent-claude image)", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: FrameType | None) -> None:
        proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = proc.wait()
    copy_session_logs(home, args.out_dir)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
