"""Temporary folders under .cache/ left by a SIGKILLed orchestrator are cleaned; live ones never.

Real processes, real SIGKILL, real flock: a scenario build is killed while its `.tmp-` folder
exists; a scratch folder's claiming process is killed.
"""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT

from orchestrator import leftovers
from orchestrator.cli import main

REPO = REPO_ROOT


def _wait_for(pred, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def _writers_of(folder: Path) -> list[int]:
    """Pids of live processes whose command line names `folder` (a generator writing into it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if str(folder) in cmd and state != "Z":
            found.append(int(proc.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid} (gone)"


@pytest.fixture
def pack() -> None:
    from tasks.registry import load_task

    try:
        load_task("payment-run")
    except Exception as exc:  # noqa: BLE001 — another part
        pytest.skip(f"payment-run not loadable: {exc}")


def test_a_scenario_build_killed_by_sigkill_is_swept(tmp_path: Path, pack):
    cache = tmp_path / "scenarios"
    code = (
        "import sys; from orchestrator.scenarios.cache import ensure_scenario; "
        f"ensure_scenario('payment-run', 11, cache_root={str(cache)!r}, reference=False)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        _wait_for(lambda: any(cache.glob("*/.tmp-*")))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    stale = list(cache.glob("*/.tmp-*"))
    assert stale, "the killed build left its temporary folder"

    # a build in progress (its lock held) is never touched
    task_dir = stale[0].parent
    live = task_dir / ".tmp-livekey-seed-3-abc123"
    live.mkdir()
    with open(task_dir / ".livekey-seed-3.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        removed = leftovers.sweep_builds(cache)
        assert live.is_dir()
    assert sorted(removed) == sorted(stale)
    assert not any(p.exists() for p in stale)
    assert leftovers.sweep_builds(cache) == [live]  # once its lock is free, it is dead too


def test_scratch_folders_of_dead_owners_are_swept(tmp_path: Path):
    scratch = tmp_path / "attempts"
    scratch.mkdir()
    dead = scratch / "oracle--payment-run-s0-r1-deadbeef"
    code = ("import sys, time; from pathlib import Path; from orchestrator.leftovers import claim; "
            f"p = Path({str(dead)!r}); p.mkdir(); claim(p); print('ok', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.stdout is not None and child.stdout.readline().strip() == "ok"
    assert leftovers.sweep_owned(scratch) == []  # its owner still runs
    child.send_signal(signal.SIGKILL)
    child.wait()
    mine = scratch / "live-attempt"
    mine.mkdir()
    leftovers.claim(mine)
    unclaimed = scratch / "no-owner-record"
    unclaimed.mkdir()
    assert leftovers.sweep_owned(scratch) == [dead]
    assert mine.is_dir() and unclaimed.is_dir()


def test_the_campaign_command_sweeps_before_it_starts(tmp_path: Path, monkeypatch, capsys, pack):
    cache = tmp_path / "scenarios"
    stale = cache / "payment-run" / ".tmp-0123456789abcdef-seed-0-k1ll3d"
    stale.mkdir(parents=True)
    monkeypatch.setenv("PB_SCENARIO_CACHE", str(cache))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'nobody.sock'}")
    assert main(["campaign", "--cells", "null:payment-run", "--runs-root", str(tmp_path / "runs")]) == 3
    assert not stale.exists()
    assert "left by a killed run" in capsys.readouterr().err


@pytest.mark.heavy  # make test-heavy: CI runs a representative subset (the same path is covered in make test)
def test_the_next_build_of_the_entry_removes_a_killed_build(tmp_path: Path, pack):
    """The builder of an entry, holding its lock, removes what killed builders of it left."""
    from orchestrator.scenarios.cache import ensure_scenario

    cache = tmp_path / "scenarios"
    code = (
        "from orchestrator.scenarios.cache import ensure_scenario; "
        f"ensure_scenario('payment-run', 12, cache_root={str(cache)!r}, reference=False)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        _wait_for(lambda: any(cache.glob("*/.tmp-*")))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    try:
        _wait_for(lambda: not _writers_of(cache), timeout=30)  # dies with its parent (imports may take seconds)
    except AssertionError:
        raise AssertionError(f"still writing into the cache: {[_cmdline(p) for p in _writers_of(cache)]}") from None
    stale = list(cache.glob("*/.tmp-*"))
    assert stale
    scenario = ensure_scenario("payment-run", 12, cache_root=cache, reference=False)
    assert scenario.db.exists()
    if not stale[0].name.startswith(f".tmp-{scenario.dir.name}-"):
        # the cache key hashes erp_service/ and agent_sandbox/ too: someone edited them meanwhile
        pytest.skip("the task tree changed between the killed build and this one")
    assert not any(p.exists() for p in stale) and not list(cache.glob("*/.tmp-*"))
