"""Shared set-up for the supply-side tests (no tests here): the finance test company plus a
department with its head, approval limits, warehouses, items (bar stock with a price agreement,
lot-controlled seals with an approved substitute, a phantom and a subassembly under a finished
valve), BOMs and a work center."""
from __future__ import annotations

from typing import Any

from erp_finance_support import finance_company
from sqlalchemy import select

from erp_service.domains.masterdata import (
    approved_substitutes,
    boms,
    items,
    locations,
    price_agreements,
    price_breaks,
    warehouses,
    work_centers,
)
from erp_service.domains.org import approval_limits, delegations, departments, leave
from erp_service.kernel.identity import users
from erp_service.kernel.schema import audit_events

ITEMS = [
    # id, description, type, lot, shelf, std, list, lead, safety, moq, mult, vendor
    ("BR-0750", "Brass bar 3/4in", "bar_stock", 0, None, 4.00, None, 5, 0, 100, 50, "V-0101"),
    ("SL-0101", "Seal kit, nitrile", "seal", 1, 365, 1.50, None, 3, 0, 0, 0, "V-0104"),
    ("SL-0102", "Seal kit, viton", "seal", 1, 365, 1.80, None, 3, 0, 0, 0, "V-0104"),
    ("PH-0010", "Seal pack (phantom)", "phantom", 0, None, 0.0, None, 0, 0, 0, 0, None),
    ("SA-0200", "Bonnet subassembly", "subassembly", 0, None, 9.00, None, 2, 0, 0, 0, None),
    ("VB-1000", "Ball valve 3/4in", "finished", 0, None, 25.00, 60.0, 3, 0, 0, 0, None),
]


def supply_company(tmp_path):
    """The finance company plus supply master data (see module docstring)."""
    c = finance_company(tmp_path)
    b = c.builder
    b.insert(departments, id="OPS", name="Operations", head_user_id="dept_head", cost_center="100")
    b.add_user("dept_head2", "Second Head", roles=["dept_head"], department="OPS", manager="purchasing_manager")
    b.add_token("dept_head2", "tok-secret-dept_head2", "tok-dept_head2")
    c.tokens["dept_head2"] = "tok-secret-dept_head2"

    def people(tx):
        tx.update(users, "staff", department_id="OPS", manager_id="dept_head")
        tx.update(users, "dept_head", department_id="OPS", manager_id="purchasing_manager")
        tx.update(users, "buyer", department_id="OPS", manager_id="purchasing_manager")
    b.run("sys-setup", people)
    b.insert_many(approval_limits, [
        {"user_id": "dept_head", "doc_type": "requisition", "limit_cents": 5_000_00},
        {"user_id": "dept_head2", "doc_type": "requisition", "limit_cents": 5_000_00},
        {"user_id": "purchasing_manager", "doc_type": "requisition", "limit_cents": 50_000_00},
        {"user_id": "purchasing_manager", "doc_type": "purchase_order", "limit_cents": 50_000_00},
        {"user_id": "buyer", "doc_type": "purchase_order", "limit_cents": 2_000_00},
        {"user_id": "planner", "doc_type": "purchase_order", "limit_cents": 10_000_00},
    ])
    b.insert_many(warehouses, [{"id": "WH-MAIN", "name": "Main plant"}, {"id": "WH-EAST", "name": "East depot"}])
    b.insert_many(locations, [{"id": "WH-MAIN-A01", "warehouse_id": "WH-MAIN", "name": "A01", "kind": "stock"},
                              {"id": "WH-MAIN-A02", "warehouse_id": "WH-MAIN", "name": "A02", "kind": "stock"},
                              {"id": "WH-EAST-01", "warehouse_id": "WH-EAST", "name": "01", "kind": "stock"}])
    b.insert_many(items, [dict(id=i, description=d, type=t, category=t, uom="ea", lot_controlled=lot,
                               shelf_life_days=shelf, standard_cost=std, list_price=lp, lead_time_days=lead,
                               safety_stock=ss, moq=moq, order_multiple=mult, preferred_vendor=v, planner="planner",
                               default_warehouse="WH-MAIN", active=1)
                          for i, d, t, lot, shelf, std, lp, lead, ss, moq, mult, v in ITEMS])
    bom_rows = [
        dict(parent_item="VB-1000", line_no=1, component_item="BR-0750", qty_per=2, scrap_pct=5.0),
        dict(parent_item="VB-1000", line_no=2, component_item="SA-0200", qty_per=1, scrap_pct=0.0),
        dict(parent_item="VB-1000", line_no=3, component_item="PH-0010", qty_per=1, scrap_pct=0.0),
        dict(parent_item="PH-0010", line_no=1, component_item="SL-0101", qty_per=2, scrap_pct=0.0),
        dict(parent_item="SA-0200", line_no=1, component_item="BR-0750", qty_per=1, scrap_pct=0.0),
        dict(parent_item="SA-0200", line_no=2, component_item="SL-0102", qty_per=1, scrap_pct=0.0,
             effective_to="2026-09-30"),
        dict(parent_item="SA-0200", line_no=3, component_item="SL-0101", qty_per=1, scrap_pct=0.0,
             effective_from="2026-10-01", pending_change=1, change_note="ECO-12 pending"),
    ]
    # executemany takes its columns from the first row: give every row every column
    defaults = dict(effective_from=None, effective_to=None, pending_change=0, change_note=None)
    b.insert_many(boms, [{**defaults, **r} for r in bom_rows])
    b.insert(work_centers, id="WC-ASSY", name="Assembly", daily_capacity_hours=16)
    b.insert(price_agreements, id="PA-1001", vendor_id="V-0101", item_id="BR-0750", valid_from="2026-01-01",
             valid_to="2026-12-31")
    b.insert_many(price_breaks, [{"agreement_id": "PA-1001", "min_qty": 1, "unit_price": 4.50},
                                 {"agreement_id": "PA-1001", "min_qty": 100, "unit_price": 4.20},
                                 {"agreement_id": "PA-1001", "min_qty": 500, "unit_price": 3.90}])
    b.insert(approved_substitutes, item_id="SL-0101", substitute_id="SL-0102", vendor_id=None, note="same fit")
    return c


def add_leave(c, user: str, start: str, end: str, delegate: str | None = None) -> None:
    """Put a user on leave (and optionally delegate their approvals)."""
    c.builder.insert(leave, user_id=user, start_date=start, end_date=end, note="vacation")
    if delegate:
        c.builder.insert(delegations, from_user=user, to_user=delegate, doc_type=None, start_date=start, end_date=end)


def audit_rows(c, **where: Any) -> list[dict]:
    """Audit events matching the equality filters, oldest first."""
    with c.builder.db.transaction() as conn:
        stmt = select(audit_events).order_by(audit_events.c.id)
        for k, v in where.items():
            stmt = stmt.where(audit_events.c[k] == v)
        return [dict(r) for r in conn.execute(stmt).mappings()]


def sent_po(cl, c, qty: float = 200, item: str = "BR-0750", vendor: str = "V-0101", **line: Any) -> dict:
    """Create and send a one-line PO as the purchasing manager; returns the PO."""
    h = c.headers("purchasing_manager")
    po = cl.post("/purchase-orders", json={"vendor_id": vendor, "warehouse_id": "WH-MAIN", "need_by": "2026-10-20",
                                           "lines": [{"item_id": item, "qty": qty, **line}]}, headers=h)
    assert po.status_code == 201, po.text
    sent = cl.post(f"/purchase-orders/{po.json()['data']['id']}/send", headers=h)
    assert sent.status_code == 201, sent.text
    return sent.json()["data"]
