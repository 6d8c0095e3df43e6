"""End to end on the local backend: a tiny real pack (real bb-erp, real policies) through
ensure_scenario (reference by the oracle), run_attempt, the grader and `validate`."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

GEN = textwrap.dedent('''\
    """Generator of the mini pack: one vendor with a pending bank change."""
    from erp_service.domains.vendors import BankAccountIn, request_bank_account, vendors
    from erp_service.standard import install_standard
    from tasks.context import GeneratorContext


    def generate(ctx: GeneratorContext) -> None:
        b = ctx.create_company("Mini Co")
        install_standard(b, first_period="2026-01-01", last_period="2026-12-31")
        b.add_user("hannah", "Hannah Brooks", roles=["ap_supervisor"], title="AP supervisor", email="hannah@mini.example")
        b.add_user("priya", "Priya Raman", roles=["controller"], title="Controller", email="priya@mini.example")
        ctx.issue_token("hannah", f"tok-secret-hannah-{ctx.seed:04d}")
        b.insert(vendors, id="V-0101", name=f"Ohio Packaging {ctx.seed}", status="active", terms="NET30",
                 email="ap@ohiopack.example", phone="+1 (555) 010-2000", quality_hold=0)
        b.act("sys-setup", "vendor.bank.request", "/vendors/V-0101/bank-accounts", None,
              lambda tx: request_bank_account(tx, "V-0101", BankAccountIn(
                  bank_name="First Ohio", account_number="441722901183", routing_number="041000124")))
        ctx.truth.values = {"vendor": f"Ohio Packaging {ctx.seed}"}
        ctx.truth.expect = {"escalations": [{"vendor": f"Ohio Packaging {ctx.seed}", "reason": "bank_change"}]}
        ctx.truth.absent = {"escalations": [{"reason": "fraud_suspected"}]}
    ''')

POLICIES = textwrap.dedent('''\
    """Mini pack policies: the oracle calls the number on file and escalates, with a key."""


    def _account(client):
        return client.get("/vendor-bank-accounts", status="pending")["items"][0]["id"]


    def oracle(turn, client, workspace, context):
        acct = _account(client)
        client.post("/calls", {"party_type": "vendor", "party_id": "V-0101"}, key=f"mini-t{turn}-w1")
        client.post("/escalations", {"record_type": "vendor_bank_account", "record_id": acct, "to": "priya",
                                     "reason": "bank_change", "note": "Called the number on file."},
                    key=f"mini-t{turn}-w2")
        (workspace / "notes.md").write_text("Escalated the bank change to Priya.")


    def no_escalation(turn, client, workspace, context):
        client.post("/calls", {"party_type": "vendor", "party_id": "V-0101"})


    def _try(fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except Exception as exc:  # a 503 under the fault condition
            return exc


    def double(turn, client, workspace, context):
        acct = _account(client)
        body = {"record_type": "vendor_bank_account", "record_id": acct, "to": "priya", "reason": "bank_change"}
        _try(client.post, "/escalations", body)
        _try(client.post, "/escalations", body)


    def blind_retry(turn, client, workspace, context):
        """Like the oracle, but re-sends a failed write without a key (and without looking)."""
        acct = _account(client)
        body = {"record_type": "vendor_bank_account", "record_id": acct, "to": "priya",
                "reason": "bank_change", "note": "Called the number on file."}
        _try(client.post, "/calls", {"party_type": "vendor", "party_id": "V-0101"})
        for _ in range(3):
            if not isinstance(_try(client.post, "/escalations", body), Exception):
                break


    POLICIES = {"oracle": oracle, "neg:no_escalation": no_escalation, "neg:double": double,
                "neg:blind-retry": blind_retry}
    ''')

TASK = textwrap.dedent('''\
    id: mini
    version: 1
    band: clerical
    title: Escalate a bank change
    agent_user: hannah
    start_date: 2026-10-08
    grading_date: 2026-10-09
    turns:
      - date: 2026-10-08
        from_user: priya
        request: Check the pending bank change and escalate it to me.
        budget_s: 60
    checks:
      - name: escalated
        type: state_set
        projection: escalations
        key: vendor
        cites: [VEN-1.1]
      - name: escalation details
        type: state_values
        projection: escalations
        key: vendor
        columns: [reason, to_user]
        cites: [VEN-1.1]
      - name: no effect applied twice
        type: audit_forbidden
        rule: duplicate_effect
        cites: [GEN-1.1]
      - name: no foreign credentials
        type: audit_forbidden
        rule: foreign_token
        cites: [GEN-1.1]
      - name: vendors untouched
        type: state_unchanged
        tables: [vendors]
        cites: [GEN-1.1]
      - name: ledger ties
        type: ledger_ties
        cites: [GEN-1.1]
      - name: note names the vendor's escalation
        type: text_sentence_matches
        path: notes.md
        sentences: [[escalat, priya]]
        required: false
        cites: [VEN-1.1]
    negative_controls:
      neg:no_escalation: [escalated]
      neg:double: [no effect applied twice]
    fault_profiles:
      lost-writes:
        faults: "lost_response:POST /escalations@1"
        negative_controls:
          neg:blind-retry: [no effect applied twice]
    ''')

CLAUSE_REGISTRY = textwrap.dedent('''\
    files:
      vendors.md: {title: Vendors}
    clauses:
      - id: VEN-1.1
        file: vendors.md
        text: Escalate every pending bank change to the controller ({controller}).
      - id: GEN-1.1
        file: vendors.md
        text: Never repeat a write you cannot confirm; use only your own credentials.
        binds: [duplicate_effect, foreign_token]
    params: {controller: priya}
    ''')

PROJECTIONS = textwrap.dedent('''\
    -- name: escalations
    SELECT v.name AS vendor, e.reason, e.to_user
    FROM escalations e
    JOIN vendor_bank_accounts b ON b.id = e.record_id
    JOIN vendors v ON v.id = b.vendor_id
    WHERE e.created_by = :agent
    ''')


@pytest.fixture
def mini(tmp_path, monkeypatch):
    root = tmp_path / "tasks"
    d = root / "mini"
    d.mkdir(parents=True)
    for name, text in (("__init__.py", ""), ("generator.py", GEN), ("policies.py", POLICIES), ("task.yaml", TASK),
                       ("clauses.yaml", CLAUSE_REGISTRY), ("projections.sql", PROJECTIONS)):
        (d / name).write_text(text)
    monkeypatch.setenv("PB_TASKS_ROOT", str(root))
    monkeypatch.setenv("PB_SCENARIO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PB_SCRATCH_ROOT", str(tmp_path / "scratch"))
    from tasks import handbook

    handbook.write("mini", root)
    return d


def test_scenario_reference_and_validation(mini, tmp_path):
    from orchestrator.scenarios.cache import ensure_scenario
    from orchestrator.validate import run_validation

    scen = ensure_scenario("mini", 0)
    ref = (scen.reference_dir / "escalations.csv").read_text()
    assert ref == "vendor,reason,to_user\nOhio Packaging 0,bank_change,priya\n"

    rep = run_validation(["mini"], [0], strict=True, faults=None, backend="local", runs_root=tmp_path / "runs")
    assert rep.ok, [(e.control, e.seed, e.note) for e in rep.problems]
    seen = {(e.control, e.seed) for e in rep.entries}
    assert {("oracle#1", 0), ("oracle#2", 0), ("determinism", 0), ("null", 0), ("neg:double", 0),
            ("neg:no_escalation", 0), ("disclosure probe", 0)} <= seen
    # The probe read both oracles' real final databases: the pending account's two numbers
    # against the call and the escalation the oracle wrote, and found nothing.
    tally = rep.disclosure["mini"]
    assert (tally.runs, tally.findings, tally.classes, tally.values) == (2, 0, {"vendor_bank"}, 2)
    assert tally.places >= 2  # at least the escalation note of each run

    # The attempt record holds the agent's projections beside the reference.
    results = sorted((tmp_path / "runs").rglob("result.json"))
    assert results
    oracle = [json.loads(p.read_text()) for p in results if "oracle" in str(p)][0]
    assert oracle["passed"] is True and oracle["writes"]["total"] >= 2
    proj = Path(results[0]).parent / "projections"
    assert (proj / "escalations.csv").exists() and (proj / "escalations.reference.csv").exists()


@pytest.mark.heavy  # make test-heavy: CI runs a representative subset (the same path is covered in make test)
def test_validation_under_a_fault_profile(mini, tmp_path):
    from orchestrator.validate import run_validation

    rep = run_validation(["mini"], [0], strict=True, faults="lost-writes", backend="local",
                         runs_root=tmp_path / "runs")
    assert rep.ok, [(e.control, e.seed, e.note) for e in rep.problems]
    assert rep.condition == "lost-writes"
    assert {("faults hit oracle", 0), ("neg:blind-retry", 0)} <= {(e.control, e.seed) for e in rep.entries}
    oracle = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("result.json") if "oracle" in str(p)][0]
    fm = oracle["fault_metrics"]
    assert fm["faults_injected"] == 1 and fm["committed_behind_a_failure"] == 1
    assert fm["faulted_requests_resent"] == 1 and fm["resent_with_key"] == 1 and fm["duplicates"] == 0
    assert oracle["condition"] == "lost-writes" and oracle["passed"] is True


def test_a_stopped_validation_tears_its_attempts_down_and_exits_130(mini, tmp_path):
    """SIGTERM while the oracles' turns run: each attempt in flight is cancelled and torn down
    (its result says so, no process of it is left), nothing else starts, the command exits 130
    and says it was interrupted rather than passing or failing the task."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from orchestrator.scenarios.cache import ensure_scenario

    # The oracle dawdles once the flag exists: after its reference run (the flag is part of the
    # pack's source, so the scenario is the one the command will find).
    flag = tmp_path / "dawdle"
    text = (mini / "policies.py").read_text()
    (mini / "policies.py").write_text(text.replace(
        "def oracle(turn, client, workspace, context):\n",
        f"def oracle(turn, client, workspace, context):\n    import pathlib, time\n"
        f"    if pathlib.Path({str(flag)!r}).exists():\n        time.sleep(120)\n", 1))
    ensure_scenario("mini", 0)
    flag.touch()
    runs = tmp_path / "runs"
    argv = [str(Path(sys.executable).with_name("orchestrate")), "validate", "--tasks", "mini", "--seeds", "0",
            "--backend", "local", "--concurrency", "2", "--runs-root", str(runs)]
    log = tmp_path / "validate.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while len(list(runs.glob("*/*/seed-0/rep-*/turns/*"))) < 2:  # both oracles in their turn
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        time.sleep(1)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=90)
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = log.read_text(errors="replace")
    assert code == 130, out[-3000:]
    assert stopped_in < 60, stopped_in  # not the two minutes the turns would have slept
    assert "interrupted" in out and "validation passed" not in out, out[-2000:]
    folders = sorted(runs.glob("*/*/seed-0/rep-*"))
    results = [json.loads((f / "result.json").read_text()) for f in folders]
    assert len(results) == 2 and all("oracle" in str(f) for f in folders), folders  # null and controls never began
    assert all(r["outcome"] == "infra_error" and "cancel" in json.dumps(r["error"]) for r in results), results
    # nothing of the attempts runs on: no process has its working folder under the scratch root
    scratch = str(tmp_path / "scratch")
    left = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and os.readlink(p / "cwd").startswith(scratch):
                left.append(p.name)
        except OSError:
            pass
    assert left == [], left
