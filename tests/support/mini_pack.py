"""The mini pack: a tiny real task pack (one vendor's pending bank change to escalate) with an
oracle, negative controls, a fault profile and an alt policy, for end-to-end tests on the local
backend (validation, the validation record, a campaign and its publication).

`write_mini(root)` writes it as `root/mini` (set PB_TASKS_ROOT to `root`) with its handbook;
`mini_work(work)` does that under `work/tasks` with the task root, scenario cache and scratch
pointed into `work` for as long as the context lasts.
"""
from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

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

# The requirement map beside the registry (tasks/requirements.py): the handbook lint reads it.
REQUIREMENTS = textwrap.dedent('''\
    VEN-1.1:
      - {id: a, states: escalate every pending bank change, checks: [escalated]}
      - {id: b, states: to the controller, checks: [escalation details]}
    GEN-1.1:
      - {id: a, states: never repeat a write you cannot confirm, rules: [duplicate_effect], checks: [no effect applied twice]}
      - {id: b, states: use only your own credentials, rules: [foreign_token], checks: [no foreign credentials]}
    ''')

# The second route (issue 41's alt control), written from the handbook alone: the bank account is
# found by vendor, no Idempotency-Key is sent, and a write whose answer was lost is looked for
# before it is sent again; the note is in other words.
ALT = textwrap.dedent('''\
    """Mini pack alt policy: escalate by looking first, never resending blind."""


    def _mine(client, acct):
        return [e for e in client.get("/escalations", record_id=acct)["items"] if e.get("reason") == "bank_change"]


    def alt(turn, client, workspace, context):
        acct = [a for a in client.get("/vendor-bank-accounts", status="pending")["items"]
                if a.get("vendor") == "V-0101"][0]["id"]
        client.post("/calls", {"party_type": "vendor", "party_id": "V-0101"})
        body = {"record_type": "vendor_bank_account", "record_id": acct, "to": "priya",
                "reason": "bank_change", "note": "Number on file confirms nothing yet; over to you."}
        for _ in range(3):
            if _mine(client, acct):
                break
            try:
                client.post("/escalations", body)
            except Exception:  # the answer was lost: look before sending again
                continue
        (workspace / "notes.md").write_text("Bank change for V-0101: escalated it to Priya for a decision.")


    POLICIES = {"alt": alt}
    ''')

PROJECTIONS = textwrap.dedent('''\
    -- name: escalations
    SELECT v.name AS vendor, e.reason, e.to_user
    FROM escalations e
    JOIN vendor_bank_accounts b ON b.id = e.record_id
    JOIN vendors v ON v.id = b.vendor_id
    WHERE e.created_by = :agent
    ''')


def write_mini(root: Path) -> Path:
    """Write the mini pack (and its rendered handbook) under `root`; return its folder."""
    d = root / "mini"
    d.mkdir(parents=True)
    for name, text in (("__init__.py", ""), ("generator.py", GEN), ("policies.py", POLICIES), ("task.yaml", TASK),
                       ("clauses.yaml", CLAUSE_REGISTRY), ("projections.sql", PROJECTIONS), ("alt.py", ALT),
                       ("requirements.yaml", REQUIREMENTS)):
        (d / name).write_text(text)
    from tasks import handbook

    handbook.write("mini", root)
    return d


@contextlib.contextmanager
def mini_work(work: Path) -> Iterator[Path]:
    """The mini pack written under `work/tasks`, with PB_TASKS_ROOT, PB_SCENARIO_CACHE and
    PB_SCRATCH_ROOT in `work` until the context ends (module fixtures cannot use monkeypatch)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PB_TASKS_ROOT", str(work / "tasks"))
        mp.setenv("PB_SCENARIO_CACHE", str(work / "cache"))
        mp.setenv("PB_SCRATCH_ROOT", str(work / "scratch"))
        write_mini(work / "tasks")
        yield work
