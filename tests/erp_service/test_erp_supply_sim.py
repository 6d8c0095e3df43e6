"""Counterparties through sim.advance: vendors acknowledge, answer an expedite, ship with their
planted fill, backorder, lots and packing slips, invoice after their delay (PDF into the AP box,
recorded in sim_log) and answer a dispute with a credit memo; approvers decide requisitions the
next business day by their rules; scheduled receipts post as the named user."""
from __future__ import annotations

import json

import pytest
from erp_finance_support import client, ok, ties
from erp_supply_support import audit_rows, sent_po, supply_company
from sqlalchemy import select

from erp_service.sim import World, advance, sim_log

VENDORS = {
    "V-0101": {"ack_delay": 1, "lead_days": 3, "fill": {"BR-0750": 0.9}, "backorder": True, "backorder_days": 2,
               "invoice": {"delay": 2, "prefix": "BW-", "start": 501, "price_overrides": {"BR-0750": 4.35},
                           "freight": 12.5},
               "requests": {"expedite": {"accept": True, "best_days": 1}}},
    "V-0104": {"ack_delay": 1, "ship_early": True,
               "lots": {"SL-0101": [{"lot": "LX1", "expiry": "2027-02-28", "share": 0.5},
                                    {"lot": "LX2", "expiry": "2027-04-30"}]},
               "invoice": {"delay": 1, "prefix": "NS-"},
               "requests": {"dispute": {"accept": True, "credit": 5.0}}},
}


@pytest.fixture()
def company(tmp_path):
    return supply_company(tmp_path)


def _log(c, kind):
    with c.builder.db.transaction() as conn:
        rows = conn.execute(select(sim_log).where(sim_log.c.kind == kind).order_by(sim_log.c.id)).mappings().all()
    return [{**dict(r), "payload": json.loads(r["payload"])} for r in rows]


def _inbox(cl, c, user, box):
    return ok(cl.get("/inbox", params={"box": box}, headers=c.headers(user)), 200)["items"]


def test_vendor_acknowledges_ships_and_invoices(company):
    c = company
    cl = client(c)
    po = sent_po(cl, c, qty=200)                                      # V-0101, need_by 2026-10-20
    seals = sent_po(cl, c, qty=100, item="SL-0101", vendor="V-0104", unit_price=1.60)
    ok(cl.post("/vendor-requests", json={"kind": "expedite", "po_id": po["id"], "po_line": 1,
                                         "requested_date": "2026-10-12"}, headers=c.headers("buyer")))
    world = {"vendors": VENDORS,
             "receipts": [{"date": "2026-10-13", "po_id": po["id"], "user": "receiver", "packing_slip": "PS-X",
                           "lines": [{"po_line": 1, "qty_received": 180, "location_id": "WH-MAIN-A01"}]}]}
    days = advance(c.builder.db, World(world), "2026-10-09")
    assert days[0]["actions"] >= 3
    po9 = ok(cl.get(f"/purchase-orders/{po['id']}", headers=c.headers("buyer")), 200)
    assert po9["acknowledgements"] and po9["lines"][0]["confirmed_date"] == "2026-10-12"   # expedite accepted
    vr = ok(cl.get("/vendor-requests", params={"po_id": po["id"]}, headers=c.headers("buyer")), 200)["items"][0]
    assert vr["status"] == "answered" and vr["decision"] == "accepted" and vr["answer_date"] == "2026-10-12"
    s9 = ok(cl.get(f"/purchase-orders/{seals['id']}", headers=c.headers("buyer")), 200)
    assert s9["lines"][0]["confirmed_date"] == "2026-10-13"          # ship early: sent + 3 workdays
    # acknowledgement writes are the vendor user's, on the sim channel
    acks = audit_rows(c, action="po.acknowledge")
    assert {(a["actor"], a["channel"], a["outcome"]) for a in acks} == {("sys-vendor", "sim", "ok")}

    advance(c.builder.db, World(world), "2026-10-13")
    ships = _log(c, "ship_line")
    assert [(s["day"], s["ref"], s["payload"]["qty"]) for s in ships] == [
        ("2026-10-12", f"{po['id']}/1", 180.0), ("2026-10-13", f"{seals['id']}/1", 100.0)]
    assert _log(c, "backorder")[0]["payload"]["qty"] == 20.0
    slips = _inbox(cl, c, "receiver", "receiving")
    assert any(po["id"] in m["subject"] for m in slips)
    rcv = ok(cl.get("/receipts", params={"po_id": po["id"]}, headers=c.headers("receiver")), 200)["items"]
    assert len(rcv) == 1 and rcv[0]["created_by"] == "receiver" and rcv[0]["received_on"] == "2026-10-13"

    advance(c.builder.db, World(world), "2026-10-15")
    invoices = _log(c, "invoice")
    first = next(i for i in invoices if i["ref"] == "BW-501")
    assert first["day"] == "2026-10-14" and first["payload"]["total"] == round(180 * 4.35 + 12.5, 2)
    assert first["payload"]["lines"][0]["unit_price"] == 4.35
    ships = _log(c, "ship_line")
    assert ("2026-10-14", 20.0) in [(s["day"], s["payload"]["qty"]) for s in ships if s["ref"] == f"{po['id']}/1"]
    seal_ship = next(s for s in ships if s["ref"] == f"{seals['id']}/1")
    assert [(l["lot"], l["qty"]) for l in seal_ship["payload"]["lots"]] == [("LX1", 50.0), ("LX2", 50.0)]
    ap = _inbox(cl, c, "ap_clerk", "ap")
    inv_msg = next(m for m in ap if "BW-501" in m["subject"])
    full = ok(cl.get(f"/inbox/{inv_msg['id']}", headers=c.headers("ap_clerk")), 200)
    assert full["attachments"] and full["attachments"][0]["filename"].endswith(".pdf")
    ns = next(i for i in invoices if i["ref"].startswith("NS-"))
    assert ns["payload"]["total"] == 160.0

    # a dispute on the seal invoice is answered with a credit memo on the next business day
    ok(cl.post("/vendor-requests", json={"kind": "dispute", "vendor_id": "V-0104", "invoice_no": ns["ref"],
                                         "reason": "price"}, headers=c.headers("ap_clerk")))
    advance(c.builder.db, World(world), "2026-10-16")
    memo = _log(c, "credit_memo")
    assert memo and memo[0]["payload"]["amount"] == 5.0 and memo[0]["payload"]["invoice_no"] == ns["ref"]
    assert any("Credit memo" in m["subject"] for m in _inbox(cl, c, "ap_clerk", "ap"))
    ties(c)


def test_approver_actor_decides_next_business_day(company):
    c = company
    cl = client(c)
    world = {"approvers": {"dept_head": {"default": "approve"}}}
    small = ok(cl.post("/requisitions", json={"lines": [{"item_id": "BR-0750", "qty": 10, "unit_price": 4}]},
                       headers=c.headers("staff")))
    big = ok(cl.post("/requisitions", json={"lines": [{"item_id": "BR-0750", "qty": 2000, "unit_price": 4}]},
                     headers=c.headers("staff")))
    for r in (small, big):
        ok(cl.post(f"/requisitions/{r['id']}/submit", headers=c.headers("staff")))
    # Friday 10-09 is the next business day; nothing happens on the day of submission
    advance(c.builder.db, World(world), "2026-10-09")
    s = ok(cl.get(f"/requisitions/{small['id']}", headers=c.headers("staff")), 200)
    b = ok(cl.get(f"/requisitions/{big['id']}", headers=c.headers("staff")), 200)
    assert s["status"] == "approved" and s["approved_by"] == "dept_head"
    assert b["status"] == "returned"                                   # above the approver's limit
    appr = audit_rows(c, action="req.approve")
    assert [(a["actor"], a["channel"], a["business_date"]) for a in appr] == [("dept_head", "sim", "2026-10-09")]


def test_approver_rules_forward_and_require_note(company):
    c = company
    cl = client(c)
    world = {"approvers": {"dept_head": {"default": "approve", "over_limit": "forward", "require_note": True},
                           "purchasing_manager": {"default": "approve"}}}
    big = ok(cl.post("/requisitions", json={"note": "line rebuild", "lines": [
        {"item_id": "BR-0750", "qty": 2000, "unit_price": 4}]}, headers=c.headers("staff")))
    bare = ok(cl.post("/requisitions", json={"lines": [{"item_id": "BR-0750", "qty": 1, "unit_price": 4}]},
                      headers=c.headers("staff")))
    for r in (big, bare):
        ok(cl.post(f"/requisitions/{r['id']}/submit", headers=c.headers("staff")))
    advance(c.builder.db, World(world), "2026-10-09")
    b = ok(cl.get(f"/requisitions/{big['id']}", headers=c.headers("staff")), 200)
    assert b["status"] == "submitted" and b["assigned_to"] == "purchasing_manager"
    assert ok(cl.get(f"/requisitions/{bare['id']}", headers=c.headers("staff")), 200)["status"] == "returned"
    advance(c.builder.db, World(world), "2026-10-12")
    b = ok(cl.get(f"/requisitions/{big['id']}", headers=c.headers("staff")), 200)
    assert b["status"] == "approved" and b["approved_by"] == "purchasing_manager"


def test_approver_on_leave_waits(company):
    from erp_supply_support import add_leave
    c = company
    add_leave(c, "dept_head", "2026-10-09", "2026-10-13")
    cl = client(c)
    world = {"approvers": {"dept_head": {"default": "approve"}}}
    r = ok(cl.post("/requisitions", json={"lines": [{"item_id": "BR-0750", "qty": 10, "unit_price": 4}]},
                   headers=c.headers("staff")))
    ok(cl.post(f"/requisitions/{r['id']}/submit", headers=c.headers("staff")))
    advance(c.builder.db, World(world), "2026-10-13")
    assert ok(cl.get(f"/requisitions/{r['id']}", headers=c.headers("staff")), 200)["status"] == "submitted"
    advance(c.builder.db, World(world), "2026-10-14")
    assert ok(cl.get(f"/requisitions/{r['id']}", headers=c.headers("staff")), 200)["status"] == "approved"


MORE = {
    "V-0101": {"ack_delay": 0, "lead_days": 1, "ship_early": True, "moq_reject": True, "price_notice": {"SL-0101": 1.75},
               "invoice": {"delay": 1, "prefix": "BW-", "duplicate_after": 2, "duplicate_style": "stripped"},
               "requests": {"defer": {"accept": True}, "cancel": {"accept": True},
                            "copy_request": {"accept": True}}},
}


def _scenario(tmp_path):
    """Orders, requests and an advance through the vendor's whole behaviour; returns the company."""
    c = supply_company(tmp_path)
    cl = client(c)
    world = {"vendors": MORE, "approvers": {"dept_head": {"decisions": {"REQ-10001": "reject"}}}}
    small = sent_po(cl, c, qty=50)                             # below the MOQ of 100: rejected on that line
    po = sent_po(cl, c, qty=100, vendor="V-0101", item="SL-0101", unit_price=1.60)
    keep = sent_po(cl, c, qty=100)
    ok(cl.post("/vendor-requests", json={"kind": "cancel", "po_id": keep["id"], "po_line": 1}, headers=c.headers("buyer")))
    req = ok(cl.post("/requisitions", json={"lines": [{"item_id": "BR-0750", "qty": 1, "unit_price": 4}]},
                     headers=c.headers("staff")))
    ok(cl.post(f"/requisitions/{req['id']}/submit", headers=c.headers("staff")))
    advance(c.builder.db, World(world), "2026-10-09")
    return c, cl, world, small, po, keep, req


def test_vendor_moq_price_notice_cancel_duplicate_and_copy(tmp_path):
    c, cl, world, small, po, keep, req = _scenario(tmp_path)
    s = ok(cl.get(f"/purchase-orders/{small['id']}", headers=c.headers("buyer")), 200)
    line_acks = [a for a in s["acknowledgements"] if a["line_no"] == 1]
    assert line_acks[0]["decision"] == "rejected" and "minimum" in line_acks[0]["note"]
    p = ok(cl.get(f"/purchase-orders/{po['id']}", headers=c.headers("buyer")), 200)
    notice = [a for a in p["acknowledgements"] if a["line_no"] == 1][0]
    assert notice["decision"] == "changed" and notice["unit_price"] == 1.75
    assert p["lines"][0]["unit_price"] == 1.60                  # the PO itself never changes
    assert ok(cl.get(f"/requisitions/{req['id']}", headers=c.headers("staff")), 200)["status"] == "rejected"
    advance(c.builder.db, World(world), "2026-10-16")
    shipped_refs = {s_["ref"] for s_ in _log(c, "ship_line")}
    assert f"{keep['id']}/1" not in shipped_refs and f"{po['id']}/1" in shipped_refs
    assert f"{small['id']}/1" not in shipped_refs      # a rejected line is not shipped
    inv = next(i for i in _log(c, "invoice") if i["payload"]["po_id"] == po["id"])
    dup = [d for d in _log(c, "invoice_dup") if d["payload"]["original"] == inv["ref"]]
    assert dup and dup[0]["ref"] == inv["ref"].replace("-", "")
    ok(cl.post("/vendor-requests", json={"kind": "copy_request", "vendor_id": "V-0101", "invoice_no": inv["ref"]},
               headers=c.headers("ap_clerk")))
    advance(c.builder.db, World(world), "2026-10-19")
    assert [x["ref"] for x in _log(c, "invoice_copy")] == [inv["ref"]]


def test_same_scenario_same_canonical_hash(tmp_path):
    from erp_service.canonical import canonical_hash
    hashes = []
    for n in (1, 2):
        d = tmp_path / f"run{n}"
        d.mkdir()
        c, cl, world, *_ = _scenario(d)
        advance(c.builder.db, World(world), "2026-10-16")
        c.builder.db.close()
        hashes.append(canonical_hash(c.path))
    assert hashes[0] == hashes[1]
