"""`orchestrate regrade BUNDLE --as NEW` (issue 33): a rescoring from a publication bundle.

A real local campaign of the mini pack (tests/support/mini_pack.py: the oracle and null at seed 0)
is published; a new version of the pack is written on disk (version 2, the two checks the null
attempt failed loosened to optional, so the scenario is built again from the new tree); the bundle is
rescored into a new label. The delta lists the null attempt's flip, the bundle stays byte-identical,
`export --verify` passes on the bundle, on the new label and on the new label's own bundle. What a
bundle cannot give back is listed, never guessed: attempts whose workspace the publisher withheld,
and a check of the new version that cannot read what the attempt retained (a projection over a
table the old database lacks). A bundle that does not verify is not rescored.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from mini_pack import mini_work

from orchestrator.campaign.export import verify_label
from orchestrator.cli import main
from orchestrator.identity import AttemptIdentity
from orchestrator.publish.verify import verify_bundle
from orchestrator.regrade.rescore import RegradeError, regrade_label

pytestmark = pytest.mark.slow  # one local campaign of two mini attempts, two bundles, two scenario builds

LABEL = "mini-src"
LOOSENED = ("escalated", "escalation details")  # the checks the null policy fails (it escalates nothing)


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _loosen(pack: Path) -> None:
    """Version 2 of the mini pack on disk: the LOOSENED checks made optional."""
    text = (pack / "task.yaml").read_text()
    assert text.startswith("id: mini\nversion: 1\n")
    text = text.replace("version: 1\n", "version: 2\n", 1)
    for name in LOOSENED:
        old = f"  - name: {name}\n"
        assert text.count(old) == 1
        text = text.replace(old, old + "    required: false\n")
    (pack / "task.yaml").write_text(text)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory):
    """(work folder, runs root, bundle) with PB_TASKS_ROOT on the mini pack, version 1 run and published."""
    work = tmp_path_factory.mktemp("regrade-bundle")
    with mini_work(work):
        runs = work / "runs"
        assert main(["campaign", "--backend", "local", "--label", LABEL, "--runs-root", str(runs),
                     "--cells", "oracle:mini,null:mini", "--seeds", "0", "--reps", "1"]) in (0, 1)
        lines = {json.loads(t)["identity"]["system"]: json.loads(t)
                 for t in (runs / LABEL / "attempts.jsonl").read_text().splitlines()}
        assert lines["oracle"]["passed"] is True
        assert lines["null"]["passed"] is False
        assert {c["name"] for c in lines["null"]["checks"] if not c["passed"] and c["required"]} == set(LOOSENED)
        bundle = work / "bundle"
        assert main(["publish", LABEL, "--out", str(bundle), "--runs-root", str(runs)]) == 0
        held = work / "bundle-held"
        assert main(["publish", LABEL, "--out", str(held), "--runs-root", str(runs), "--withhold", "workspace"]) == 0
        _loosen(work / "tasks" / "mini")
        yield work, runs, bundle, held


def test_a_bundle_is_rescored_under_a_new_version_and_stays_byte_identical(work):
    _work, runs, bundle, _held = work
    before = _tree(bundle)
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert main(["regrade", str(bundle), "--as", "mini-v2", "--runs-root", str(runs)]) == 0
    assert _tree(bundle) == before  # every file of the bundle byte-identical
    delta = json.loads((runs / "mini-v2" / "delta.json").read_text())
    assert delta["source_label"] == LABEL and delta["source_bundle_sha256"] == manifest["self_sha256"]
    assert (delta["regraded"], delta["not_regradable"], delta["missing"]) == (2, [], 0)
    assert delta["flipped_attempts"] == 1
    null = delta["cells"]["null:mini"]
    assert null["verdicts"] == {"to_pass": 1, "to_fail": 0, "unchanged": 0}
    for name in LOOSENED:
        [flip] = null["checks"][name]["now_optional"]
        assert flip["before"] == {**flip["before"], "passed": False, "required": True}
        assert flip["after"] == {**flip["after"], "passed": False, "required": False}
        assert flip["before"]["detail"] and flip["after"]["detail"]  # why, before and after
    assert delta["cells"]["oracle:mini"]["verdicts"] == {"to_pass": 0, "to_fail": 0, "unchanged": 1}
    # no other check moved in either attempt
    assert {name for e in delta["cells"].values() for name in e["checks"]} == set(LOOSENED)
    # the new label: version 2, marked as a rescoring of the bundle, and it verifies
    lines = [json.loads(t) for t in (runs / "mini-v2" / "attempts.jsonl").read_text().splitlines()]
    assert {ln["identity"]["task_version"] for ln in lines} == {"2"}
    assert {ln["identity"]["system"]: ln["passed"] for ln in lines} == {"oracle": True, "null": True}
    summary = json.loads((runs / "mini-v2" / "summary.json").read_text())
    assert summary["rescoring"]["source_label"] == LABEL
    assert summary["rescoring"]["source_bundle_sha256"] == manifest["self_sha256"]
    assert summary["rescoring"]["source_ledger_sha256"] == hashlib.sha256((bundle / "attempts.jsonl").read_bytes()).hexdigest()
    decl = json.loads((runs / "mini-v2" / "campaign.json").read_text())
    assert str(decl["rescoring"]["tasks"]["mini"]["before"]["version"]) == "1"
    assert str(decl["rescoring"]["tasks"]["mini"]["after"]["version"]) == "2"
    assert verify_label(runs, "mini-v2").ok
    assert main(["export", "--verify", "mini-v2", "--runs-root", str(runs)]) == 0
    assert main(["export", "--verify", str(bundle)]) == 0
    # its report says where it came from; its own bundle carries the delta and verifies
    assert main(["report", "mini-v2", "--runs-root", str(runs)]) == 0
    html = (runs / "mini-v2" / "report.html").read_text()
    assert "<h1>Rescoring mini-v2</h1>" in html and "publication bundle" in html and manifest["self_sha256"] in html
    out = runs.parent / "bundle-v2"
    assert main(["publish", "mini-v2", "--out", str(out), "--runs-root", str(runs)]) == 0
    assert json.loads((out / "delta.json").read_text())["flipped_attempts"] == 1
    assert main(["export", "--verify", str(out)]) == 0
    assert _tree(bundle) == before


def test_what_a_bundle_withholds_is_listed_not_guessed(work):
    _work, runs, _bundle, held = work
    done = regrade_label(runs, str(held), "mini-held")
    assert done.regraded == 0 and len(done.not_regradable) == 2
    assert all("withholds its workspace file" in x["reason"] for x in done.not_regradable), done.not_regradable
    cells = json.loads((runs / "mini-held" / "summary.json").read_text())["cells"]
    assert {c: (v["scored"], v["excluded"], v["task_errors"]) for c, v in cells.items()} == {
        "null:mini": (0, 1, 1), "oracle:mini": (0, 1, 1)}
    assert verify_label(runs, "mini-held").ok and verify_bundle(held).ok


def test_a_check_that_cannot_read_the_old_database_is_listed_not_guessed(work):
    """The new version projects a table the old scenario's database lacks: the grader cannot
    read it there (a grader error), so the attempt is listed with the reason, not failed."""
    _work, runs, bundle, _held = work
    from orchestrator.inputs import load_inputs

    def newer(ident: AttemptIdentity) -> tuple[Any, Any]:
        inputs = load_inputs(ident.cell, ident.seed)
        task = inputs.task
        task.projections = {**task.projections, "escalations": "SELECT vendor, reason, to_user FROM escalation_routes"}
        return task, inputs.scenario

    done = regrade_label(runs, str(bundle), "mini-newer", inputs=newer)
    assert done.regraded == 0 and len(done.not_regradable) == 2
    for item in done.not_regradable:
        assert "cannot read what the attempt retained" in item["reason"] and "escalation_routes" in item["reason"], item
    delta = json.loads((runs / "mini-newer" / "delta.json").read_text())
    assert [x["attempt_id"] for x in delta["not_regradable"]] == [x["attempt_id"] for x in done.not_regradable]
    assert verify_label(runs, "mini-newer").ok


def test_a_bundle_that_does_not_verify_is_not_rescored(work, tmp_path: Path):
    _work, runs, bundle, _held = work
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    result = next(copy.glob("null__mini/seed-0/rep-1/result.json"))
    result.write_text(result.read_text().replace('"passed": false', '"passed": true', 1))
    with pytest.raises(RegradeError, match="does not verify"):
        regrade_label(runs, str(copy), "after-tamper")
    assert not (runs / "after-tamper").exists()
    assert main(["regrade", str(copy), "--as", "after-tamper", "--runs-root", str(runs)]) == 2
