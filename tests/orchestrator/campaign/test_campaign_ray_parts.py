"""The executor interface and the Ray executor's parts that need no cluster (Ray not needed).

- The scheduler runs an `Executor`: its `placed` report is a logged event, and the node rides on
  the try's later events; a try that raises is an infra error retried by the scheduler, with
  the earlier try set aside (the executor never retries).
- The attempt folder's archive round trip keeps every file (a symlink as a symlink) and refuses
  to unpack over a folder or outside the destination.
- The head's sweep finds an attempt's engine objects by the prefix every runtime id of it has.
- A node whose sources differ from the label's is refused, naming the part.
- `--executor ray` without an address is bad input.
"""
from __future__ import annotations

import io
import json
import tarfile
import threading
from pathlib import Path
from typing import Any

import pytest
from campaign_support import result_dict

from orchestrator.campaign.executor import Executor, Placed
from orchestrator.campaign.ray_node import check_sources, pack_folder, unpack_folder
from orchestrator.campaign.runtime import FatalCampaignError
from orchestrator.campaign.scheduler import Scheduler
from orchestrator.cli import main
from orchestrator.identity import AttemptIdentity


def _ident(system: str = "oracle", rep: int = 1) -> AttemptIdentity:
    return AttemptIdentity(task="payment-run", system=system, condition="clean", seed=0, rep=rep, task_version="1")


class TwoNodes(Executor):
    """Places tries on `n1` then `n2`; the first try of `flaky` dies with its node."""

    name = "two-nodes"

    def __init__(self, flaky: str) -> None:
        self.flaky = flaky
        self.tries: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def run(self, ident: AttemptIdentity, folder: Path, cancel: threading.Event, placed: Placed) -> dict[str, Any]:
        with self._lock:
            node = "n1" if not any(a == ident.attempt_id for a, _ in self.tries) else "n2"
            self.tries.append((ident.attempt_id, node))
        placed(node)
        if ident.attempt_id == self.flaky and node == "n1":
            raise RuntimeError("node n1 lost mid-attempt")
        folder.mkdir(parents=True)
        result = result_dict(ident)
        (folder / "result.json").write_text(json.dumps(result))
        return result


def test_the_scheduler_runs_an_executor_and_logs_where_each_try_ran(tmp_path: Path):
    plan = [_ident("oracle"), _ident("null")]
    executor = TwoNodes(flaky=plan[1].attempt_id)
    events: list[Any] = []
    run = Scheduler(runs_root=tmp_path, label="L", job=executor, concurrency=2, infra_retries=1,
                    on_event=events.append).run(plan)
    assert run.finished == 2
    assert sorted(executor.tries) == sorted([(plan[0].attempt_id, "n1"), (plan[1].attempt_id, "n1"),
                                             (plan[1].attempt_id, "n2")])
    flaky = [(e.kind, e.node, e.outcome) for e in events if e.ident == plan[1] and e.kind != "started"]
    assert flaky == [("placed", "n1", None), ("retry", "n1", "infra_error"), ("placed", "n2", None),
                     ("finished", "n2", "graded")]
    kept = json.loads((tmp_path / "L" / "null__payment-run" / "seed-0" / "rep-1.try-1" / "result.json").read_text())
    assert kept["outcome"] == "infra_error" and "lost mid-attempt" in kept["error"]["message"]
    logged = [json.loads(t) for t in (tmp_path / "L" / "events.jsonl").read_text().splitlines()]
    assert [(e["event"], e["node"]) for e in logged if e.get("attempt_id") == plan[1].attempt_id and "node" in e] == [
        ("attempt_placed", "n1"), ("attempt_retry", "n1"), ("attempt_placed", "n2"), ("attempt_finished", "n2")]


def test_an_attempt_folder_comes_back_whole(tmp_path: Path):
    folder = tmp_path / "node" / "rep-1"
    (folder / "workspace" / "sub").mkdir(parents=True)
    (folder / "result.json").write_text('{"outcome": "graded"}\n')
    (folder / "final.db").write_bytes(bytes(range(256)) * 10)
    (folder / "workspace" / "sub" / "note.md").write_text("hand-off\n")
    (folder / "workspace" / "link").symlink_to("/etc/hostname")
    dest = tmp_path / "head" / "L" / "rep-1"
    unpack_folder(pack_folder(folder), dest)
    got = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
    assert got == ["final.db", "result.json", "workspace", "workspace/link", "workspace/sub", "workspace/sub/note.md"]
    assert (dest / "final.db").read_bytes() == (folder / "final.db").read_bytes()
    assert (dest / "workspace" / "link").is_symlink() and str((dest / "workspace" / "link").readlink()) == "/etc/hostname"
    with pytest.raises(FileExistsError):
        unpack_folder(pack_folder(folder), dest)  # never over an earlier try


def test_an_archive_cannot_write_outside_its_folder(tmp_path: Path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"x"
        info = tarfile.TarInfo("rep-1/../../escaped")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(tarfile.OutsideDestinationError):
        unpack_folder(buf.getvalue(), tmp_path / "dest" / "rep-1")
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "dest" / "rep-1").exists()


@pytest.mark.parametrize("rep", [1, 3])
def test_the_sweep_prefix_is_the_start_of_every_runtime_id(rep: int):
    ident = _ident("neg:blind_retry", rep)
    ids = {ident.new_run_id() for _ in range(3)}
    assert len(ids) == 3 and all(i.startswith(ident.run_id_prefix()) for i in ids), (ids, ident.run_id_prefix())
    other = ident.model_copy(update={"rep": rep + 10})
    assert not other.new_run_id().startswith(ident.run_id_prefix())


def test_a_node_with_other_sources_is_refused():
    from orchestrator.attempt.inputs import task_info
    from orchestrator.campaign.sources import source_parts

    ident = _ident()
    parts = source_parts()
    tree = task_info([ident.task])[ident.task]["tree_sha256"]
    check_sources({"ident": ident, "sources": {"parts": parts}, "task_tree": tree})  # the same: accepted
    changed = dict(parts, erp_service="0" * 64)
    with pytest.raises(FatalCampaignError, match="erp_service"):
        check_sources({"ident": ident, "sources": {"parts": changed}, "task_tree": tree})
    with pytest.raises(FatalCampaignError, match="task pack payment-run"):
        check_sources({"ident": ident, "sources": {"parts": parts}, "task_tree": "f" * 64})


def test_executor_ray_needs_an_address(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    code = main(["campaign", "--backend", "local", "--executor", "ray", "--ray-address", "", "--runs-root", str(tmp_path)])
    assert code == 2
    assert "--executor ray needs --ray-address" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
