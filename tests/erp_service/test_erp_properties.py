"""Properties of the whole agent API over random request sequences against a real company
database (finance, supply and sales master data): reads, valid writes, writes that break a hard
control or come from the wrong user, invalid writes (unknown fields, wrong types, impossible
dates, missing fields, malformed JSON), idempotent replays, key reuse with another body, and
clock advances. After every request:

- no 5xx, and every error is application/problem+json with a code;
- a refused or invalid request, a read and a replay change no business table;
- the audit log only grows: exactly one new row per request, ids increasing, earlier rows
  unchanged;
- after an accepted request the trial balance balances and every control account with a
  subledger equals it.

Example counts are modest by default; ERP_PROPERTY_EXAMPLES=200 for a long run.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from erp_supply_support import supply_company
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from erp_service.domains import ledger
from erp_service.domains.inventory import AdjustmentIn, create_adjustment
from erp_service.domains.sales import customers, price_list_items, price_lists
from erp_service.http.app import create_app
from erp_service.kernel.db import Database
from erp_service.kernel.schema import audit_events, metadata
from erp_service.sim import World, advance

EXAMPLES = int(os.environ.get("ERP_PROPERTY_EXAMPLES", "10"))
WORLD = {"payment_run_approver": {"user": "controller", "approve_after_days": 1, "release": True}}
NOT_BUSINESS = {"audit_events", "idempotency"}
VENDORS = ["V-0101", "V-0102", "V-0103", "V-0104", "V-0999"]          # V-0103 inactive, V-0999 unknown
ITEMS = ["BR-0750", "SL-0101", "VB-1000", "NOPE-1"]
CUSTOMERS = ["C-0100", "C-0101", "C-0102", "C-1001", "C-0999"]        # C-0102 inactive; C-1001 Northgate
START = "2026-10-08"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The supply company plus customers, a price list and finished stock; closed, copied per example."""
    c = supply_company(tmp_path_factory.mktemp("props-template"))
    b = c.builder
    b.insert(price_lists, id="PL-STD", name="Standard")
    b.insert(price_list_items, price_list_id="PL-STD", item_id="VB-1000", min_qty=0, unit_price=58.0)
    b.insert(customers, id="C-0100", name="Parent Supply", status="active", terms="NET30", credit_limit_cents=20_000_00,
             credit_hold=0, price_list_id="PL-STD", tax_status="exempt", tax_rate=0.0)
    b.insert(customers, id="C-0101", name="Valley Plumbing", status="active", terms="NET30", credit_limit_cents=2_000_00,
             credit_hold=0, price_list_id="PL-STD", tax_status="taxable", tax_rate=7.25, parent_id="C-0100")
    b.insert(customers, id="C-0102", name="Closed Co", status="inactive", terms="NET30", credit_limit_cents=0,
             credit_hold=0, tax_status="exempt", tax_rate=0.0)
    for item, qty in (("VB-1000", 40), ("BR-0750", 300), ("SL-0101", 50)):
        lot = "L-1" if item == "SL-0101" else None
        b.act("inventory_controller", "inv.adjust", "/inventory/adjustments", None,
              lambda tx, item=item, qty=qty, lot=lot: create_adjustment(tx, AdjustmentIn(
                  item_id=item, warehouse_id="WH-MAIN", location_id="WH-MAIN-A01", qty=qty, reason="found",
                  lot_no=lot, expiry="2027-06-30" if lot else None)))
    b.db.close()
    return c.path, dict(c.tokens)


# --- observing the database -----------------------------------------------------------------


def business_hash(db: Database) -> str:
    """SHA-256 of every business table (not the audit log or the idempotency store), rows sorted,
    wall-clock columns left out."""
    digest = hashlib.sha256()
    with db.transaction() as conn:
        for name, table in sorted(metadata.tables.items()):
            if name in NOT_BUSINESS:
                continue
            cols = [c for c in table.c if not (c.name == "wall_time" or c.name.endswith("_wall"))]
            digest.update(name.encode())
            for row in sorted(json.dumps(list(r), default=str) for r in conn.execute(select(*cols))):
                digest.update(row.encode())
    return digest.hexdigest()


def audit_rows(db: Database, after: int) -> list[dict[str, Any]]:
    with db.transaction() as conn:
        return [dict(r) for r in conn.execute(select(audit_events).where(audit_events.c.id > after)
                                              .order_by(audit_events.c.id)).mappings()]


def assert_ties(db: Database, why: Any) -> None:
    with db.transaction() as conn:
        tb = ledger.trial_balance(conn)
        assert tb["balanced"], (why, tb)
        for row in ledger.control_ties(conn):
            if row["subledger"] is not None:
                assert row["tied"], (why, row)


# --- the generated requests -----------------------------------------------------------------

WRITE_KINDS = [
    "outbox", "call", "escalate", "invoice", "validate", "approve_inv", "hold", "release_hold", "void",
    "run", "run_add", "run_submit", "run_approve", "run_release", "run_cancel", "je", "je_post",
    "bank_change", "bank_verify", "requisition", "req_submit", "po", "po_send", "receipt", "sales_order",
    "shipment", "adjustment", "vendor_patch",
]
KINDS = WRITE_KINDS + ["read", "read", "read", "replay", "reuse", "malformed", "advance"]
STAFF = ["ap_clerk", "ap_supervisor", "ap_supervisor2", "controller", "staff_accountant", "buyer",
         "purchasing_manager", "receiver", "order_entry", "shipping", "inventory_controller", "staff", "auditor",
         "analyst"]

STEP = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, 20),        # user: < 14 means the usual user for the kind, else a random staff member
    st.integers(0, 30),        # which earlier document
    st.integers(1, 400_000),   # an amount or quantity seed
    st.integers(0, 12),        # mutation: 0-7 none, 8 unknown field, 9 wrong type, 10 impossible date,
                               # 11 missing field, 12 negative number
    st.booleans(),             # send an Idempotency-Key
)

READS = ["/vendors", "/ap-invoices", "/payment-runs", "/journal-entries", "/purchase-orders", "/receipts",
         "/sales-orders", "/inventory/on-hand", "/inbox", "/outbox", "/calls", "/escalations", "/audit",
         "/reports/trial-balance", "/reports/control-ties", "/reports/ap-aging", "/reports/grni",
         "/reports/on-hand", "/items", "/customers", "/requisitions", "/holds-nowhere"]
QUERIES = [{}, {"limit": 50}, {"offset": 3, "limit": 1}, {"limit": 0}, {"limit": 5000}, {"offset": -1},
           {"limit": "abc"}, {"as_of": "2026-10-99"}, {"as_of": "2026-10-08"}, {"status": "approved"}]


@dataclass
class Run:
    """One example's client, database and what it has created so far."""

    db: Database
    cl: TestClient
    tokens: dict[str, str]
    ids: dict[str, list[str]] = field(default_factory=dict)
    keyed: list[tuple[str, str, str, Any, str, Any]] = field(default_factory=list)   # accepted keyed writes
    world: dict = field(default_factory=lambda: WORLD)
    day: str = START
    audit_last: int = 0
    audit_seen: dict[int, str] = field(default_factory=dict)
    n: int = 0

    def pick(self, kind: str, i: int) -> str:
        xs = self.ids.get(kind) or []
        return xs[i % len(xs)] if xs and i % 7 else f"{kind.upper()}-NOPE"

    def remember(self, kind: str, value: str | None) -> None:
        if value:
            self.ids.setdefault(kind, []).append(str(value))


def write_request(run: Run, kind: str, i: int, n: int) -> tuple[str, str, str, Any]:
    """(method, path, usual user, body) of a valid-looking write of `kind`."""
    amount = round(n / 100, 2)
    qty = 1 + n % 60
    day = run.day
    if kind == "outbox":
        return "POST", "/outbox", "ap_clerk", {"to": "controller", "subject": f"Note {run.n}", "body": "See attached."}
    if kind == "call":
        return "POST", "/calls", "ap_supervisor", {"party_type": "vendor", "party_id": VENDORS[n % 5],
                                                   **({"number": "(614) 555-0199"} if n % 3 == 0 else {})}
    if kind == "escalate":
        return "POST", "/escalations", "ap_supervisor", {"record_type": "vendor", "record_id": VENDORS[n % 4],
                                                         "to": "controller", "reason": "other", "note": "please look"}
    if kind == "invoice":
        date = (dt.date.fromisoformat(day) - dt.timedelta(days=n % 60)).isoformat()
        return "POST", "/ap-invoices", "ap_clerk", {
            "vendor": VENDORS[n % 5], "invoice_no": f"P{run.n}-{n}", "invoice_date": date,
            "lines": [{"kind": "other", "description": "services", "amount": amount, "account": "6200"}]}
    if kind == "validate":
        return "POST", f"/ap-invoices/{run.pick('inv', i)}/validate", "ap_clerk", None
    if kind == "approve_inv":
        return "POST", f"/ap-invoices/{run.pick('inv', i)}/approve", "ap_supervisor", None
    if kind == "hold":
        return "POST", f"/ap-invoices/{run.pick('inv', i)}/holds", "ap_supervisor", {
            "reason": ["price", "dispute", "vendor"][n % 3]}
    if kind == "release_hold":
        return "POST", f"/holds/{run.pick('hold', i)}/release", "ap_supervisor", None
    if kind == "void":
        return "POST", f"/ap-invoices/{run.pick('inv', i)}/void", "ap_supervisor", None
    if kind == "run":
        return "POST", "/payment-runs", "ap_supervisor", {"pay_date": day}
    if kind == "run_add":
        body: dict[str, Any] = {"invoice": run.pick("inv", n)}
        if n % 3 == 0:
            body["amount"] = amount
        return "POST", f"/payment-runs/{run.pick('run', i)}/invoices", "ap_supervisor", body
    if kind in ("run_submit", "run_cancel"):
        return "POST", f"/payment-runs/{run.pick('run', i)}/{kind[4:]}", "ap_supervisor", None
    if kind in ("run_approve", "run_release"):
        return "POST", f"/payment-runs/{run.pick('run', i)}/{kind[4:]}", "controller", None
    if kind == "je":
        return "POST", "/journal-entries", "staff_accountant", {
            "entry_date": day, "memo": "accrual", "lines": [{"account": ["6100", "1200", "2000"][n % 3], "debit": amount},
                                                            {"account": "1000", "credit": amount}]}
    if kind == "je_post":
        return "POST", f"/journal-entries/{run.pick('je', i)}/post", "staff_accountant", None
    if kind == "bank_change":
        return "POST", f"/vendors/{VENDORS[n % 5]}/bank-accounts", "ap_supervisor", {
            "bank_name": "Ridge Bank", "account_number": f"7{n:08d}", "routing_number": "021000021"}
    if kind == "bank_verify":
        return "POST", f"/vendor-bank-accounts/{run.pick('vba', i)}/verify", "ap_supervisor2", {"note": "called"}
    if kind == "requisition":
        return "POST", "/requisitions", "staff", {"need_by": "2026-10-30", "note": "stock", "lines": [
            {"item_id": ITEMS[n % 4], "qty": qty, "unit_price": 4.5, "vendor_id": VENDORS[n % 2]}]}
    if kind == "req_submit":
        return "POST", f"/requisitions/{run.pick('req', i)}/submit", "staff", None
    if kind == "po":
        return "POST", "/purchase-orders", "purchasing_manager", {
            "vendor_id": VENDORS[n % 5], "warehouse_id": "WH-MAIN", "need_by": "2026-10-20",
            "lines": [{"item_id": ITEMS[n % 4], "qty": qty * 10}]}
    if kind == "po_send":
        return "POST", f"/purchase-orders/{run.pick('po', i)}/send", "purchasing_manager", None
    if kind == "receipt":
        return "POST", "/receipts", "receiver", {"po_id": run.pick("po", i), "packing_slip": f"PS-{n}",
                                                 "lines": [{"po_line": 1, "qty_received": qty}]}
    if kind == "sales_order":
        return "POST", "/sales-orders", "order_entry", {"customer_id": CUSTOMERS[n % len(CUSTOMERS)],
                                                        "lines": [{"item_id": "VB-1000", "qty": 1 + n % 12}]}
    if kind == "shipment":
        return "POST", "/shipments", "shipping", {"so_id": run.pick("so", i)}
    if kind == "adjustment":
        return "POST", "/inventory/adjustments", "inventory_controller", {
            "item_id": ITEMS[n % 2], "warehouse_id": "WH-MAIN", "location_id": "WH-MAIN-A01",
            "qty": (qty if n % 2 else -qty), "reason": "count"}
    if kind == "vendor_patch":
        return "PATCH", f"/vendors/{VENDORS[n % 5]}", "purchasing_manager", {"phone": f"+1 555 {n % 10000:04d}"}
    raise AssertionError(kind)


CREATES = {"/ap-invoices": "inv", "/payment-runs": "run", "/journal-entries": "je", "/requisitions": "req",
           "/purchase-orders": "po", "/receipts": "rcv", "/sales-orders": "so", "/shipments": "shp"}


def mutate(body: Any, code: int, n: int) -> tuple[Any, bool]:
    """A broken copy of `body` and whether it must be refused as invalid."""
    if not isinstance(body, dict) or code < 8:
        return body, False
    body = json.loads(json.dumps(body))
    keys = sorted(body)
    if code == 8:
        body["unexpected_field"] = n
        return body, True
    if code == 9 and keys:
        body[keys[n % len(keys)]] = [{"x": n}]
        return body, False      # some fields take a list: only "no 5xx, nothing changed if refused"
    if code == 10:
        dates = [k for k in keys if k.endswith("_date") or k in ("need_by", "as_of")]
        if dates:
            body[dates[0]] = ["2026-10-99", "2026-02-30", "2026-13-01", "99/99/2026"][n % 4]
            return body, True
        return body, False
    if code == 11 and keys:
        body.pop(keys[n % len(keys)])
        return body, False
    if code == 12:
        for line in body.get("lines") or []:
            for k in ("amount", "qty", "debit", "qty_received"):
                if k in line:
                    line[k] = -abs(line[k]) - 1
        return body, False
    return body, False


# --- running a sequence ---------------------------------------------------------------------


def send(run: Run, method: str, path: str, user: str, *, body: Any = None, raw: bytes | None = None,
         key: str | None = None, params: dict | None = None):
    """One request with the invariants every request must keep; returns the response."""
    before = business_hash(run.db)
    headers = {"Authorization": f"Bearer {run.tokens[user]}"}
    if key:
        headers["Idempotency-Key"] = key
    kwargs: dict[str, Any] = {"headers": headers, "params": params or {}}
    if raw is not None:
        kwargs["content"] = raw
        headers["content-type"] = "application/json"
    elif body is not None:
        kwargs["json"] = body
    r = run.cl.request(method, path, **kwargs)
    why = (method, path, user, body if raw is None else raw, r.status_code, r.text[:300])
    assert r.status_code < 500, why
    if r.status_code >= 400:
        assert r.headers["content-type"].startswith("application/problem+json"), why
        assert r.json()["code"], why
    if r.status_code >= 400 or method == "GET" or r.headers.get("Idempotent-Replay") == "true":
        assert business_hash(run.db) == before, why
    (row,) = check_audit(run, why, expect_new=1)
    # The request's own audit row says what happened; refusals of hard controls are probes.
    assert (row["method"], row["path"], row["status"]) == (method, path, r.status_code), (why, row)
    if r.status_code >= 400:
        code = r.json()["code"]
        assert row["error_code"] == code, (why, row)
        if r.status_code in (403, 409) and code != "idempotency_key_reused":
            assert row["outcome"] == "refused", (why, row)
    else:
        assert row["outcome"] == "ok" and bool(row["replay"]) == (r.headers.get("Idempotent-Replay") == "true"), row
        assert row["action"] == ("read" if method == "GET" else row["action"]) and row["idem_key"] == key, row
    if r.status_code < 400 and method != "GET":
        assert_ties(run.db, why)
    return r


def check_audit(run: Run, why: Any, expect_new: int | None) -> list[dict[str, Any]]:
    """Earlier audit rows unchanged; new ones after them (exactly `expect_new` if given).
    Returns the new rows."""
    with run.db.transaction() as conn:
        seen_ids = sorted(run.audit_seen)
        now = {r["id"]: json.dumps(dict(r), sort_keys=True, default=str) for r in conn.execute(
            select(audit_events).where(audit_events.c.id.in_(seen_ids))).mappings()} if seen_ids else {}
    assert now == run.audit_seen, why
    new = audit_rows(run.db, run.audit_last)
    if expect_new is not None:
        assert len(new) == expect_new, (why, [(e["method"], e["path"], e["status"]) for e in new])
    ids = [e["id"] for e in new]
    assert ids == sorted(ids) and all(i > run.audit_last for i in ids), why
    # Keep a bounded sample of rows to re-check (the most recent ones and the very first).
    for e in new[-3:]:
        run.audit_seen[e["id"]] = json.dumps(e, sort_keys=True, default=str)
    if new:
        run.audit_last = ids[-1]
    return new


def step(run: Run, s: tuple) -> None:
    kind, u, i, n, mut, keyed = s
    run.n += 1
    if kind == "read":
        path = READS[n % len(READS)]
        if n % 5 == 0:
            path = {0: f"/ap-invoices/{run.pick('inv', i)}", 1: f"/payment-runs/{run.pick('run', i)}",
                    2: f"/purchase-orders/{run.pick('po', i)}", 3: f"/sales-orders/{run.pick('so', i)}"}[i % 4]
        send(run, "GET", path, STAFF[u % len(STAFF)] if u >= 10 else "auditor", params=QUERIES[n % len(QUERIES)])
        return
    if kind == "advance":
        before = max(run.audit_last, 0)
        run.day = (dt.date.fromisoformat(run.day) + dt.timedelta(days=1 + n % 3)).isoformat()
        advance(run.db, World(run.world), run.day)
        check_audit(run, ("advance", run.day), expect_new=None)
        assert run.audit_last >= before
        assert_ties(run.db, ("advance", run.day))
        return
    if kind == "replay":
        if not run.keyed:
            return
        method, path, user, body, key, data = run.keyed[i % len(run.keyed)]
        r = send(run, method, path, user, body=body, key=key)
        assert r.headers.get("Idempotent-Replay") == "true" and r.json()["data"] == data, (path, r.text)
        return
    if kind == "reuse":
        if not run.keyed:
            return
        _, _, user, _, key, _ = run.keyed[i % len(run.keyed)]
        r = send(run, "POST", "/outbox", user, key=key,
                 body={"to": "controller", "subject": f"Other body {run.n}", "body": "different"})
        assert r.status_code == 409 and r.json()["code"] == "idempotency_key_reused", r.text
        return
    method, path, usual, body = write_request(run, WRITE_KINDS[n % len(WRITE_KINDS)] if kind == "malformed" else kind,
                                              i, n)
    user = usual if u < 14 else STAFF[u % len(STAFF)]
    if kind == "malformed":
        r = send(run, method, path, user, raw=[b'{"subject": ', b"not json", b"\xff\xfe{}", b"[1,"][n % 4])
        assert r.status_code == 422, r.text
        return
    body, must_fail = mutate(body, mut, n)
    key = f"k-{run.n}-{n}" if keyed else None
    r = send(run, method, path, user, body=body, key=key)
    if must_fail:
        assert r.status_code == 422, (method, path, body, r.text)
    if r.status_code < 400:
        data = r.json()["data"]
        if method == "POST" and path in CREATES:
            run.remember(CREATES[path], data.get("id"))
        if kind == "hold" and data.get("holds"):
            run.remember("hold", data["holds"][-1]["id"])
        if kind == "bank_change":
            run.remember("vba", data.get("id"))
        if key:
            run.keyed.append((method, path, user, body, key, data))


@pytest.fixture(scope="module")
def northgate(tmp_path_factory) -> tuple[Path, dict[str, str], dict]:
    """A copy of the payment-run scenario (the generated Northgate company, a year of history),
    with a token for one user of each staff role (keyed by role name, as in the test company)."""
    from erp_service.kernel.identity import user_roles
    from erp_service.setup import CompanyBuilder
    from orchestrator.scenarios.cache import ensure_scenario
    scen = ensure_scenario("payment-run", 0, reference=False)
    path = Path(tmp_path_factory.mktemp("props-northgate")) / "company.db"
    shutil.copy(scen.dir / "scenario.db", path)
    world = json.loads((scen.dir / "world.json").read_text())
    db = Database(path)
    try:
        with db.transaction() as conn:
            by_role: dict[str, str] = {}
            for role, user in conn.execute(select(user_roles.c.role_id, user_roles.c.user_id)
                                           .order_by(user_roles.c.role_id, user_roles.c.user_id)):
                if not user.startswith("sys-"):
                    by_role.setdefault(role, user)
        builder = CompanyBuilder(db)
        tokens = {}
        for role in STAFF:
            user = by_role.get(role.rstrip("2")) if not role.endswith("2") else by_role.get("controller")
            user = user or by_role["admin"]
            secret = f"prop-{role}-secret"
            builder.add_token(user, secret, f"tok-prop-{role}")
            tokens[role] = secret
    finally:
        db.close()
    return path, tokens, world


def run_sequence(src: Path, tokens: dict[str, str], world: dict, workdir: Path, steps: list[tuple]) -> None:
    """Copy `src` and play `steps` against it, checking the invariants after each request."""
    path = workdir / "company.db"
    shutil.copy(src, path)
    db = Database(path)
    try:
        run = Run(db=db, cl=TestClient(create_app(db, World(world)), raise_server_exceptions=False),
                  tokens=tokens, world=world)
        run.day = db.business_date()
        check_audit(run, "start", expect_new=None)
        for s in steps:
            step(run, s)
    finally:
        db.close()


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(steps=st.lists(STEP, min_size=3, max_size=30))
def test_random_request_sequences_keep_invariants(template, tmp_path_factory, steps):
    run_sequence(template[0], template[1], WORLD, Path(tmp_path_factory.mktemp("props-run")), steps)


@pytest.mark.slow
@settings(max_examples=max(3, EXAMPLES // 2), deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(steps=st.lists(STEP, min_size=3, max_size=25))
def test_random_sequences_on_the_northgate_scenario(northgate, tmp_path_factory, steps):
    """The same properties on the realistic generated company (its own world file drives the
    counterparties on advances)."""
    src, tokens, world = northgate
    run_sequence(src, tokens, world, Path(tmp_path_factory.mktemp("props-ng")), steps)


class LatestRun(Run):
    """A run that always picks the most recent document of a kind."""

    def pick(self, kind: str, i: int) -> str:
        xs = self.ids.get(kind) or []
        return xs[-1] if xs else f"{kind.upper()}-NOPE"


def test_every_write_kind_accepted_at_least_once(template, tmp_path):
    """The generator's bodies are valid: a fixed sequence makes every kind succeed, so random
    sequences do explore accepted writes (not only refusals)."""
    path = tmp_path / "company.db"
    shutil.copy(template[0], path)
    db = Database(path)
    try:
        run = LatestRun(db=db, cl=TestClient(create_app(db, World(WORLD)), raise_server_exceptions=False),
                        tokens=template[1])
        check_audit(run, "start", expect_new=None)
        order = ["outbox", "call", "escalate", "invoice", "validate", "approve_inv", "hold", "release_hold",
                 "run", "run_add", "run_submit", "run_approve", "run_release", "invoice", "void", "run",
                 "run_cancel", "je", "je_post", "bank_change", "bank_verify", "requisition", "req_submit", "po",
                 "po_send", "receipt", "sales_order", "shipment", "adjustment", "vendor_patch"]
        refused = []
        for kind in order:
            # 100000: 1,000.00 from V-0101; 99999: to 6100; 20: V-0101, BR-0750, C-0100, small quantities.
            n = {"invoice": 100_000, "run_add": 100_000, "je": 99_999}.get(kind, 20)
            run.n += 1
            method, p, user, body = write_request(run, kind, 0, n)
            r = send(run, method, p, user, body=body)
            if r.status_code >= 400:
                refused.append((kind, r.text[:200]))
                continue
            data = r.json()["data"]
            if method == "POST" and p in CREATES:
                run.remember(CREATES[p], data.get("id"))
            if kind == "hold":
                run.remember("hold", data["holds"][-1]["id"])
            if kind == "bank_change":
                run.remember("vba", data.get("id"))
        assert not refused, refused
    finally:
        db.close()
