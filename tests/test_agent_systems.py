"""Systems files (the harness contract): parsing, validation errors that name file and field."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_sandbox.argv_template import render_argv
from agent_sandbox.systems import (
    SystemsFileError,
    SystemSpec,
    is_policy_name,
    load_systems,
    policy_system_json,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "agent_sandbox" / "examples" / "systems.yaml"


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
    with pytest.raises(Exception):
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
    assert policy_system_json("neg:x", "/tasks/t/policies.py") == {"kind": "policy", "name": "neg:x", "module": "/tasks/t/policies.py"}
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
