"""The validation record (orchestrator/validation_record.py): its own hash, resuming from it,
and the checks that it attests a campaign (the versions, the coverage, every control held)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.validate import Report
from orchestrator.validation_record import (
    RecordError,
    build_record,
    campaign_problems,
    load_record,
    record_self_sha256,
    reusable,
    write_record,
)

OPTIONS = {"tasks": ["a", "b"], "seeds": [0, 1], "strict": True, "faults": "all", "alt": True}
SOURCES = {"parts": {"orchestrator/grading": "g1", "erp_service": "e1"}, "images": {"erp": "pb-erp:1", "agent": "pb-agent:1"}}


def versions(**over):
    v = {"tasks": {"a": {"version": "1", "tree_sha256": "ta"}, "b": {"version": "2", "tree_sha256": "tb"}},
         "sources": SOURCES, "project": {"commit": "c0ffee"}, "backend": "docker", "image_digests": {}}
    return {**v, **over}


def report(bad: tuple[str, int, str, str] | None = None, infra: bool = False) -> Report:
    """A complete matrix of tasks a and b, seeds 0 and 1, clean and lost-writes (for a)."""
    rep = Report(["a", "b"], [0, 1], "all")
    for task, conds in (("a", ["clean", "lost-writes"]), ("b", ["clean"])):
        rep.add(task, "handbook", None, [])
        for seed in (0, 1):
            for cond in conds:
                for control in ("oracle#1", "oracle#2", "determinism", "null", "neg:x", "alt"):
                    probs = ["alt failed: c1 (no)"] if (task, seed, cond, control) == bad else []
                    res = {"outcome": "infra_error" if infra and probs else "graded", "passed": not probs,
                           "checks": [{"name": "c1", "passed": not probs}], "hashes": {"canonical_db": f"h-{control}"}}
                    rep.add(task, control, seed, probs, condition=cond, result=res)
    return rep


def declaration(**over):
    d = {"cells": [{"cell": "m:a", "task": "a", "condition": "clean"}, {"cell": "m:a+lost-writes", "task": "a",
                                                                       "condition": "lost-writes"},
                   {"cell": "m:b", "task": "b", "condition": "clean"}],
         "seeds": [0, 1], "tasks": versions()["tasks"], "sources": SOURCES, "backend": "docker"}
    return {**d, **over}


def test_a_record_holds_every_entry_and_its_own_hash(tmp_path):
    rec = build_record(report(), versions(), OPTIONS, ["a", "b"])
    assert rec["complete"] and rec["ok"] and rec["problems"] == 0
    alt = [e for e in rec["entries"] if e["control"] == "alt" and e["task"] == "a"]
    assert len(alt) == 4 and alt[0] == {"task": "a", "seed": 0, "condition": "clean", "control": "alt", "ok": True,
                                        "note": "ok", "failed_checks": [], "canonical_db": "h-alt", "infra": False}
    path = tmp_path / "r.json"
    write_record(path, rec)
    assert load_record(path) == rec and rec["self_sha256"] == record_self_sha256(rec)
    # Altered in any way without its hash: refused.
    data = json.loads(path.read_text())
    data["entries"][5]["ok"] = not data["entries"][5]["ok"]
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="altered"):
        load_record(path)
    path.write_text("{")
    with pytest.raises(RecordError, match="not valid JSON"):
        load_record(path)
    path.write_text(json.dumps({"kind": "x"}))
    with pytest.raises(RecordError, match="not a validation record"):
        load_record(path)


def test_an_unfinished_record_is_not_complete():
    rec = build_record(report(), versions(), OPTIONS, ["a"])
    assert not rec["complete"] and not rec["ok"]
    rep = report()
    rep.interrupted = True
    assert not build_record(rep, versions(), OPTIONS, ["a", "b"])["complete"]


def test_resume_reuses_finished_packs_of_the_same_versions_only():
    rec = build_record(report(), versions(), OPTIONS, ["a", "b"])
    reuse, why = reusable(rec, versions(), OPTIONS)
    assert why == "" and sorted(reuse) == ["a", "b"] and len(reuse["a"]) == 1 + 2 * 2 * 6
    assert reuse["a"][-1].control == "alt" and reuse["a"][-1].canonical == "h-alt"
    # pack b changed since: only a is reused
    changed = versions(tasks={**versions()["tasks"], "b": {"version": "2", "tree_sha256": "tb2"}})
    assert sorted(reusable(rec, changed, OPTIONS)[0]) == ["a"]
    # an unfinished pack is not reused
    assert sorted(reusable(build_record(report(), versions(), OPTIONS, ["b"]), versions(), OPTIONS)[0]) == ["b"]
    # a pack with an attempt lost to the infrastructure runs again; one with a real failure is kept
    assert sorted(reusable(build_record(report(("a", 1, "clean", "alt"), infra=True), versions(), OPTIONS, ["a", "b"]),
                           versions(), OPTIONS)[0]) == ["b"]
    assert sorted(reusable(build_record(report(("a", 1, "clean", "alt")), versions(), OPTIONS, ["a", "b"]),
                           versions(), OPTIONS)[0]) == ["a", "b"]
    # other options, other shared sources or another backend: nothing is reused, and why
    assert reusable(rec, versions(), {**OPTIONS, "seeds": [0]}) == ({}, "it was made with other options "
                                                                        "(tasks, seeds, --strict, --faults)")
    assert reusable(rec, versions(sources={**SOURCES, "parts": {"erp_service": "e2"}}), OPTIONS)[1] == \
        "its sources differ from this checkout's"
    assert reusable(rec, versions(backend="local"), OPTIONS)[1] == "its backend differs from this checkout's"


def test_a_record_attests_a_campaign_it_covers_for_its_versions():
    rec = build_record(report(), versions(), OPTIONS, ["a", "b"])
    assert campaign_problems([("R", rec)], declaration()) == []
    # a campaign of a part of it (one task, one seed) is attested too
    assert campaign_problems([("R", rec)], declaration(cells=[{"task": "b", "condition": "clean"}], seeds=[1],
                                                       tasks={"b": versions()["tasks"]["b"]})) == []
    assert campaign_problems([], declaration()) == ["no validation record given"]


@pytest.mark.parametrize("change, message", [
    (dict(tasks={"a": {"version": "1", "tree_sha256": "OTHER"}, "b": {"version": "2", "tree_sha256": "tb"}}),
     "R: task a's tree_sha256 is 'ta' there, the campaign ran 'OTHER' (the record is for other versions)"),
    (dict(tasks={"a": {"version": "9", "tree_sha256": "ta"}, "b": {"version": "2", "tree_sha256": "tb"}}),
     "R: task a's version is '1' there, the campaign ran '9' (the record is for other versions)"),
    (dict(sources={**SOURCES, "images": {"erp": "pb-erp:2", "agent": "pb-agent:1"}}),
     "R: the erp image is 'pb-erp:1' there, the campaign ran 'pb-erp:2' (the record is for other images)"),
    (dict(sources={**SOURCES, "parts": {"orchestrator/grading": "g2", "erp_service": "e1"}}),
     "R: shared source orchestrator/grading differs from the campaign's (the record is for other versions)"),
    (dict(seeds=[0, 1, 2]), "R: does not cover task a seed 2 condition clean (no oracle#1 control)"),
    (dict(cells=[{"task": "b", "condition": "lost-writes"}]),
     "R: does not cover task b seed 0 condition lost-writes (no oracle#1 control)"),
    (dict(tasks={**versions()["tasks"], "c": {"version": "1", "tree_sha256": "tc"}}), "no validation record covers task c"),
])
def test_a_record_for_other_versions_or_cells_is_refused(change, message):
    rec = build_record(report(), versions(), OPTIONS, ["a", "b"])
    assert message in campaign_problems([("R", rec)], declaration(**change))


def test_every_control_must_have_held_and_the_record_be_strict_and_of_the_backend():
    rec = build_record(report(("a", 1, "lost-writes", "alt")), versions(), OPTIONS, ["a", "b"])
    assert campaign_problems([("R", rec)], declaration()) == [
        "R: control alt of task a seed 1 (lost-writes) did not hold: alt failed: c1 (no)"]
    # b alone is still attested by it
    assert campaign_problems([("R", rec)], declaration(tasks={"b": versions()["tasks"]["b"]},
                                                       cells=[{"task": "b", "condition": "clean"}])) == []
    lax = build_record(report(), versions(), {**OPTIONS, "strict": False}, ["a", "b"])
    assert campaign_problems([("R", lax)], declaration()) == ["R: not a --strict validation",
                                                              "no validation record covers task a",
                                                              "no validation record covers task b"]
    local = build_record(report(), versions(backend="local"), OPTIONS, ["a", "b"])
    assert "R: validated on the 'local' backend; the campaign ran in containers (validate with --backend docker)" in \
        campaign_problems([("R", local)], declaration())
    assert campaign_problems([("R", local)], declaration(backend="local")) == []
    unfinished = build_record(report(), versions(), OPTIONS, ["a"])
    assert campaign_problems([("R", unfinished)], declaration()) == ["R: task b's validation was not finished"]


def test_several_records_attest_a_campaign_together(tmp_path: Path):
    only_a = build_record(report(), versions(), OPTIONS, ["a"])
    only_b = build_record(report(), versions(tasks={"b": versions()["tasks"]["b"]}), OPTIONS, ["b"])
    assert campaign_problems([("A", only_a), ("B", only_b)], declaration()) == []


def test_a_resumed_record_keeps_the_reused_packs_notes_and_probe_tallies():
    from orchestrator.validation_record import carried_over

    rep = report()
    rep.notes += ["a: clauses no check enforces: X-1", "b seed 0: disclosure probe: oracle#1: 1 finding", "attempt records: /t"]
    rec = build_record(rep, versions(), OPTIONS, ["a", "b"])
    rec["disclosure"] = {"a": "0 finding(s) in 4", "b": "1 finding(s) in 2"}
    carried = carried_over(rec, {"b"})
    assert carried == {"notes": ["b seed 0: disclosure probe: oracle#1: 1 finding"], "disclosure": {"b": "1 finding(s) in 2"}}
    fresh = Report(["a", "b"], [0, 1], "all")
    again = build_record(fresh, versions(), OPTIONS, ["a", "b"], carried)
    assert again["notes"] == carried["notes"] and again["disclosure"] == {"b": "1 finding(s) in 2"}


def test_the_validate_command_exits_by_what_its_problems_are(capsys):
    from orchestrator.cli import main
    from orchestrator.commands.validate import exit_code

    assert exit_code(report()) == 0
    assert exit_code(report(("a", 0, "clean", "alt"))) == 1
    assert exit_code(report(("a", 0, "clean", "alt"), infra=True)) == 3  # no verdict: run again
    both = report(("a", 0, "clean", "alt"), infra=True)
    both.add("b", "handbook", None, ["clause X cited, not shown"])
    assert exit_code(both) == 1
    stopped = report(("a", 0, "clean", "alt"))
    stopped.interrupted = True
    assert exit_code(stopped) == 130
    assert main(["validate", "--tasks", "payment-run", "--backend", "local", "--resume"]) == 2
    assert "--resume needs --record FILE" in capsys.readouterr().err
