"""Pure parts of outcome integrity: what the runtime copies out of an agent's folders is cut at
the limit and recorded, never an exception of the runtime."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

from orchestrator.backends.docker.archives import safe_extract


def _tar(files: list[tuple[str, int]]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for folder in sorted({str(Path(n).parent) for n, _ in files} - {"."}):
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, size in files:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(b"x" * size))
    buf.seek(0)
    return buf


def test_copy_out_past_the_limit_is_truncated_and_recorded(tmp_path: Path):
    skipped = safe_extract(_tar([("out/a.txt", 100), ("out/b.txt", 100), ("out/c.txt", 50)]), tmp_path,
                           strip=0, max_bytes=150)
    assert (tmp_path / "out" / "a.txt").stat().st_size == 100
    assert (tmp_path / "out" / "b.txt").stat().st_size == 50
    assert not (tmp_path / "out" / "c.txt").exists()
    assert skipped == ["out/b.txt (truncated at 50 of 100 bytes: the copy-out limit of 150 bytes)",
                       "out/c.txt (50 bytes; over the copy-out limit of 150 bytes)"]


def test_copy_out_within_the_limit_is_whole(tmp_path: Path):
    assert safe_extract(_tar([("a", 10), ("b", 20)]), tmp_path, strip=0, max_bytes=30) == []
    assert sorted(p.stat().st_size for p in tmp_path.iterdir()) == [10, 20]


# --- who caused it ------------------------------------------------------------------------------

def test_a_service_that_died_on_its_own_is_the_agents_and_one_killed_through_the_engine_is_not():
    from orchestrator.integrity import ServiceDeath

    crashed = ServiceDeath.from_engine("erp", {"ExitCode": 137, "OOMKilled": False},
                                       [{"Action": "exec_create: python -c ..."}, {"Action": "exec_start: python"},
                                        {"Action": "die", "Actor": {"Attributes": {"exitCode": "137"}}}])
    assert crashed.agents_doing and "after the agent's requests" in crashed.reason(1)
    oom = ServiceDeath.from_engine("erp", {"ExitCode": 137, "OOMKilled": True}, [{"Action": "oom"}, {"Action": "die"}])
    assert oom.agents_doing and oom.oom_killed and "ran out of memory" in oom.reason(2)
    killed = ServiceDeath.from_engine("erp", {"ExitCode": 137, "OOMKilled": False},
                                      [{"Action": "kill", "Actor": {"Attributes": {"signal": "9"}}}, {"Action": "die"}])
    assert not killed.agents_doing and "kill signal=9" in killed.reason(1)
    stopped = ServiceDeath.from_engine("erp", {"ExitCode": 0}, [{"status": "stop"}])
    assert not stopped.agents_doing


def test_a_child_killed_for_memory_in_a_normal_turn_is_a_note_not_a_failure():
    from orchestrator.integrity import TurnState, counts_as_oom_failure, memory_note

    normal = TurnState(exit_code=0, oom_killed=True, timed_out=False)
    assert memory_note(normal) and not counts_as_oom_failure(normal)
    ended = TurnState(exit_code=137, oom_killed=True, timed_out=False)
    assert memory_note(ended) is None and counts_as_oom_failure(ended)
    assert not counts_as_oom_failure(TurnState(exit_code=0, oom_killed=False, timed_out=False))
