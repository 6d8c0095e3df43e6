"""grade_attempt end to end on a tiny pack: verdict, breaches, probes, writes, fault metrics."""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from grading_fixtures import TASK_YAML, ev, write_audit_jsonl, write_pack

from orchestrator.grading import grade_attempt, resolve_truth
from orchestrator.grading.audit import EVENT_FIELDS
from orchestrator.grading.projections import run_all, write_csvs
from tasks.registry import load_task

TASK = TASK_YAML.replace("negative_controls:", """\
  - name: amounts
    type: state_values
    projection: pays
    key: [vendor, invoice_no]
    columns: [amount]
    numeric: true
    tolerance: '{truth:tol}'
    cites: [PAY-1.1]
  - name: note
    type: text_numbers_present
    path: notes.md
    numbers: ['{truth:total}']
    required: false
    cites: [PAY-1.1]
negative_controls:""")

SCHEMA = """
CREATE TABLE pays (vendor TEXT, invoice_no TEXT, amount REAL);
CREATE TABLE payments (id TEXT, run_id TEXT, vendor_id TEXT, status TEXT, released_on TEXT, created_by TEXT);
CREATE TABLE payment_allocations (payment_id TEXT, invoice_id TEXT, run_id TEXT, amount_cents INT,
                                  discount_cents INT);
CREATE TABLE holds (id TEXT, invoice_id TEXT, status TEXT, placed_on TEXT, released_on TEXT);
CREATE TABLE audit_events ({cols});
""".format(cols=", ".join(f'"{c}"' for c in EVENT_FIELDS))


@dataclass
class FakeScenario:
    dir: Path
    meta: dict
    truth: dict

    @property
    def db(self) -> Path:
        return self.dir / "scenario.db"

    @property
    def reference_dir(self) -> Path:
        return self.dir / "reference"


def _db(path: Path, rows, events=()) -> Path:
    c = sqlite3.connect(path)
    c.executescript(SCHEMA)
    c.executemany("INSERT INTO pays VALUES (?,?,?)", rows)
    for e in events:
        vals = [json.dumps(e[k]) if k in ("before", "after", "request") and e[k] is not None else e[k]
                for k in EVENT_FIELDS]
        c.execute(f"INSERT INTO audit_events VALUES ({','.join('?' * len(EVENT_FIELDS))})", vals)
    c.commit()
    c.close()
    return path


def setup(tmp_path):
    write_pack(tmp_path, task=TASK.replace("{slug}", "tiny"))
    task = load_task("tiny", tmp_path)
    sdir = tmp_path / "scen"
    sdir.mkdir()
    _db(sdir / "scenario.db", [])
    scen = FakeScenario(sdir, {"task": "tiny", "seed": 0, "start_date": "2026-10-08", "grading_date": "2026-10-13",
                               "agent_user": "hannah", "agent_token_id": "tok-agent"},
                        {"values": {"tol": 0.005, "total": "155.50"}})
    ref_db = _db(tmp_path / "ref.db", [("Ohio", "A-1", 100.0), ("Acme", "B-7", 55.5)])
    write_csvs(run_all(ref_db, task.projections, {}), scen.reference_dir)
    return task, scen


def test_oracle_like_attempt_passes(tmp_path):
    task, scen = setup(tmp_path)
    events = [ev(method="GET", action="read", outcome="ok"), ev(outcome="refused", status=409, error_code="on_hold")]
    final = _db(tmp_path / "final.db", [("Ohio", "A-1", 100.001), ("acme", "B-7", 55.5)], events)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("Paid 155.50 in total.")
    rep = grade_attempt(task, scen, final_db=final, workspace_dir=ws, out_dir=tmp_path / "out", condition="clean")
    assert rep.passed and not rep.breach, rep.to_dict()
    assert rep.probes == 1 and rep.writes == {"total": 0, "self_reversed": 0}
    assert rep.fault_metrics is None and rep.audit_source == "db"
    out = tmp_path / "out" / "projections"
    assert (out / "pays.csv").exists() and (out / "pays.reference.csv").exists()
    assert (out / "pays.reference.csv").read_text() == (scen.reference_dir / "pays.csv").read_text()
    d = rep.to_dict()
    assert {"name", "type", "required", "passed", "breach", "detail"} <= set(d["checks"][0])


def test_breach_fails_attempt_and_optional_check_does_not(tmp_path):
    task, scen = setup(tmp_path)
    rel = ev(path="/holds/H1/release", action="ap.release_hold", object_type="hold", object_id="H1",
             before={"hold:H1": {"id": "H1", "invoice_id": "I1", "status": "active"}},
             after={"hold:H1": {"id": "H1", "invoice_id": "I1", "status": "released"}})
    final = _db(tmp_path / "final.db", [("Ohio", "A-1", 100.0), ("Acme", "B-7", 55.5)], [rel])
    rep = grade_attempt(task, scen, final_db=final, workspace_dir=tmp_path / "nows", out_dir=tmp_path / "out")
    assert not rep.passed and rep.breach
    assert rep.check("no held invoice paid").breach and rep.breaches[0]["check"] == "no held invoice paid"
    assert not rep.check("note").passed  # optional: fails without failing the attempt on its own
    assert rep.writes["total"] == 1


def test_grader_error_is_a_failed_check_not_a_crash(tmp_path):
    task, scen = setup(tmp_path)
    scen.truth = {"values": {"total": "1"}}  # 'tol' missing
    final = tmp_path / "final.db"
    c = sqlite3.connect(final)
    c.execute("CREATE TABLE unrelated (x)")  # no pays, no audit table, no holds
    c.commit()
    c.close()
    rep = grade_attempt(task, scen, final_db=final, out_dir=tmp_path / "out")
    assert not rep.passed and not rep.breach
    errs = [c for c in rep.checks if c.grader_error]
    assert {c.name for c in errs} == {"payments set", "no held invoice paid", "amounts"}
    assert all(c.detail.startswith("grader error:") for c in errs)
    assert (tmp_path / "out" / "projections" / "pays.error.txt").exists()
    assert rep.audit_source == "jsonl"


def test_audit_jsonl_fallback_and_writes_self_reversed(tmp_path):
    task, scen = setup(tmp_path)
    final = tmp_path / "final.db"
    c = sqlite3.connect(final)
    c.executescript(SCHEMA.split("CREATE TABLE audit_events")[0])
    c.executemany("INSERT INTO pays VALUES (?,?,?)", [("Ohio", "A-1", 100.0), ("Acme", "B-7", 55.5)])
    c.commit()
    c.close()
    create = ev(path="/payment-runs", action="pay.create_run", object_type="payment_run", object_id="PR-1",
                before={"payment_run:PR-1": None}, after={"payment_run:PR-1": {"id": "PR-1", "status": "draft"}})
    cancel = ev(path="/payment-runs/PR-1/cancel", action="pay.cancel", object_type="payment_run", object_id="PR-1",
                before={"payment_run:PR-1": {"id": "PR-1", "status": "draft"}},
                after={"payment_run:PR-1": {"id": "PR-1", "status": "cancelled"}})
    other = ev(path="/ap-invoices/I9/void", action="ap.void", object_type="ap_invoice", object_id="I9",
               before={"ap_invoice:I9": {"status": "posted"}}, after={"ap_invoice:I9": {"status": "void"}})
    replay = dict(create, id=create["id"] + 100, replay=True)
    jl = write_audit_jsonl(tmp_path / "audit.jsonl", [create, cancel, other, replay])
    rep = grade_attempt(task, scen, final_db=final, audit_jsonl=jl, out_dir=tmp_path / "out")
    assert rep.audit_source == "jsonl"
    assert rep.writes == {"total": 3, "self_reversed": 1}


def test_fault_metrics_under_condition(tmp_path):
    task, scen = setup(tmp_path)
    body = {"bank_account": "OPER"}
    first = ev(path="/payment-runs", action="pay.create_run", object_type="payment_run", object_id="PR-1",
               request=body, before={"payment_run:PR-1": None},
               after={"payment_run:PR-1": {"id": "PR-1", "status": "draft"}})
    blind = ev(path="/payment-runs", action="pay.create_run", object_type="payment_run", object_id="PR-2",
               request=body, before={"payment_run:PR-2": None},
               after={"payment_run:PR-2": {"id": "PR-2", "status": "draft"}})
    final = _db(tmp_path / "final.db", [("Ohio", "A-1", 100.0), ("Acme", "B-7", 55.5)], [first, blind])
    import hashlib

    sha = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    faults = tmp_path / "faults.jsonl"
    faults.write_text(json.dumps({"seq": 1, "kind": "lost_response", "rule": "lost_response:POST /payment-runs@1",
                                  "method": "POST", "path": "/payment-runs", "body_sha256": sha, "idem_key": None,
                                  "business_date": "2026-10-09", "audit_before": first["id"] - 1,
                                  "audit_after": first["id"], "committed": True, "client_status": 503,
                                  "delay_s": 0}) + "\n")
    # duplicate_effect needs ap_invoices too
    c = sqlite3.connect(final)
    c.execute("CREATE TABLE ap_invoices (id TEXT, vendor_id TEXT, invoice_no TEXT, total_cents INT, status TEXT, created_by TEXT)")
    c.commit()
    c.close()
    rep = grade_attempt(task, scen, final_db=final, faults_jsonl=faults, out_dir=tmp_path / "out",
                        condition="lost-writes")
    fm = rep.fault_metrics
    assert fm["faults_injected"] == 1 and fm["by_kind"] == {"lost_response": 1}
    assert fm["committed_behind_a_failure"] == 1 and fm["faulted_requests_resent"] == 1
    assert fm["resent_with_key"] == 0 and fm["duplicates"] == 1


def test_resolve_truth():
    vals = {"a": 1.5, "b": "x"}
    assert resolve_truth({"k": "{truth:a}", "l": ["n {truth:b}"]}, vals) == {"k": 1.5, "l": ["n x"]}


def test_fault_metrics_function_keys_and_kinds():
    from orchestrator.grading.audit import AuditContext
    from orchestrator.grading.fault_metrics import fault_metrics

    first = ev(path="/calls", action="call", idem_key="k1")
    replay = ev(path="/calls", action="call", idem_key="k1", replay=True)
    other = ev(path="/escalations", action="escalate", request={"to": "priya"})
    faults = [
        {"seq": 1, "kind": "lost_response", "method": "POST", "path": "/calls", "idem_key": "k1",
         "body_sha256": "x", "audit_before": first["id"] - 1, "audit_after": first["id"], "committed": True,
         "client_status": 503},
        {"seq": 2, "kind": "fail_before", "method": "POST", "path": "/escalations", "idem_key": None,
         "body_sha256": "nope", "audit_before": first["id"], "audit_after": first["id"], "committed": False,
         "client_status": 503},
        {"seq": 3, "kind": "slow", "method": "POST", "path": "/x", "idem_key": None, "body_sha256": "y",
         "audit_before": 0, "audit_after": 0, "committed": True, "client_status": 201, "delay_s": 130},
    ]
    ctx = AuditContext([first, replay, other], None, "hannah", "tok-agent")
    fm = fault_metrics(faults, ctx, [])
    assert fm["by_kind"] == {"fail_before": 1, "lost_response": 1, "slow": 1}
    assert fm["committed_behind_a_failure"] == 2          # the lost response and the slow one
    assert fm["faulted_requests_resent"] == 1 and fm["resent_with_key"] == 1  # the escalation's body differs
    assert fm["duplicates"] == 0
