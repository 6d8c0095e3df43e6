"""The limits a harness adapter applies to its agent CLI, as declared and as handed to a turn.

A systems file entry may declare them (`limits:`, see agent_sandbox/systems.py), e.g. the pilot's
Codex at high effort:

    systems:
      codex-high:
        extends: codex
        limits: {reasoning_effort: high}

The runtime hands the declared limits to the turn as one JSON object in `PB_ADAPTER_LIMITS`;
the harness applies each one it knows (`read_limits`). Which harness can apply which limit is
`SUPPORTED`: a system declaring a limit its harness cannot apply is refused when the systems
file is loaded, so a recorded limit is always one that was applied.

Standard library only: the harnesses run in the agent image.
"""
from __future__ import annotations

import json
import os
from typing import Any

LIMITS_ENV = "PB_ADAPTER_LIMITS"
# Every limit a system may declare, with what it means.
LIMIT_NAMES = {
    "reasoning_effort": "the model's reasoning effort (Codex: model_reasoning_effort)",
    "max_turns": "agentic turns (model calls with tool use) per session (Claude Code: --max-turns)",
    "max_output_tokens": "output tokens per model call (Claude Code: CLAUDE_CODE_MAX_OUTPUT_TOKENS)",
    "tools_allowed": "the only tools the CLI may use (Claude Code: --allowedTools)",
    "tools_denied": "tools the CLI may not use, beside the harness's own denials (Claude Code: --disallowedTools)",
}
# The harness module (argv `python -m MODULE ...`) -> the limits it applies.
SUPPORTED: dict[str, frozenset[str]] = {
    "agent_sandbox.harness_codex": frozenset({"reasoning_effort"}),
    "agent_sandbox.harness_claude": frozenset({"max_turns", "max_output_tokens", "tools_allowed", "tools_denied"}),
}


def harness_module(argv: tuple[str, ...] | list[str]) -> str | None:
    """The harness module a system's argv runs (`python -m agent_sandbox.harness_x ...`), or None."""
    words = list(argv)
    if len(words) >= 3 and words[1] == "-m" and words[2] in SUPPORTED:
        return words[2]
    return None


def read_limits(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The turn's declared limits ({} when none); a malformed value is a setup error (ValueError)."""
    raw = (os.environ if environ is None else environ).get(LIMITS_ENV, "")
    if not raw:
        return {}
    data = json.loads(raw)
    if not isinstance(data, dict) or set(data) - set(LIMIT_NAMES):
        raise ValueError(f"{LIMITS_ENV}: expected an object with keys among {', '.join(LIMIT_NAMES)}")
    return data
