"""Trajectories in the publication bundle (issue 32), on the shared publication campaign
(tests/support/publish_campaign.py: scripted policies, a fault condition, negative controls and a
model-calling command system, local backend; built once per test process).

Every published attempt carries its trajectory (redacted like every other file: no key, no
restricted value) and the bundle verifies. Altering one step fails `export --verify` naming the
trajectory and the step — even when the forger also rewrites the manifest's hashes to match,
because each step is checked against the published gateway usage log, audit log and result."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import main
from orchestrator.publish.bundle import BUNDLE_FILE, manifest_self_sha256
from orchestrator.publish.files import sha256_file
from orchestrator.publish.verify import verify_bundle
from orchestrator.trajectory.atif import atif_problems

pytestmark = pytest.mark.slow

MODEL = "tiny-model-agent__payment-run/seed-0/rep-1"
POLICY = "oracle__payment-run/seed-0/rep-1"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    from publish_campaign import campaign

    c = campaign(tmp_path_factory)
    out = tmp_path_factory.mktemp("traj-bundles") / "pub-traj"
    code = main(["publish", c.label, "--out", str(out), "--runs-root", str(c.runs), "--systems", str(c.work / "systems.yaml"),
                 "--model-access", str(c.work / "access.yaml"), "--model-access", str(c.model_access)])
    assert code == 0
    return c, out


def test_every_attempt_publishes_a_valid_redacted_trajectory(bundle) -> None:
    c, out = bundle
    folders = sorted(p.parent for p in out.rglob("result.json"))
    assert len(folders) == 7
    for folder in folders:
        doc = json.loads((folder / "trajectory.json").read_text())
        assert atif_problems(doc) == [], folder
        assert doc["extra"]["verdict"]["outcome"] == json.loads((folder / "result.json").read_text())["outcome"]
    model = json.loads((out / MODEL / "trajectory.json").read_text())
    usage = [json.loads(x) for x in (out / MODEL / "gateway.jsonl").read_text().splitlines()]
    assert [s["extra"]["gateway"]["seq"] for s in model["steps"] if "gateway" in (s.get("extra") or {})] == [r["seq"] for r in usage]
    policy = json.loads((out / POLICY / "trajectory.json").read_text())
    assert all(s.get("llm_call_count") == 0 for s in policy["steps"] if s["source"] == "agent")
    blob = "".join(p.read_text(errors="replace") for p in out.rglob("trajectory.json"))
    assert c.real_key not in blob and "pbv-" not in blob
    report = verify_bundle(out)
    assert report.ok, report.problems


def test_days_carry_the_faults_and_requests_carry_probes_and_breaches(bundle) -> None:
    _c, out = bundle
    seen_faults = seen_breaches = 0
    for folder in sorted(p.parent for p in out.rglob("trajectory.json")):
        doc = json.loads((folder / "trajectory.json").read_text())
        audit = [json.loads(x) for x in (folder / "audit.jsonl").read_text().splitlines()]
        faults = [json.loads(x) for x in (folder / "faults.jsonl").read_text().splitlines() if x.strip()]
        results = [(s, r) for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])]
        # Every injected fault opens its business day (system steps only).
        assert sorted(r["extra"]["fault"]["seq"] for s, r in results if "fault" in (r.get("extra") or {}) and s["source"] == "system") == \
            sorted(f["seq"] for f in faults), folder
        erp = [r["extra"]["erp"] for _, r in results if "erp" in (r.get("extra") or {})]
        assert [e["audit_id"] for e in erp if e["probe"]] == [a["id"] for a in audit if a["channel"] == "api" and a["outcome"] == "refused"]
        result = json.loads((folder / "result.json").read_text())
        cited = {i for b in result.get("breaches") or [] for i in (b.get("refs") or {}).get("audit_ids") or []}
        cited |= {(b.get("refs") or {}).get("audit_id") for b in result.get("breaches") or []} - {None}
        api_ids = {a["id"] for a in audit if a["channel"] == "api"}
        assert {e["audit_id"] for e in erp if e["breach"]} == cited & api_ids, folder
        seen_faults += len(faults)
        seen_breaches += len(cited & api_ids)
    assert seen_faults and seen_breaches  # the campaign has both: the checks above were not vacuous


def _forge(copy: Path, rel: str, change: Any) -> None:
    """Alter one step and rewrite the manifest so every hash matches, as a careful forger would."""
    path = copy / rel
    doc = json.loads(path.read_text())
    change(doc["steps"])
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    manifest = json.loads((copy / BUNDLE_FILE).read_text())
    manifest["files"][rel]["sha256"] = sha256_file(path)
    manifest["self_sha256"] = manifest_self_sha256(manifest)
    (copy / BUNDLE_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _model_step(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return next(s for s in steps if "gateway" in (s.get("extra") or {}))


def _erp(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r["extra"]["erp"] for s in steps for r in (s.get("observation") or {}).get("results", []) if "erp" in (r.get("extra") or {}))


CHANGES = [
    (MODEL, "fewer completion tokens", lambda st: _model_step(st)["metrics"].update(completion_tokens=1), "metrics"),
    (MODEL, "a cheaper call", lambda st: _model_step(st)["metrics"].update(cost_usd=0.0), "metrics"),
    (MODEL, "a model step dropped", lambda st: st.remove(_model_step(st)), "step"),
    (POLICY, "a refused request shown as ok", lambda st: _erp(st).update(outcome="refused"), "ERP request"),
    (POLICY, "a request to another path", lambda st: _erp(st).update(path="/payments"), "ERP request"),
]


@pytest.mark.parametrize(("rel", "name", "change", "what"), CHANGES, ids=[c[1] for c in CHANGES])
def test_altering_one_step_fails_verification(bundle, tmp_path: Path, capsys, rel: str, name: str, change: Any, what: str) -> None:
    _c, out = bundle
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    _forge(copy, f"{rel}/trajectory.json", change)
    assert main(["export", "--verify", str(copy)]) == 1, f"{name} went unnoticed"
    err = capsys.readouterr().err
    assert f"{rel}/trajectory.json: " in err and what in err, err[:1500]


def test_a_trajectory_swapped_for_another_attempts_fails(bundle, tmp_path: Path) -> None:
    _c, out = bundle
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    rel = f"{POLICY}/trajectory.json"
    shutil.copy(copy / "null__payment-run/seed-0/rep-1/trajectory.json", copy / rel)
    manifest = json.loads((copy / BUNDLE_FILE).read_text())
    other = manifest["files"]["null__payment-run/seed-0/rep-1/trajectory.json"]
    manifest["files"][rel] = dict(other)
    manifest["self_sha256"] = manifest_self_sha256(manifest)
    (copy / BUNDLE_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    problems = verify_bundle(copy).problems
    assert any(p.startswith(f"{rel}: not the trajectory its result.json records") for p in problems), problems
