"""Pure parts of the runtime: cell parsing, failure classification, subnet blocks, owner
liveness, safe tar extraction, config validation. No engine needed."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile

import pytest

from orchestrator.cells import CLEAN, Cell, CellError, parse_cell
from orchestrator.errors import (
    ContainerStartError,
    ErpUnhealthy,
    TaskError,
    TurnFacts,
    classify_exception,
    classify_turns,
    did_not_start,
)

# -- cells ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, cell",
    [
        ("oracle:payment-run", Cell("oracle", "payment-run", CLEAN)),
        ("null:payment-run+lost-writes", Cell("null", "payment-run", "lost-writes")),
        ("neg:skip-check:payment-run", Cell("neg:skip-check", "payment-run", CLEAN)),
        ("neg:skip-check:payment-run+clean", Cell("neg:skip-check", "payment-run", CLEAN)),
        ("codex-sol:ap-invoice-backlog", Cell("codex-sol", "ap-invoice-backlog", CLEAN)),
    ],
)
def test_parse_cell(text, cell):
    assert parse_cell(text) == cell
    assert parse_cell(str(cell)) == cell  # round trip


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty cell"),
        ("payment-run", "no ':'"),
        (":payment-run", "empty system"),
        ("oracle:", "empty task"),
        ("oracle:payment-run+", "no condition"),
        ("oracle:payment-run+a+b", "more than one '+'"),
        ("neg:payment-run", "needs a name"),
        ("Oracle:payment-run", "system 'Oracle'"),
        ("oracle:Payment Run", "whitespace"),
        ("oracle:pay/run", "task 'pay/run'"),
        ("oracle:payment-run+lost;writes", "condition 'lost;writes'"),
        ("oracle:payment-run+-lost", "condition '-lost'"),
        ("oracle:payment-run+lost,,slow", "empty item"),
    ],
)
def test_parse_cell_errors_name_the_part(text, fragment):
    with pytest.raises(CellError) as info:
        parse_cell(text)
    assert fragment in str(info.value)
    assert "SYSTEM:TASK[+CONDITION]" in str(info.value)


def test_cell_slug_is_a_folder_name():
    assert parse_cell("null:payment-run").slug == "null__payment-run"
    assert parse_cell("neg:x:payment-run+lost-writes").slug == "neg-x__payment-run__lost-writes"
    assert parse_cell("oracle:t").is_policy and parse_cell("neg:a:t").is_policy
    assert not parse_cell("codex:t").is_policy


# -- classification --------------------------------------------------------------------------------

def test_exceptions_never_blame_the_agent_unless_typed():
    assert classify_exception(ContainerStartError("x")) == "infra_error"
    assert classify_exception(ErpUnhealthy("x")) == "infra_error"
    assert classify_exception(TaskError("x")) == "task_error"
    assert classify_exception(RuntimeError("a bug of ours")) == "infra_error"
    assert classify_exception(OSError("disk full")) == "infra_error"


def test_turns_classification():
    ok = TurnFacts(1, 0, False, 3.0)
    assert classify_turns([ok, TurnFacts(2, 0, False, 1.0)]).outcome == "graded"
    v = classify_turns([ok, TurnFacts(2, None, True, 60.0)])
    assert v.outcome == "agent_error" and "ran out of time" in v.reasons[0]
    v = classify_turns([TurnFacts(1, 1, False, 2.0)])
    assert v.outcome == "agent_error" and "exited with code 1" in v.reasons[0]
    v = classify_turns([TurnFacts(1, 137, False, 2.0, oom_killed=True)])
    assert "out of memory" in v.reasons[0]
    v = classify_turns([TurnFacts(1, 127, False, 0.1, did_not_start=True)])
    assert "did not start" in v.reasons[0]
    assert did_not_start(127, 0.2, 5.0) and did_not_start(126, 1.0, 5.0)
    assert not did_not_start(127, 30.0, 5.0) and not did_not_start(1, 0.1, 5.0)


# -- subnets ---------------------------------------------------------------------------------------

def test_subnet_pool_blocks_and_collisions():
    import random

    from networks.subnets import SubnetPool, SubnetsExhausted, SubnetTaken

    pool = SubnetPool("10.231.0.0/24", 28, rng=random.Random(1))
    assert pool.count == 16
    b = pool.block(3)
    assert b.subnet == "10.231.0.48/28" and b.gateway == "10.231.0.49" and b.host(2) == "10.231.0.50"
    assert b.ip_range == "10.231.0.56/29"
    assert pool.index_of("10.231.0.48/28") == 3 and pool.index_of("10.9.0.0/28") is None
    # Blocks overlapping existing networks are skipped; refusals move on to the next block.
    used = ["10.231.0.0/26"]  # blocks 0-3
    refused: list[str] = []

    def create(block):
        if len(refused) < 2:
            refused.append(block.subnet)
            raise SubnetTaken()
        return block.subnet

    block, got = pool.allocate(create, used=used)
    assert got not in refused and pool.index_of(got) >= 4
    # Exhaustion is reported, not looped on.
    with pytest.raises(SubnetsExhausted):
        SubnetPool("10.231.0.0/28", 28).allocate(lambda b: (_ for _ in ()).throw(SubnetTaken()))


def test_overlap_error_detection():
    from networks.subnets import is_overlap_error

    assert is_overlap_error(Exception("Pool overlaps with other one on this address space"))
    assert not is_overlap_error(Exception("no such image"))


def test_topology_rules():
    from networks.topology import TopologyError, _parse, load_topology

    topo = load_topology()
    assert topo.networks_of("agent") == ["attempt"]
    assert topo.networks_of("erp") == ["attempt", "control"]
    assert topo.networks["attempt"].options["com.docker.network.bridge.inhibit_ipv4"] == "true"
    assert not topo.networks["egress"].build  # declared for later work
    bad = {"networks": {"attempt": {"build": True, "internal": True},
                        "control": {"build": True, "internal": True, "members": ["erp", "agent"]}}}
    with pytest.raises(TopologyError, match="never join the control"):
        _parse(bad)


# -- owners ---------------------------------------------------------------------------------------

def test_owner_state_alive_dead_unknown():
    from orchestrator import labels as L

    me = L.Owner.current()
    assert L.owner_state(me.labels()) is L.OwnerState.ALIVE
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = L.process_start_time(proc.pid)
    proc.wait()
    dead = L.Owner(proc.pid, start or "1", me.boot, me.host)
    assert L.owner_state(dead.labels()) is L.OwnerState.DEAD
    # Same pid, other start time (a reused pid) is not the owner.
    assert L.owner_state({**me.labels(), L.OWNER_START: "1"}) is L.OwnerState.DEAD
    assert L.owner_state({**me.labels(), L.OWNER_BOOT: "another-boot"}) is L.OwnerState.DEAD
    assert L.owner_state({**me.labels(), L.OWNER_HOST: "elsewhere"}) is L.OwnerState.UNKNOWN
    assert L.owner_state({}) is L.OwnerState.UNKNOWN
    labels = L.attempt_labels("camp", "a1", "erp", me)
    assert labels[L.MANAGED] == "1" and labels[L.ATTEMPT] == "a1" and labels[L.OWNER_PID] == str(os.getpid())


# -- archives -------------------------------------------------------------------------------------

def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    buf.seek(0)
    return buf


def _info(name, kind=tarfile.REGTYPE, size=0, link=""):
    i = tarfile.TarInfo(name)
    i.type, i.size, i.linkname = kind, size, link
    return i


def test_safe_extract_never_follows_links(tmp_path):
    from orchestrator.backends.docker.archives import safe_extract

    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    stream = _tar([
        (_info("./", tarfile.DIRTYPE), None),
        (_info("./notes.txt", size=2), b"hi"),
        (_info("./evil", tarfile.SYMTYPE, link=str(outside)), None),
        (_info("./evil/pwned.txt", size=1), b"x"),
        (_info("./hard", tarfile.LNKTYPE, link="/etc/passwd"), None),
        (_info("../escape.txt", size=1), b"x"),
        (_info("/abs.txt", size=1), b"x"),
        (_info("./fifo", tarfile.FIFOTYPE), None),
        (_info("./sub", tarfile.DIRTYPE), None),
        (_info("./sub/a.txt", size=1), b"a"),
    ])  # fmt: skip
    skipped = safe_extract(stream, dest, strip=0)
    assert (dest / "notes.txt").read_text() == "hi"
    assert (dest / "sub" / "a.txt").read_text() == "a"
    assert not (dest / "evil").exists() and not list(outside.iterdir())
    assert not (dest / "hard").exists() and not (tmp_path / "escape.txt").exists()
    assert any("symlink" in s for s in skipped) and any("hard link" in s for s in skipped)
    assert any("unsafe" in s for s in skipped) and any("special" in s for s in skipped)
    assert oct((dest / "notes.txt").stat().st_mode & 0o777) == "0o644"


def test_build_tar_owners(tmp_path):
    from orchestrator.backends.docker.archives import Entry, build_tar, tree_entries

    (tmp_path / "hb").mkdir()
    (tmp_path / "hb" / "a.md").write_text("a")
    (tmp_path / "hb" / "link").symlink_to("/etc/passwd")
    data = build_tar(tree_entries(tmp_path / "hb", "handbook", uid=1000, gid=1000))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = {m.name: (m.uid, m.isdir()) for m in tar}
    assert names == {"handbook": (1000, True), "handbook/a.md": (1000, False)}  # the symlink is not copied
    assert build_tar([Entry("x", b"1", 0, 0, 0o600)])


def test_tree_entries_never_copies_a_missing_or_unlistable_folder_as_empty(tmp_path, monkeypatch):
    """A handbook folder gone from the host, or one the host cannot list (EMFILE under load), is
    an error of the runtime: copied as an empty folder it became the agent's failed turn."""
    import errno
    import os

    from orchestrator.backends.docker.archives import tree_entries

    with pytest.raises(FileNotFoundError, match="no such folder"):
        list(tree_entries(tmp_path / "gone", "handbook", uid=1000, gid=1000))
    (tmp_path / "hb").mkdir()
    (tmp_path / "hb" / "a.md").write_text("a")

    def scandir(path):
        raise OSError(errno.EMFILE, "Too many open files", str(path))

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(OSError, match="Too many open files"):
        list(tree_entries(tmp_path / "hb", "handbook", uid=1000, gid=1000))


# -- config ---------------------------------------------------------------------------------------

def test_config_validation():
    from pydantic import ValidationError

    from orchestrator.config import RuntimeConfig

    cfg = RuntimeConfig()
    assert cfg.subnet_prefix == 28 and cfg.agent_limits.pids > 8
    with pytest.raises(ValidationError):
        RuntimeConfig(subnet_range="10.231.0.0/30", subnet_prefix=28)
    with pytest.raises(ValidationError):
        RuntimeConfig(subnet_range="fd00::/64")
    with pytest.raises(ValidationError):
        cfg.erp_agent_port = 1  # frozen
    assert cfg.with_changes(campaign="x").campaign == "x"


def test_attempt_paths_layout(tmp_path):
    from orchestrator.identity import AttemptIdentity
    from orchestrator.paths import AttemptPaths

    p = AttemptPaths.for_identity(tmp_path, "lab", AttemptIdentity.of(parse_cell("null:payment-run"), 3, 2, 1))
    assert p.root == tmp_path / "lab" / "null__payment-run" / "seed-3" / "rep-2"
    p.prepare()
    (p.root / "result.json").write_text("{}")
    p.prepare()  # a second run moves the first aside
    assert not (p.root / "result.json").exists()
    assert list((tmp_path / "lab" / ".superseded").iterdir())
