"""Adapter limits (issue 31): what a systems file may declare, what the harnesses make of it.

A limit may be declared only where the system's harness applies it, so that every limit on
record was applied; each harness turns the declared limits into its CLI's own settings.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from agent_sandbox import harness_claude, harness_codex
from agent_sandbox.adapter_limits import LIMITS_ENV, read_limits
from agent_sandbox.systems import SystemsFileError, load_systems


def systems_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "systems.yaml"
    path.write_text(body)
    return path


@pytest.mark.parametrize("extends,limits", [
    ("codex", "{reasoning_effort: high}"),
    ("codex", "{reasoning_effort: xhigh}"),
    ("claude-code", "{max_turns: 30}"),
    ("claude-code", "{max_output_tokens: 8000, tools_denied: [NotebookEdit]}"),
    ("claude-code", "{tools_allowed: ['Bash(erp:*)', Read], max_turns: 5}"),
    ("codex", "{}"),
])
def test_limits_the_harness_applies_are_accepted(tmp_path, extends, limits) -> None:
    path = systems_file(tmp_path, f"systems:\n  mine:\n    extends: {extends}\n    limits: {limits}\n")
    spec = load_systems(path)["mine"]
    declared = spec.limits.declared()
    env = spec.system_json({})["env"]
    if declared:
        assert json.loads(env[LIMITS_ENV]) == declared
    else:
        assert LIMITS_ENV not in env


@pytest.mark.parametrize("body,fragment", [
    ("extends: codex\n    limits: {max_turns: 30}", "max_turns cannot be applied by its harness agent_sandbox.harness_codex"),
    ("extends: codex\n    limits: {max_output_tokens: 100}", "max_output_tokens cannot be applied"),
    ("extends: codex\n    limits: {tools_denied: [shell]}", "tools_denied cannot be applied"),
    ("extends: claude-code\n    limits: {reasoning_effort: high}", "reasoning_effort cannot be applied"),
    ("argv: [my-agent, '{prompt_file}']\n    limits: {max_turns: 3}", "not a harness adapter"),
    ("extends: codex\n    limits: {reasoning_effort: 'High!'}", "lower-case word"),
    ("extends: codex\n    limits: {reasoning_effort: high, turns: 3}", "limits.turns"),
    ("extends: claude-code\n    limits: {max_turns: 0}", "limits.max_turns"),
    ("extends: claude-code\n    limits: {tools_denied: ['a,b']}", "tool 'a,b'"),
    ("extends: codex\n    set_env: {PB_ADAPTER_LIMITS: '{}'}", "set by the harness"),
])
def test_limits_a_harness_cannot_apply_are_refused(tmp_path, body, fragment) -> None:
    path = systems_file(tmp_path, f"systems:\n  mine:\n    {body}\n")
    with pytest.raises(SystemsFileError, match="mine") as err:
        load_systems(path)
    assert fragment in str(err.value), str(err.value)


def test_codex_config_applies_effort_and_switches_off_what_is_not_the_model_call() -> None:
    plain = tomllib.loads(harness_codex.codex_config("http://model-gateway:8080/v1", "fake-gpt"))
    assert "model_reasoning_effort" not in plain  # unset: Codex's default for the model
    config = tomllib.loads(harness_codex.codex_config("http://model-gateway:8080/v1", "fake-gpt",
                                                      {"reasoning_effort": "high"}))
    assert config["model_reasoning_effort"] == "high"
    assert config["check_for_update_on_startup"] is False
    assert config["analytics"] == {"enabled": False} and config["feedback"] == {"enabled": False}
    assert config["otel"]["exporter"] == "none" and config["otel"]["log_user_prompt"] is False
    # What the record calls the adapter's fixed settings is what the config says.
    provider = config["model_providers"][harness_codex.PROVIDER_ID]
    merged = {**config, **provider}
    assert {k: merged[k] for k in harness_codex.FIXED_SETTINGS} == harness_codex.FIXED_SETTINGS


def test_claude_argv_applies_turns_and_tools() -> None:
    argv = harness_claude.claude_argv("claude", "P", "m", {"max_turns": 7, "tools_allowed": ["Bash", "Read"],
                                                           "tools_denied": ["NotebookEdit", "WebFetch"]})
    assert argv[argv.index("--max-turns") + 1] == "7"
    assert argv[argv.index("--allowedTools") + 1] == "Bash,Read"
    assert argv[argv.index("--disallowedTools") + 1] == "WebSearch,WebFetch,NotebookEdit"
    bare = harness_claude.claude_argv("claude", "P", "m")
    assert "--max-turns" not in bare and "--allowedTools" not in bare
    assert bare[bare.index("--disallowedTools") + 1] == "WebSearch,WebFetch"
    assert harness_claude.limits_env({"max_output_tokens": 4096}) == {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096"}
    assert harness_claude.limits_env({}) == {}


@pytest.mark.parametrize("raw,expect", [
    ("", {}), ('{"reasoning_effort": "low"}', {"reasoning_effort": "low"}),
    ('{"unknown": 1}', ValueError), ("[1]", ValueError), ("not json", ValueError),
])
def test_read_limits(raw, expect) -> None:
    if expect is ValueError:
        with pytest.raises(ValueError):
            read_limits({LIMITS_ENV: raw})
    else:
        assert read_limits({LIMITS_ENV: raw}) == expect


def test_codex_fallback_metadata_warning_is_read_from_its_stream(tmp_path) -> None:
    warning = ("Model metadata for `fake-gpt` not found. Defaulting to fallback metadata; this can degrade "
               "performance and cause issues.")
    stdout = tmp_path / "stdout.txt"
    stdout.write_text("\n".join([
        json.dumps({"type": "thread.started", "thread_id": "t"}),
        json.dumps({"type": "item.completed", "item": {"id": "item_0", "type": "error", "message": warning}}),
        json.dumps({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
                                                       "text": "I read 'Defaulting to fallback metadata' somewhere"}}),
        "not json Defaulting to fallback metadata",
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    ]))
    assert harness_codex.fallback_metadata_notes(stdout) == [warning]
    assert harness_codex.fallback_metadata_notes(tmp_path / "missing.txt") == []
