"""Hot list routes render a whole page in a few set-based queries, with the same results as the
per-row view functions (which stay for single documents).

Checked on the payment-run scenario (the generated Northgate company, a year of history),
copied and enriched with the cases the per-row rules distinguish: dispute holds active and
released, dispute vendor requests naming our id or only the vendor's invoice number, closed
disputes, other request kinds, a vendor/invoice-number pair that matches only across two
vendors, proposed, released and voided payments, a voided invoice with payments, read marks
and attachments.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select

from erp_service.domains.comms import message_attachments, message_reads, message_view, message_views, messages
from erp_service.domains.payables import ap_invoices, disputed_invoice_ids, holds, invoice_out, invoice_outs, is_disputed
from erp_service.domains.payments import payment_allocations, payment_out, payment_runs, payments, payments_out, run_out, runs_out
from erp_service.domains.purchasing import vendor_requests
from erp_service.http.app import create_app
from erp_service.kernel.db import Database
from erp_service.kernel.identity import load_actor
from erp_service.kernel.tx import Tx

DAY = "2026-10-08"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Iterator[tuple[Database, dict[str, Any], dict[str, str]]]:
    """A copy of the payment-run scenario with the edge cases added; its agent's token and the
    ids of the added cases."""
    from orchestrator.scenarios.cache import ensure_scenario
    scen = ensure_scenario("payment-run", 0, reference=False)
    path = Path(tmp_path_factory.mktemp("list-perf")) / "scenario.db"
    shutil.copy(scen.dir / "scenario.db", path)
    meta = json.loads((scen.dir / "scenario.json").read_text())
    db = Database(path)
    try:
        cases = _add_cases(db, meta["agent_user"])
        yield db, meta, cases
    finally:
        db.close()


def _add_cases(db: Database, agent: str) -> dict[str, str]:
    """Rows written directly (the states matter, not how the API reaches them: several need
    a vendor's reply or a bank file) so every branch of the per-row rules is met."""
    with db.transaction() as conn:
        invs = [dict(r) for r in conn.execute(select(ap_invoices).order_by(ap_invoices.c.id)).mappings()]
        assert len(invs) > 100, "the scenario should have a realistic number of invoices"
        pairs = {(i["vendor_id"], i["invoice_no"]) for i in invs}
        # Vendor of one invoice + number of another vendor's invoice, matching no invoice.
        cross = next((a, b) for a in invs[20:] for b in invs[20:]
                     if a["vendor_id"] != b["vendor_id"] and (a["vendor_id"], b["invoice_no"]) not in pairs)
        cases = {"held": invs[0]["id"], "released_hold": invs[1]["id"], "price_hold": invs[2]["id"],
                 "by_number": invs[3]["id"], "answered": invs[4]["id"], "expedite": invs[5]["id"],
                 "proposed": invs[6]["id"], "partly_paid": invs[7]["id"], "voided_pay": invs[8]["id"],
                 "voided_invoice": invs[9]["id"], "cross_a": cross[0]["id"], "cross_b": cross[1]["id"]}
        by_id = {i["id"]: i for i in invs}

        def hold(n: int, inv: str, reason: str, status: str) -> None:
            conn.execute(holds.insert().values(id=f"HOLD-T{n}", invoice_id=inv, reason=reason, status=status,
                                               placed_by=agent, placed_on=DAY))

        hold(1, cases["held"], "dispute", "active")
        hold(2, cases["released_hold"], "dispute", "released")
        hold(3, cases["price_hold"], "price", "active")

        def request(n: int, kind: str, status: str, vendor: str, ap_invoice_id: str | None,
                    invoice_no: str | None) -> None:
            conn.execute(vendor_requests.insert().values(
                id=f"VREQ-T{n}", status=status, created_by=agent, created_on=DAY, kind=kind, vendor_id=vendor,
                ap_invoice_id=ap_invoice_id, invoice_no=invoice_no, note="test case"))

        inv = by_id[cases["by_number"]]
        request(1, "dispute", "open", inv["vendor_id"], None, inv["invoice_no"])
        request(2, "dispute", "answered", by_id[cases["answered"]]["vendor_id"], cases["answered"], None)
        request(3, "expedite", "open", by_id[cases["expedite"]]["vendor_id"], cases["expedite"], None)
        request(4, "dispute", "open", cross[0]["vendor_id"], None, cross[1]["invoice_no"])

        def payment(n: int, status: str, inv_id: str, cents: int) -> None:
            inv = by_id[inv_id]
            conn.execute(payments.insert().values(
                id=f"PAY-T{n}", status=status, created_by=agent, created_on=DAY, run_id="PR-T", vendor_id=inv["vendor_id"],
                vendor_account_id=f"VBA-{inv['vendor_id'][2:]}", bank_account_id="OPER", pay_date=DAY,
                amount_cents=cents, discount_cents=7, released_on=DAY if status != "proposed" else None))
            conn.execute(payment_allocations.insert().values(payment_id=f"PAY-T{n}", invoice_id=inv_id, run_id="PR-T",
                                                             amount_cents=cents, discount_cents=7))

        conn.execute(payment_runs.insert().values(id="PR-T", status="draft", created_by=agent, created_on=DAY,
                                                  pay_date=DAY, bank_account_id="OPER"))
        payment(1, "proposed", cases["proposed"], 1234)
        payment(2, "released", cases["partly_paid"], 1000)
        payment(3, "voided", cases["voided_pay"], 555)
        payment(4, "released", cases["voided_invoice"], 999)
        conn.execute(ap_invoices.update().where(ap_invoices.c.id == cases["voided_invoice"]).values(status="voided"))

        msgs = [r[0] for r in conn.execute(select(messages.c.id).order_by(messages.c.id))]
        conn.execute(message_reads.insert().values(message_id=msgs[0], user_id=agent, read_on=DAY))
        conn.execute(message_reads.insert().values(message_id=msgs[1], user_id="someone-else", read_on=DAY))
        for n in (1, 2):
            content = f"attachment {n}".encode()
            conn.execute(message_attachments.insert().values(
                message_id=msgs[0], n=n, filename=f"a{n}.txt", content_type="text/plain", size=len(content),
                sha256=hashlib.sha256(content).hexdigest(), content=content))
        cases["read_message"] = msgs[0]
    return cases


def _tx(conn, user: str) -> Tx:
    actor = load_actor(conn, user)
    assert actor is not None
    return Tx(conn=conn, actor=actor, business_date=DAY)


def _all(conn, table, order) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(select(table).order_by(order)).mappings()]


def test_invoice_page_equals_per_row_views(scenario):
    db, meta, cases = scenario
    with db.transaction() as conn:
        tx = _tx(conn, meta["agent_user"])
        invs = _all(conn, ap_invoices, ap_invoices.c.id)
        per_row = [invoice_out(tx, inv) for inv in invs]
        assert invoice_outs(tx, invs) == per_row
        # Pages of any size and position agree too (the set-based queries see only their page).
        for start, size in ((0, 1), (0, 50), (50, 50), (100, 1000), (3, 7)):
            assert invoice_outs(tx, invs[start:start + size]) == per_row[start:start + size]
        assert invoice_outs(tx, []) == []
        # The cases mean what they should, so the comparison covers every branch.
        flags = {v["id"]: v["disputed"] for v in per_row}
        assert disputed_invoice_ids(tx, invs) == {i for i, d in flags.items() if d}
        assert flags[cases["held"]] and flags[cases["by_number"]]
        for name in ("released_hold", "price_hold", "answered", "expedite", "cross_a", "cross_b"):
            assert not is_disputed(tx, cases[name]) and not flags[cases[name]], name
        by_id = {i["id"]: i for i in invs}
        opened = {v["id"]: v["open"] for v in per_row}
        assert opened[cases["voided_invoice"]] == 0
        assert opened[cases["partly_paid"]] < by_id[cases["partly_paid"]]["total_cents"] / 100
        assert any(v["open"] == 0 and v["status"] == "paid" for v in per_row)


def test_payment_and_run_pages_equal_per_row_views(scenario):
    db, meta, _ = scenario
    with db.transaction() as conn:
        tx = _tx(conn, meta["agent_user"])
        pays = _all(conn, payments, payments.c.id)
        per_row = [payment_out(tx, p) for p in pays]
        assert payments_out(tx, pays) == per_row
        assert payments_out(tx, pays[40:90]) == per_row[40:90]
        assert payments_out(tx, []) == []
        runs = _all(conn, payment_runs, payment_runs.c.id)
        per_run = [run_out(tx, r) for r in runs]
        assert runs_out(tx, runs) == per_run
        assert runs_out(tx, runs[2:5]) == per_run[2:5]
        assert runs_out(tx, []) == []
        assert any(r["payment_count"] > 1 for r in per_run)


def test_message_page_equals_per_row_views(scenario):
    db, meta, cases = scenario
    with db.transaction() as conn:
        tx = _tx(conn, meta["agent_user"])
        rows = _all(conn, messages, messages.c.id)
        per_row = [message_view(tx, r, full=False) for r in rows]
        assert message_views(tx, rows) == per_row
        assert message_views(tx, []) == []
        first = next(v for v in per_row if v["id"] == cases["read_message"])
        assert first["read"] and first["attachment_count"] == 2
        assert not per_row[1]["read"]           # read by someone else only


@contextmanager
def _counted(db: Database) -> Iterator[list[str]]:
    """The SQL statements the database runs inside the block."""
    statements: list[str] = []

    def count(conn, cursor, statement, params, context, executemany) -> None:
        statements.append(statement)
    event.listen(db.engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(db.engine, "before_cursor_execute", count)


@pytest.mark.parametrize("route, table, view", [
    ("/ap-invoices", ap_invoices, invoice_out),
    ("/payments", payments, payment_out),
    ("/payment-runs", payment_runs, run_out),
    ("/inbox", messages, lambda tx, row: message_view(tx, row, full=False)),
])
def test_list_routes_serve_the_per_row_views_in_a_constant_number_of_queries(scenario, route, table, view):
    db, meta, _ = scenario
    client = TestClient(create_app(db))
    headers = {"Authorization": f"Bearer {meta['agent_token']}"}
    assert client.get(route, headers=headers).status_code == 200   # warm: the token is resolved once
    counts, pages = {}, {}
    with _counted(db) as statements:
        for limit in (1, 50, 1000):
            statements.clear()
            r = client.get(route, params={"limit": limit}, headers=headers)
            assert r.status_code == 200, r.text
            counts[limit] = len(statements)
            pages[limit] = r.json()["data"]
    # Statements per request do not grow with the page: no per-row queries left.
    assert counts[1] == counts[50] == counts[1000] <= 12, counts
    items = pages[1000]["items"]
    assert len(items) == pages[1000]["total"] > (1 if route == "/inbox" else 10)
    with db.transaction() as conn:
        tx = _tx(conn, meta["agent_user"])
        rows = {r["id"]: r for r in conn.execute(select(table).where(table.c.id.in_([i["id"] for i in items])))
                .mappings()}
        expected = [view(tx, dict(rows[i["id"]])) for i in items]
    # The per-row views through JSON, as the agent sees them.
    assert items == json.loads(json.dumps(expected))
    assert pages[50]["items"] == items[:50]
    offset = client.get(route, params={"limit": 5, "offset": 7}, headers=headers).json()["data"]
    assert offset["items"] == items[7:12]
