"""Property test over random sequences of supply-side requests (receipts, refusals, reversals,
transfers, adjustments, work-order issues, reversals, completions, closes): never a 5xx, a
refused request changes nothing, the audit log only grows, and after every request the trial
balance balances and the inventory, GRNI and WIP control accounts equal their subledgers."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from erp_finance_support import client
from erp_supply_support import sent_po, supply_company
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from erp_service.domains import ledger
from erp_service.kernel.db import Database
from erp_service.kernel.jsonutil import canonical_json
from erp_service.kernel.schema import audit_events, metadata

_TEMPLATE: dict[str, Path] = {}

OPS = st.lists(st.tuples(
    st.sampled_from(["receive", "refuse", "reverse", "transfer", "adjust", "wo_new", "wo_release", "wo_issue",
                     "wo_reverse", "wo_complete", "wo_close", "po_close_line"]),
    st.integers(min_value=0, max_value=3), st.integers(min_value=-30, max_value=120)), min_size=1, max_size=14)


def _template() -> Path:
    """Build the company once (two sent POs) and copy the file for each example."""
    if "path" not in _TEMPLATE:
        tmp = Path(tempfile.mkdtemp(prefix="supply-prop-"))
        c = supply_company(tmp)
        cl = client(c)
        sent_po(cl, c, qty=200)
        sent_po(cl, c, qty=100, item="SL-0101", vendor="V-0104", unit_price=1.60)
        c.builder.db.close()
        _TEMPLATE["path"] = c.path
    return _TEMPLATE["path"]


def _state(db: Database) -> str:
    with db.transaction() as conn:
        out = {}
        for name in ("receipts", "receipt_lines", "po_lines", "purchase_orders", "inventory_txns", "work_orders",
                     "wo_issues", "wip_txns", "journal_lines", "lots"):
            t = metadata.tables[name]
            out[name] = [dict(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns)).mappings()]
    return canonical_json(out)


def _audit_count(db: Database) -> int:
    with db.transaction() as conn:
        return int(conn.execute(select(func.count()).select_from(audit_events)).scalar())


def _check_ties(db: Database) -> None:
    with db.transaction() as conn:
        assert ledger.trial_balance(conn)["balanced"]
        for row in ledger.control_ties(conn):
            if row["control"] in ("inventory", "grni", "wip"):
                assert row["tied"], row


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_random_supply_sequences_keep_invariants(ops):
    work = Path(tempfile.mkdtemp(prefix="supply-ex-"))
    try:
        path = work / "company.db"
        shutil.copy(_template(), path)
        db = Database(path)

        class C:   # the bits of TestCompany the helpers use
            builder = type("B", (), {"db": db})()

            @staticmethod
            def headers(user):
                return {"Authorization": f"Bearer tok-secret-{user}-0000"}
        c = C()
        from fastapi.testclient import TestClient

        from erp_service.http.app import create_app
        cl = TestClient(create_app(db))
        pos = ["PO-10001", "PO-10002"]
        receipts: list[str] = []
        wos: list[str] = []
        issues: list[str] = []
        for op, k, n in ops:
            po = pos[k % 2]
            item, lot = ("BR-0750", None) if po == "PO-10001" else ("SL-0101", {"lot_no": f"L{k}",
                                                                               "expiry": "2027-05-31"})
            if op == "receive":
                req = ("POST", "/receipts", "receiver", {"po_id": po, "lines": [
                    {"po_line": 1, "qty_received": abs(n) or 1, "location_id": "WH-MAIN-A01", **(lot or {})}]})
            elif op == "refuse":
                req = ("POST", "/receipts", "receiver", {"po_id": po, "lines": [
                    {"po_line": 1, "qty_refused": abs(n) or 1, "refusal_reason": "damaged"}]})
            elif op == "reverse":
                rid = receipts[k % len(receipts)] if receipts else "RCV-10001"
                req = ("POST", f"/receipts/{rid}/reverse", "receiver", {"reason": "test"})
            elif op == "transfer":
                req = ("POST", "/inventory/transfers", "inventory_controller", {
                    "item_id": "BR-0750", "qty": abs(n) or 1, "from_warehouse": "WH-MAIN",
                    "from_location": "WH-MAIN-A01", "to_warehouse": "WH-EAST", "to_location": "WH-EAST-01"})
            elif op == "adjust":
                req = ("POST", "/inventory/adjustments", "inventory_controller", {
                    "item_id": "BR-0750", "warehouse_id": "WH-MAIN", "location_id": "WH-MAIN-A01", "qty": n or 1,
                    "reason": "count"})
            elif op == "wo_new":
                req = ("POST", "/work-orders", "production_supervisor", {"item_id": "SA-0200", "qty": k + 1,
                                                                         "due_date": "2026-10-30"})
            elif op in ("wo_release", "wo_complete", "wo_close", "wo_issue"):
                wid = wos[k % len(wos)] if wos else "WO-10001"
                path_, body = {"wo_release": ("release", None), "wo_close": ("close", None),
                               "wo_complete": ("complete", {"qty": k + 1}),
                               "wo_issue": ("issue", {"backflush_units": k + 1})}[op]
                req = ("POST", f"/work-orders/{wid}/{path_}", "production_supervisor", body)
            elif op == "wo_reverse":
                iid = issues[k % len(issues)] if issues else "WOI-10001"
                req = ("POST", f"/wo-issues/{iid}/reverse", "production_supervisor", None)
            else:
                req = ("POST", f"/purchase-orders/{po}/lines/1/close", "buyer", None)
            method, path_, user, body = req
            before_state, before_audit = _state(db), _audit_count(db)
            resp = cl.request(method, path_, json=body, headers=c.headers(user))
            assert resp.status_code < 500, resp.text
            assert _audit_count(db) == before_audit + 1
            if resp.status_code >= 400:
                assert _state(db) == before_state, (op, resp.text)
            else:
                data = resp.json()["data"]
                if op == "receive":
                    receipts.append(data["id"])
                elif op == "wo_new":
                    wos.append(data["id"])
                elif op == "wo_issue":
                    issues.extend(i["id"] for i in data["issues"] if i["status"] == "posted" and i["id"] not in issues)
            _check_ties(db)
        db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
