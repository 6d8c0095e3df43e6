"""Property: after any sequence of sales and receivables requests (accepted or refused), the
trial balance balances and the AR, unapplied-cash and inventory control accounts tie; a
refusal is always a Problem, never a crash."""
from __future__ import annotations

import tempfile
from pathlib import Path

from erp_sales_company import make_company
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from erp_service.domains import ledger
from erp_service.domains.receivables import (
    ApplyIn,
    CashReceiptIn,
    apply_receipt,
    ar_invoices,
    cash_receipts,
    invoice_shipment,
    record_receipt,
)
from erp_service.domains.sales import (
    ReleaseIn,
    SalesOrderIn,
    ShipmentIn,
    cancel_order,
    create_order,
    create_shipment,
    release_order,
    sales_orders,
    shipments,
)
from erp_service.kernel.errors import Problem

STEP = st.tuples(st.sampled_from(["order", "ship", "invoice", "receipt", "apply", "release", "cancel"]),
                 st.integers(0, 5), st.integers(1, 40))


def _ids(b, table, **where):
    with b.db.transaction() as conn:
        stmt = select(table.c.id).order_by(table.c.id)
        for k, v in where.items():
            stmt = stmt.where(table.c[k] == v)
        return [r[0] for r in conn.execute(stmt)]


def _run(b, user, action, fn) -> None:
    try:
        b.act(user, action, "/property", None, fn)
    except Problem:
        pass   # refused or invalid: audited, nothing changed


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(STEP, min_size=1, max_size=25))
def test_sales_sequences_keep_ties(steps):
    with tempfile.TemporaryDirectory() as tmp:
        company = make_company(Path(tmp))
        b = company.builder
        for kind, pick, n in steps:
            cust = ("C-0100", "C-0101")[pick % 2]
            if kind == "order":
                _run(b, "order_entry", "so.create", lambda tx: create_order(tx, SalesOrderIn(
                    customer_id=cust, lines=[{"item_id": "FV-100", "qty": n}])))  # noqa: B023  (_run calls it at once)
            elif kind == "ship" and (ids := _ids(b, sales_orders)):
                so = ids[pick % len(ids)]
                _run(b, "shipping", "so.ship", lambda tx: create_shipment(tx, ShipmentIn(
                    so_id=so, lines=[{"line_no": 1, "qty": max(1, n // 3)}])))  # noqa: B023  (_run calls it at once)
            elif kind == "invoice" and (ids := _ids(b, shipments)):
                sh = ids[pick % len(ids)]
                _run(b, "shipping", "ar.invoice", lambda tx: invoice_shipment(tx, sh))  # noqa: B023  (_run calls it at once)
            elif kind == "receipt":
                _run(b, "ar_clerk", "ar.cash", lambda tx: record_receipt(tx, CashReceiptIn(
                    customer_id=cust, amount=n * 37.5)))  # noqa: B023  (_run calls it at once)
            elif kind == "apply" and (rcs := _ids(b, cash_receipts)) and (invs := _ids(b, ar_invoices)):
                rc, inv = rcs[pick % len(rcs)], invs[n % len(invs)]
                _run(b, "ar_clerk", "ar.apply", lambda tx: apply_receipt(tx, rc, ApplyIn(  # noqa: B023  (_run calls it at once)
                    applications=[{"invoice_id": inv, "amount": round(n * 11.11, 2)}])))  # noqa: B023  (_run calls it at once)
            elif kind == "release" and (ids := _ids(b, sales_orders)):
                so = ids[pick % len(ids)]
                _run(b, "credit_manager", "so.release_hold", lambda tx: release_order(tx, so, ReleaseIn()))  # noqa: B023  (_run calls it at once)
            elif kind == "cancel" and (ids := _ids(b, sales_orders)):
                so = ids[pick % len(ids)]
                _run(b, "order_entry", "so.cancel", lambda tx: cancel_order(tx, so, None))  # noqa: B023  (_run calls it at once)
        with b.db.transaction() as conn:
            assert ledger.trial_balance(conn)["balanced"]
            ties = {t["control"]: t["tied"] for t in ledger.control_ties(conn)}
        assert ties["ar"] and ties["unapplied_cash"] and ties["inventory"], ties
        b.db.close()
