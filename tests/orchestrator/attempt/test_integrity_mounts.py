"""A systems file's extra mounts cannot open the host: `/`, the Docker socket, system folders,
and anything containing or inside the scenario cache, the runs folder or the control token's
folder are refused with a message naming them; an ordinary tool folder is accepted. Checked on
real files and folders (symlinks resolved), from a real systems file."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from agent_sandbox.systems import load_systems
from orchestrator.attempt.mounts import check_system_mounts, mount_problem, protected_places
from orchestrator.backends.base import Mount
from orchestrator.errors import ConfigError


@pytest.fixture()
def host(tmp_path):
    """A host layout: a repo with its scenario cache, runs folder and scratch folder, and a tool."""
    repo = tmp_path / "repo"
    cache = repo / ".cache" / "scenarios"
    runs = repo / "runs"
    scratch = repo / ".cache" / "attempts"
    truth = cache / "payment-run" / "abc-seed-0"
    for d in (truth, runs / "label", scratch / "att-1" / "erp", tmp_path / "tools" / "bin"):
        d.mkdir(parents=True)
    (truth / "truth.json").write_text("{}")
    (scratch / "att-1" / "erp" / "control.token").write_text("secret")
    (tmp_path / "tools" / "bin" / "agent").write_text("#!/bin/sh\n")
    places = protected_places(scenario_cache=cache, runs_root=runs, scratch_root=scratch)
    return tmp_path, repo, places


def _refused(source: Path | str, places) -> str:
    problem = mount_problem(source, places)
    assert problem is not None, f"{source} was accepted"
    return problem


def test_root_system_folders_and_sockets_are_refused(host):
    tmp, _, places = host
    assert "host folder /" in _refused("/", places)
    assert "system folder /etc" in _refused("/etc/passwd", places)
    assert "system folder /proc" in _refused("/proc/1", places)
    assert "/home" in _refused("/home", places)
    docker_sock = next((p for p in ("/var/run/docker.sock", "/run/docker.sock") if os.path.exists(p)), None)
    if docker_sock:
        assert "Docker socket" in _refused(docker_sock, places)
    assert "Docker socket" in _refused("/var/run", places)
    # Any socket: a listener made here for the test.
    sock_path = tmp / "service.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(sock_path))
    try:
        assert "socket" in _refused(sock_path, places)
    finally:
        srv.close()


def test_the_cache_runs_and_token_folders_are_refused_from_inside_and_outside(host):
    tmp, repo, places = host
    truth = repo / ".cache" / "scenarios" / "payment-run" / "abc-seed-0" / "truth.json"
    assert "inside the scenario cache" in _refused(truth, places)
    assert "contains the scenario cache" in _refused(repo / ".cache", places)
    assert "contains the scenario cache" in _refused(repo, places)
    assert "inside the runs folder" in _refused(repo / "runs" / "label", places)
    assert "control tokens" in _refused(repo / ".cache" / "attempts" / "att-1" / "erp" / "control.token", places)
    # A symlink is judged by what it points at.
    link = tmp / "innocent"
    link.symlink_to(truth.parent)
    assert "inside the scenario cache" in _refused(link, places)
    # An ordinary folder of tools is fine.
    assert mount_problem(tmp / "tools" / "bin", places) is None
    assert mount_problem(tmp / "tools" / "bin" / "agent", places) is None


def test_a_systems_file_with_host_mounts_is_refused_naming_the_mount(host):
    tmp, repo, places = host
    cache_dir = repo / ".cache" / "scenarios"
    systems = tmp / "systems.yaml"
    systems.write_text(
        "systems:\n"
        "  rooted:\n    argv: [sh, -c, 'cat /opt/host/etc/hostname']\n    mounts: ['/:/opt/host']\n"
        f"  cached:\n    argv: [sh, -c, 'ls /opt/c']\n    mounts: ['{cache_dir}:/opt/c']\n"
        "  socketed:\n    argv: [sh, -c, 'ls']\n    mounts: ['/var/run/docker.sock:/opt/d.sock']\n"
        f"  fine:\n    argv: [sh, -c, 'ls']\n    mounts: ['{tmp / 'tools' / 'bin'}:/opt/agent-bin']\n")
    loaded = load_systems(systems)
    expected = {"rooted": "mount /:/opt/host is refused: it is the host folder /",
                "cached": f"mount {cache_dir}:/opt/c is refused: it lies inside the scenario cache",
                "socketed": "/var/run/docker.sock:/opt/d.sock is refused"}
    for name, text in expected.items():
        mounts = [Mount(Path(m.source), m.target) for m in loaded[name].mounts]
        with pytest.raises(ConfigError) as err:
            check_system_mounts(name, mounts, places)
        assert f"system {name!r}" in str(err.value) and text in str(err.value), str(err.value)
    check_system_mounts("fine", [Mount(Path(m.source), m.target) for m in loaded["fine"].mounts], places)


def test_resolving_an_attempt_refuses_a_root_mount_before_anything_starts(host):
    """Through the attempt's own resolve phase: `/:/opt/host` (the issue's path to truth.json)
    and a mount of the attempt's scenario are refused with a ConfigError naming them."""
    from types import SimpleNamespace

    from orchestrator.attempt.records import AttemptSpec
    from orchestrator.attempt.resolve import resolve
    from orchestrator.cells import parse_cell

    tmp, repo, places = host
    scenario_dir = repo / ".cache" / "scenarios" / "payment-run" / "abc-seed-0"
    systems = tmp / "systems.yaml"
    systems.write_text("systems:\n"
                       "  rooted:\n    argv: [sh, -c, 'cat /opt/host/etc/hostname']\n    mounts: ['/:/opt/host']\n"
                       f"  truthful:\n    argv: [sh, -c, 'cat /opt/t/truth.json']\n    mounts: ['{scenario_dir}:/opt/t']\n"
                       f"  fine:\n    argv: [sh, -c, 'ls']\n    mounts: ['{tmp / 'tools'}:/opt/tools']\n")
    task = SimpleNamespace(version=1, fault_profiles={}, policies_module=tmp / "none.py")
    scenario = SimpleNamespace(db=tmp / "x.db", world=tmp / "w.json", handbook_dir=tmp, dir=scenario_dir,
                               meta={"grading_date": "2026-10-13", "agent_token": "t", "agent_user": "u"},
                               turns=[{"n": 1, "date": "2026-10-08", "budget_s": 60}])
    for system, text in (("rooted", "mount /:/opt/host is refused"), ("truthful", "inside the scenario cache")):
        spec = AttemptSpec(parse_cell(f"{system}:payment-run"), 0, systems_file=systems)
        with pytest.raises(ConfigError) as err:
            resolve(spec, task, scenario, places)
        assert text in str(err.value), str(err.value)
    resolved = resolve(AttemptSpec(parse_cell("fine:payment-run"), 0, systems_file=systems), task, scenario, places)
    assert [m.target for m in resolved.mounts] == ["/opt/tools"]
