"""The scenario cache: generation, reference, truth checks, atomic and concurrent creation."""
from __future__ import annotations

import shutil
import sqlite3
import threading

import pytest
from grading_fixtures import TINY_GENERATOR, write_generator, write_pack

from orchestrator.scenarios.cache import check_truth, ensure_scenario, task_tree_hash

# The tiny pack's generator, logging each generation (so the tests see the cache work).
from orchestrator.scenarios.folder import ScenarioError

GEN = TINY_GENERATOR + (
    "    import os\n"
    "    with open(os.environ['GEN_LOG'], 'a') as fh:\n"
    "        fh.write(f'{ctx.seed}\\n')\n"
)


@pytest.fixture
def pack(tmp_path, monkeypatch):
    root = tmp_path / "tasks"
    monkeypatch.setenv("PB_TASKS_ROOT", str(root))
    monkeypatch.setenv("GEN_LOG", str(tmp_path / "gen.log"))
    d = write_pack(root)
    write_generator(d, GEN)
    return d


def oracle_runner(rows):
    calls = []

    def runner(task, scenario, scratch):
        calls.append(scenario.seed)
        scratch.mkdir(parents=True, exist_ok=True)
        final = scratch / "final.db"
        shutil.copyfile(scenario.db, final)
        c = sqlite3.connect(final)
        c.executemany("INSERT INTO pays VALUES (?,?,?)", rows)
        c.commit()
        c.close()
        return final

    runner.calls = calls
    return runner


def test_build_and_cache(pack, tmp_path):
    run = oracle_runner([("Ohio", "A-1", 100.0), ("Acme", "B-7", 55.5)])
    cache = tmp_path / "cache"
    s = ensure_scenario("tiny", 3, cache_root=cache, reference_run=run)
    assert s.dir.parent == cache / "tiny" and s.dir.name.endswith("-seed-3")
    assert s.db.exists() and s.meta["seed"] == 3 and s.turns[0].request == "Pay the vendors."
    assert (s.reference_dir / "pays.csv").read_text() == "vendor,invoice_no,amount\nAcme,B-7,55.5\nOhio,A-1,100\n"
    assert (s.handbook_dir / "payments.md").exists()
    again = ensure_scenario("tiny", 3, cache_root=cache, reference_run=run)
    assert again.dir == s.dir and run.calls == [3]
    assert (pack.parent.parent / "gen.log").read_text() == "3\n"
    assert not [p for p in (cache / "tiny").iterdir() if p.name.startswith(".tmp-")]


def test_changed_pack_gets_a_new_scenario(pack, tmp_path):
    run = oracle_runner([("Ohio", "A-1", 100.0)])
    h1 = task_tree_hash("tiny")
    a = ensure_scenario("tiny", 0, cache_root=tmp_path / "c", reference_run=run)
    (pack / "task.yaml").write_text((pack / "task.yaml").read_text().replace("title: A tiny pack", "title: Tiny"))
    assert task_tree_hash("tiny") != h1
    b = ensure_scenario("tiny", 0, cache_root=tmp_path / "c", reference_run=run)
    assert a.dir != b.dir


def test_truth_mismatch_is_a_task_bug(pack, tmp_path):
    run = oracle_runner([("Held Co", "H-1", 5.0)])
    with pytest.raises(ScenarioError) as exc:
        ensure_scenario("tiny", 0, cache_root=tmp_path / "c", reference_run=run)
    msg = str(exc.value)
    assert "task bug" in msg and '"vendor": "Ohio"' in msg and "missing" in msg
    assert "present but truth.json says absent" in msg
    kept = tmp_path / "c" / "tiny" / f".failed-{task_tree_hash('tiny')[:16]}-seed-0"
    assert f"kept in {kept}" in msg and (kept / "scenario" / "scenario.db").exists()
    # Nothing half-built is left as a scenario.
    assert [p.name for p in (tmp_path / "c" / "tiny").iterdir() if not p.name.startswith(".")] == []


def test_oracle_failure_leaves_nothing(pack, tmp_path):
    def runner(task, scenario, scratch):
        raise ScenarioError("the oracle's reference run did not finish")

    with pytest.raises(ScenarioError, match="did not finish"):
        ensure_scenario("tiny", 0, cache_root=tmp_path / "c", reference_run=runner)
    assert [p for p in (tmp_path / "c" / "tiny").iterdir() if not p.name.startswith(".")] == []


def test_concurrent_callers_build_once(pack, tmp_path):
    run = oracle_runner([("Ohio", "A-1", 100.0)])
    out, errs = [], []

    def go():
        try:
            out.append(ensure_scenario("tiny", 1, cache_root=tmp_path / "c", reference_run=run).dir)
        except Exception as exc:  # pragma: no cover - reported below
            errs.append(exc)

    threads = [threading.Thread(target=go) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errs and len(set(out)) == 1 and run.calls == [1]


def test_scenario_without_reference_then_with(pack, tmp_path):
    run = oracle_runner([("Ohio", "A-1", 100.0)])
    s = ensure_scenario("tiny", 2, cache_root=tmp_path / "c", reference=False)
    assert not s.reference_dir.exists()
    s2 = ensure_scenario("tiny", 2, cache_root=tmp_path / "c", reference_run=run)
    assert s2.dir == s.dir and (s2.reference_dir / "pays.csv").exists()
    assert (pack.parent.parent / "gen.log").read_text() == "2\n"


def test_check_truth_numbers_and_unknown_columns():
    from orchestrator.grading.projections import Table

    ref = {"p": Table(["v", "amt"], [{"v": "A", "amt": "10.5"}])}
    assert check_truth(ref, {"expect": {"p": [{"v": "a", "amt": 10.5}]}}) == []
    assert "columns ['x'] not in" in check_truth(ref, {"expect": {"p": [{"x": 1}]}})[0]
    assert "no such reference projection" in check_truth(ref, {"absent": {"q": [{"v": "A"}]}})[0]
