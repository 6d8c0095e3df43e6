"""Systems files (the harness contract): parsing, validation errors that name file and field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from repo_paths import REPO_ROOT

from agent_sandbox.argv_template import render_argv
from agent_sandbox.systems import (
    SystemsFileError,
    SystemSpec,
    is_policy_name,
    load_systems,
    policy_system_json,
)

EXAMPLE = REPO_ROOT / "agent_sandbox" / "examples" / "systems.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "systems.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_example_file_loads() -> None:
    systems = load_systems(EXAMPLE)
    spec = systems["shell-echo"]
    assert spec.kind == "command" and spec.usage == "usage-file"
    doc = spec.system_json({"UNRELATED": "x"})
    assert doc["kind"] == "command" and doc["name"] == "shell-echo"
    assert doc["env"] == {"NO_COLOR": "1"}
    assert "{prompt_file}" in doc["argv"]


def test_full_entry_with_mounts_and_passthrough(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
systems:
  my-agent:
    argv: [my-agent, --prompt, "{prompt_file}", --out, "{out_dir}", --budget, "{budget_s}"]
    env: [MODEL_GATEWAY_URL, MISSING_ON_HOST]
    set_env: {NO_COLOR: "1"}
    mounts: ["bin:/opt/agent-bin", {source: /etc/hosts, target: /opt/hosts}]
    image: pb-agent-custom:1
    usage: codex-jsonl
""",
    )
    spec = load_systems(path)["my-agent"]
    assert spec.mounts[0].source == str((tmp_path / "bin").resolve())
    assert spec.mounts[0].target == "/opt/agent-bin"
    assert spec.image == "pb-agent-custom:1"
    doc = spec.system_json({"MODEL_GATEWAY_URL": "http://gw:9000"})
    assert doc["env"] == {"MODEL_GATEWAY_URL": "http://gw:9000", "NO_COLOR": "1"}
    assert doc["usage"] == "codex-jsonl"
    with pytest.raises(ValidationError):
        spec.name = "other"  # frozen


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("systems:\n  oracle:\n    argv: [x]\n", "systems.oracle.name: 'oracle' is a built-in"),
        ("systems:\n  a:\n    argv: []\n", "systems.a.argv"),
        ("systems:\n  a:\n    argv: 'sh -c x'\n", "systems.a.argv: give a list"),
        ("systems:\n  a:\n    argv: [x, '{prompt}']\n", "systems.a.argv: unknown placeholder {prompt}"),
        ("systems:\n  a:\n    argv: [x]\n    env: [ERP_TOKEN]\n", "systems.a.env: ERP_TOKEN is set by the harness"),
        ("systems:\n  a:\n    argv: [x]\n    env: ['BAD-NAME']\n", "systems.a.env"),
        ("systems:\n  a:\n    argv: [x]\n    usage: nope\n", "systems.a.usage: unknown usage extractor 'nope'"),
        ("systems:\n  a:\n    argv: [x]\n    mounts: ['nocolon']\n", "systems.a.mounts: mount 'nocolon' must be"),
        ("systems:\n  a:\n    argv: [x]\n    mounts: ['src:relative']\n", "systems.a.mounts.0.target"),
        ("systems:\n  a:\n    argv: [x]\n    colour: red\n", "systems.a.colour"),
        ("systems:\n  a:\n    name: b\n    argv: [x]\n", "systems.a.name"),
        ("systems: [1, 2]\n", "expected a mapping"),
        ("systems:\n  a: [x]\n", "systems.a: expected a mapping"),
        ("systems: {}\nextra: 1\n", "unknown top-level key(s): extra"),
        ("systems:\n  a:\n    argv: [x\n", "not valid YAML"),
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, body: str, where: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(SystemsFileError) as info:
        load_systems(path)
    assert str(path) in str(info.value)
    assert where in str(info.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SystemsFileError, match="cannot read"):
        load_systems(tmp_path / "nope.yaml")


def test_policy_names() -> None:
    assert is_policy_name("oracle") and is_policy_name("null") and is_policy_name("neg:split-req")
    assert not is_policy_name("neg:") and not is_policy_name("codex")
    assert policy_system_json("neg:x", "/tasks/t/policies.py") == {"kind": "policy", "name": "neg:x",
                                                                   "module": "/tasks/t/policies.py"}
    assert policy_system_json("null", None) == {"kind": "policy", "name": "null"}
    with pytest.raises(ValueError):
        policy_system_json("oracle", None)
    with pytest.raises(ValueError):
        policy_system_json("codex", "/x.py")


def test_argv_rendering_leaves_shell_and_json_braces_alone() -> None:
    values = {"prompt_file": "/turn/prompt.txt", "workspace": "/ws", "out_dir": "/turn/out", "budget_s": "600"}
    argv = ["sh", "-c", 'cat "$1" > ${HOME}/p; printf \'{"a": 1}\'', "x", "{prompt_file}", "{workspace}/n", "{budget_s}"]
    assert render_argv(argv, values) == [
        "sh", "-c", 'cat "$1" > ${HOME}/p; printf \'{"a": 1}\'', "x", "/turn/prompt.txt", "/ws/n", "600",
    ]
    with pytest.raises(ValueError, match="no value"):
        render_argv(["x"], {"workspace": "/ws"})


def test_spec_direct_construction_validates() -> None:
    with pytest.raises(Exception, match="both passed through"):
        SystemSpec(name="a", argv=("x",), env=("A",), set_env={"A": "1"})


# --- built-in command systems that call a model ------------------------------------------------
from agent_sandbox import harness_claude, harness_codex  # noqa: E402
from agent_sandbox.systems import BUILTIN_SYSTEMS, ModelUse, builtin_system  # noqa: E402


def test_builtin_model_systems() -> None:
    claude = builtin_system("claude-code")
    assert claude is not None and claude.calls_model and claude.image == "agent-claude"
    assert claude.usage == "claude-json" and claude.model is not None and claude.model.provider == "anthropic"
    env = claude.model.turn_env("http://model-gateway:8080/", "pbv-key", None)
    assert env == {"ANTHROPIC_BASE_URL": "http://model-gateway:8080", "ANTHROPIC_API_KEY": "pbv-key",
                   "PB_MODEL": "claude-sonnet-4-5"}
    codex = BUILTIN_SYSTEMS["codex"]
    assert codex.model is not None and codex.model.provider == "openai" and codex.image == "agent-codex"
    assert codex.model.turn_env("http://model-gateway:8080", "k", "gpt-5")["OPENAI_BASE_URL"] == "http://model-gateway:8080/v1"
    assert builtin_system("shell-echo") is None
    assert not load_systems(EXAMPLE)["shell-echo"].calls_model


def test_a_systems_file_extends_a_builtin_but_cannot_shadow_it(tmp_path: Path) -> None:
    path = write(tmp_path, """
systems:
  codex-mine:
    extends: codex
    mounts: ["codex-bin:/usr/local/bin/codex"]
""")
    spec = load_systems(path)["codex-mine"]
    assert spec.argv == BUILTIN_SYSTEMS["codex"].argv and spec.model == BUILTIN_SYSTEMS["codex"].model
    assert spec.mounts[0].target == "/usr/local/bin/codex" and spec.mounts[0].source == str(tmp_path / "codex-bin")
    with pytest.raises(SystemsFileError, match="claude-code.*built-in system"):
        load_systems(write(tmp_path, "systems:\n  claude-code:\n    argv: [x]\n"))
    with pytest.raises(SystemsFileError, match="extends: 'nope' is not a built-in"):
        load_systems(write(tmp_path, "systems:\n  x:\n    extends: nope\n"))


def test_model_block_validation(tmp_path: Path) -> None:
    with pytest.raises(SystemsFileError, match="ANTHROPIC_API_KEY set by the model gateway"):
        load_systems(write(tmp_path, """
systems:
  x:
    argv: [x]
    set_env: {ANTHROPIC_API_KEY: "sk-leak"}
    model: {provider: anthropic, model: m, base_url_env: ANTHROPIC_BASE_URL, key_env: ANTHROPIC_API_KEY}
"""))
    with pytest.raises(SystemsFileError, match="model.provider"):
        load_systems(write(tmp_path, "systems:\n  x:\n    argv: [x]\n    model: {provider: google, model: m, "
                                     "base_url_env: A, key_env: B}\n"))
    with pytest.raises(ValueError, match="base_path"):
        ModelUse(provider="openai", model="m", base_url_env="A", key_env="B", base_path="v1/")
    with pytest.raises(ValueError, match="set by the harness"):
        ModelUse(provider="openai", model="m", base_url_env="HOME", key_env="B")


def test_claude_home_is_prepared_so_it_never_prompts(tmp_path: Path) -> None:
    harness_claude.prepare_home(tmp_path / "home")
    state = json.loads((tmp_path / "home" / ".claude.json").read_text())
    assert state["hasCompletedOnboarding"] is True and state["bypassPermissionsModeAccepted"] is True
    settings = json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text())
    assert settings["permissions"]["defaultMode"] == "bypassPermissions"
    argv = harness_claude.claude_argv("claude", "do it", "m")
    assert argv[:2] == ["claude", "-p"] and "--dangerously-skip-permissions" in argv
    assert argv[argv.index("--output-format") + 1] == "json" and argv[-1] == "m"
    assert harness_claude.QUIET_ENV["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


def test_claude_harness_refuses_without_gateway_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    prompt = tmp_path / "p.txt"
    prompt.write_text("x")
    assert harness_claude.main(["--prompt-file", str(prompt), "--out-dir", str(tmp_path)]) == 125
    assert "ANTHROPIC_BASE_URL" in capsys.readouterr().err


def test_codex_config_points_only_at_the_gateway() -> None:
    import tomllib

    doc = tomllib.loads(harness_codex.codex_config("http://model-gateway:8080/v1", "gpt-5-codex"))
    assert doc["model_provider"] == "pb-gateway" and doc["model"] == "gpt-5-codex"
    provider = doc["model_providers"]["pb-gateway"]
    assert provider == {"name": "process-bench model gateway", "base_url": "http://model-gateway:8080/v1",
                        "env_key": "OPENAI_API_KEY", "wire_api": "responses", "request_max_retries": 2,
                        "stream_max_retries": 2}
    assert doc["approval_policy"] == "never"
    argv = harness_codex.codex_argv("codex", "P", "gpt-5")
    assert argv[:3] == ["codex", "exec", "--json"] and argv[-1] == "P"
