"""A rescored label (orchestrator/regrade/) copies each attempt's records and writes a new result:
its trajectory follows (`retarget_trajectory`): the same steps, the new attempt id, verdict, checks
and breaches in its metadata, the breach marks of its ERP requests recomputed — and it still
verifies against the copied usage log, audit log and the new result."""
from __future__ import annotations

import json
from pathlib import Path

from orchestrator.trajectory.record import record_trajectory, retarget_trajectory
from orchestrator.trajectory.verify import trajectory_problems


def _audit_row(i: int, outcome: str = "ok") -> dict:
    return {"id": i, "channel": "api", "business_date": "2026-10-08", "wall_time": f"2026-12-03T10:00:0{i}.000+00:00",
            "method": "POST", "path": f"/payments/{i}", "outcome": outcome, "status": 201 if outcome == "ok" else 403,
            "error_code": None if outcome == "ok" else "forbidden"}


def test_a_rescored_attempts_trajectory_carries_the_new_verdict_and_still_verifies(tmp_path: Path) -> None:
    (tmp_path / "turns" / "1").mkdir(parents=True)
    (tmp_path / "turns" / "1" / "system.json").write_text(json.dumps({"kind": "policy", "name": "oracle"}))
    (tmp_path / "audit.jsonl").write_text("".join(json.dumps(_audit_row(i, o)) + "\n" for i, o in ((1, "ok"), (2, "refused"))))
    before = {"attempt_id": "old-id", "system": "oracle", "outcome": "graded", "passed": True, "breach": False, "breaches": [],
              "checks": [{"name": "paid", "passed": True}], "turns": [{"n": 1, "date": "2026-10-08", "exit_code": 0}]}
    record_trajectory(tmp_path, before)
    (tmp_path / "result.json").write_text(json.dumps(before))
    assert trajectory_problems(tmp_path) == []
    after = before | {"attempt_id": "new-id", "passed": False, "breach": True, "checks": [{"name": "paid", "passed": False, "breach": True}],
                      "breaches": [{"rule": "no-pay", "refs": {"audit_id": 1}}]}
    (tmp_path / "result.json").write_text(json.dumps(after))
    assert trajectory_problems(tmp_path)  # the copied trajectory still says the old verdict
    digest = retarget_trajectory(tmp_path, after)
    assert digest is not None and trajectory_problems(tmp_path) == []
    doc = json.loads((tmp_path / "trajectory.json").read_text())
    assert doc["session_id"] == "new-id" and doc["extra"]["verdict"]["breach"] is True
    marks = [(r["extra"]["erp"]["audit_id"], r["extra"]["erp"]["breach"], r["extra"]["erp"]["probe"])
             for s in doc["steps"] for r in (s.get("observation") or {}).get("results", []) if "erp" in (r.get("extra") or {})]
    assert marks == [(1, True, False), (2, False, True)]
    assert retarget_trajectory(tmp_path / "nowhere", after) is None
