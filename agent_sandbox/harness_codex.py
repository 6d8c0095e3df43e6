"""The `codex` system: one non-interactive Codex CLI session per turn.

    python -m agent_sandbox.harness_codex --prompt-file F --out-dir D [--bin codex]

Runs in the `agent-codex` image (the `codex` binary of the pinned `openai-codex-cli-bin` wheel,
orchestrator/images), or any image or mount a systems file gives. This prepares the turn's fresh
HOME with a `~/.codex/config.toml` whose only model provider is the attempt's gateway, on the
Responses wire API, with approvals off, no sandbox of its own (the container is the sandbox), web
search off (Codex 0.163 offers the model the provider's hosted `web_search` tool by default, which
the gateway refuses: model_gateway.policy), and everything that is not the model call switched
off: update checks, analytics, feedback uploads, OpenTelemetry export (none could leave the
attempt anyway; off, they do not even try):

    [model_providers.pb-gateway]
    base_url = "$OPENAI_BASE_URL"        # http://model-gateway:8080/v1, set by the runtime
    env_key = "OPENAI_API_KEY"           # the attempt's virtual key, set by the runtime
    wire_api = "responses"

then runs `codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
--model $PB_MODEL PROMPT` in the workspace; its JSON lines go to stdout (the turn's transcript,
read by the `codex-jsonl` usage extractor). Exit status: Codex's.
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
from agent_sandbox.mcp_config import codex_mcp_toml, toml_string

REQUIRED_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PB_MODEL", "HOME")
PROVIDER_ID = "pb-gateway"
EXIT_SETUP = 125
# What this adapter always sets, whatever the system declares: recorded beside the declared
# limits on every turn (orchestrator/attempt/adapter_record.py).
FIXED_SETTINGS = {"approval_policy": "never", "sandbox_mode": "danger-full-access", "web_search": "disabled",
                  "request_max_retries": 2, "stream_max_retries": 2, "wire_api": "responses"}
TOOLS_DENIED = ("web_search",)  # the provider's hosted search, refused by the gateway anyway
# Codex's warning, as an `error` item of its JSON stream, when the model's name is not in its
# catalogue: it then runs with generic metadata (context window, tool shapes, reasoning summaries).
FALLBACK_METADATA = "Defaulting to fallback metadata"


def codex_config(base_url: str, model: str, limits: dict[str, Any] | None = None) -> str:
    """The config.toml of a turn: the gateway as the only provider, the declared limits applied."""
    effort = (limits or {}).get("reasoning_effort")
    return "\n".join([
        f"model = {toml_string(model)}",
        *([f"model_reasoning_effort = {toml_string(effort)}"] if effort else []),
        f"model_provider = {toml_string(PROVIDER_ID)}",
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        "check_for_update_on_startup = false",
        'web_search = "disabled"',
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[feedback]",
        "enabled = false",
        "",
        "[otel]",
        'exporter = "none"',
        "log_user_prompt = false",
        "",
        f"[model_providers.{PROVIDER_ID}]",
        'name = "process-bench model gateway"',
        f"base_url = {toml_string(base_url)}",
        'env_key = "OPENAI_API_KEY"',
        'wire_api = "responses"',
        "request_max_retries = 2",
        "stream_max_retries = 2",
        "",
    ])


def codex_argv(binary: str, prompt: str, model: str) -> list[str]:
    """The one command line of a turn."""
    return [binary, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
            "--model", model, prompt]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness_codex", description="one Codex CLI session for one turn")
    parser.add_argument("--prompt-file", required=True, type=Path)
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--bin", default="codex", help="the codex binary (default: codex on PATH)")
    args = parser.parse_args(argv)
    missing = [name for name in REQUIRED_ENV if not os.environ.get(name)]
    if missing:
        print(f"harness_codex: environment lacks {', '.join(missing)}", file=sys.stderr)
        return EXIT_SETUP
    try:
        prompt = args.prompt_file.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"harness_codex: cannot read the prompt: {exc}", file=sys.stderr)
        return EXIT_SETUP
    try:
        limits = read_limits()
    except ValueError as exc:
        print(f"harness_codex: {exc}", file=sys.stderr)
        return EXIT_SETUP
    home = Path(os.environ["HOME"])
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = codex_config(os.environ["OPENAI_BASE_URL"], os.environ["PB_MODEL"], limits) + codex_mcp_toml(os.environ)  # mcp cells
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    env = dict(os.environ, CODEX_HOME=str(codex_home), NO_COLOR="1")
    binary = shutil.which(args.bin) or args.bin
    try:
        proc = subprocess.Popen(codex_argv(binary, prompt, env["PB_MODEL"]), env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        print(f"harness_codex: {args.bin} not found (use the agent-codex image, or give the binary through "
              "the system's image or mounts)", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: FrameType | None) -> None:
        proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = proc.wait()
    return code if code >= 0 else 128 - code


def fallback_metadata_notes(stdout: Path) -> list[str]:
    """Codex's model-metadata warnings in a turn's JSON stream (read on the host): Codex did not
    know the model's name and ran with its generic fallback metadata."""
    notes: list[str] = []
    try:
        lines = stdout.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return notes
    for line in lines:
        if FALLBACK_METADATA not in line:
            continue
        try:
            item = json.loads(line).get("item") or {}
        except (ValueError, AttributeError):
            continue
        message = item.get("message") if isinstance(item, dict) else None
        if isinstance(message, str) and FALLBACK_METADATA in message and message not in notes:
            notes.append(message[:300])
    return notes


if __name__ == "__main__":
    sys.exit(main())
