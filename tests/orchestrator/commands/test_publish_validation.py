"""The validation record in the publication bundle (issue 41), end to end on the local backend.

The mini pack (tests/support/mini_pack.py) is validated with `orchestrate validate --strict
--record` (oracle twice, null, controls, the alt control) and run as a campaign (oracle, alt and
null at seed 0); `publish --validation RECORD` carries the record and `export --verify` checks it
against the campaign. A record altered, or one for other versions, is refused with a message
saying so, at publication and at verification; a resumed validation reuses the record.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mini_pack import mini_work

from orchestrator.cli import main
from orchestrator.publish.bundle import BUNDLE_FILE
from orchestrator.publish.verify import verify_bundle
from orchestrator.validation_record import load_record, record_self_sha256

pytestmark = pytest.mark.slow

LABEL = "pubval"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(work folder, record path, bundle path) of the validated, run and published mini pack."""
    work = tmp_path_factory.mktemp("pubval")
    with mini_work(work):
        record = work / "validation-record.json"
        assert main(["validate", "--tasks", "mini", "--seeds", "0", "--strict", "--backend", "local",
                     "--record", str(record)]) == 0
        code = main(["campaign", "--backend", "local", "--label", LABEL, "--runs-root", str(work / "runs"),
                     "--cells", "oracle:mini,alt:mini,null:mini", "--seeds", "0", "--reps", "1"])
        assert code == 0
        bundle = work / "bundle"
        assert main(["publish", LABEL, "--out", str(bundle), "--runs-root", str(work / "runs"),
                     "--validation", str(record)]) == 0
        yield work, record, bundle


def test_the_record_holds_every_control_with_hashes_and_versions(published):
    _work, path, _bundle = published
    record = load_record(path)
    assert record["complete"] and record["ok"] and record["options"]["strict"] and record["options"]["alt"]
    by = {(e["control"], e["seed"], e["condition"]): e for e in record["entries"]}
    for control in ("oracle#1", "oracle#2", "null", "alt", "neg:double", "neg:no_escalation"):
        entry = by[(control, 0, "clean")]
        assert entry["ok"] and len(entry["canonical_db"]) == 64, entry
    assert by[("null", 0, "clean")]["failed_checks"]  # the null policy's failed checks are recorded
    assert by[("alt", 0, "clean")]["failed_checks"] == []
    versions = record["versions"]
    assert set(versions["tasks"]) == {"mini"} and versions["tasks"]["mini"]["tree_sha256"]
    assert versions["backend"] == "local" and versions["project"]["commit"]
    assert {"erp", "agent"} <= set(versions["sources"]["images"]) and "orchestrator/grading" in versions["sources"]["parts"]


def test_the_bundle_carries_the_record_and_verifies(published):
    _work, path, bundle = published
    manifest = json.loads((bundle / BUNDLE_FILE).read_text())
    [item] = manifest["validation"]
    assert (bundle / item["file"]).read_bytes() == path.read_bytes()
    assert item["self_sha256"] == load_record(path)["self_sha256"] and item["file"] in manifest["files"]
    report = verify_bundle(bundle)
    assert report.ok, report.problems
    assert any("1 record(s) attest every task × seed × condition" in n for n in report.notes), report.notes
    assert main(["export", "--verify", str(bundle)]) == 0


def test_a_tampered_record_in_the_bundle_is_refused(published, tmp_path):
    _work, _path, bundle = published
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    [item] = json.loads((copy / BUNDLE_FILE).read_text())["validation"]
    rec = json.loads((copy / item["file"]).read_text())
    alt = next(e for e in rec["entries"] if e["control"] == "alt")
    alt["canonical_db"] = "0" * 64
    (copy / item["file"]).write_text(json.dumps(rec))
    report = verify_bundle(copy)
    assert f"{item['file']}: altered (its SHA-256 differs from the one in {BUNDLE_FILE})" in report.problems
    assert (f"{item['file']}: validation record refused: altered (its own hash, self_sha256, does not match "
            "its contents)") in report.problems
    # Re-hashed by a forger, it is still not the record the manifest names.
    rec["self_sha256"] = record_self_sha256(rec)
    (copy / item["file"]).write_text(json.dumps(rec))
    assert f"{item['file']}: not the validation record {BUNDLE_FILE} names (another self_sha256)" in verify_bundle(copy).problems
    assert main(["export", "--verify", str(copy)]) == 1


def _publish(work: Path, record: Path, out: Path, capsys) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PB_TASKS_ROOT", str(work / "tasks"))
        mp.setenv("PB_SCENARIO_CACHE", str(work / "cache"))
        code = main(["publish", LABEL, "--out", str(out), "--runs-root", str(work / "runs"), "--validation", str(record)])
    return code, capsys.readouterr().err


def test_publish_refuses_an_altered_record_or_one_for_other_versions(published, tmp_path, capsys):
    work, path, _bundle = published
    rec = json.loads(path.read_text())
    rec["entries"][0]["ok"] = not rec["entries"][0]["ok"]
    altered = tmp_path / "altered.json"
    altered.write_text(json.dumps(rec))
    code, err = _publish(work, altered, tmp_path / "b1", capsys)
    assert code == 2 and "altered (its own hash, self_sha256, does not match its contents)" in err, err

    other = json.loads(path.read_text())
    other["versions"]["tasks"]["mini"]["tree_sha256"] = "f" * 64
    other["self_sha256"] = record_self_sha256(other)
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, err = _publish(work, tmp_path / "other.json", tmp_path / "b2", capsys)
    assert code == 2 and "do not attest this campaign" in err and "task mini's tree_sha256 is 'fff" in err \
        and "(the record is for other versions)" in err, err
    assert not (tmp_path / "b2").exists() or not any((tmp_path / "b2").iterdir())

    failing = json.loads(path.read_text())
    next(e for e in failing["entries"] if e["control"] == "alt").update(ok=False, note="alt failed: escalated (x)")
    failing["self_sha256"] = record_self_sha256(failing)
    (tmp_path / "failing.json").write_text(json.dumps(failing))
    code, err = _publish(work, tmp_path / "failing.json", tmp_path / "b3", capsys)
    assert code == 2 and "control alt of task mini seed 0 (clean) did not hold: alt failed: escalated (x)" in err, err


def test_a_resumed_validation_reuses_the_record(published, tmp_path, capsys):
    work, path, _bundle = published
    record = tmp_path / "record.json"
    shutil.copyfile(path, record)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PB_TASKS_ROOT", str(work / "tasks"))
        mp.setenv("PB_SCENARIO_CACHE", str(work / "cache"))
        code = main(["validate", "--tasks", "mini", "--seeds", "0", "--strict", "--backend", "local",
                     "--record", str(record), "--resume"])
    out = capsys.readouterr().out
    assert code == 0 and "1 pack(s) already validated for these versions: mini" in out, out
    assert "mini seed 0" not in out  # no attempt ran
    again, first = load_record(record), load_record(path)
    assert again["complete"] and again["entries"] == first["entries"]
    assert again["disclosure"] == first["disclosure"] and again["disclosure"]["mini"].startswith("0 finding(s)")
