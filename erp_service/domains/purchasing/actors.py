"""Counterparties of purchasing: vendors (acknowledge, ship, invoice, answer requests) and
requisition approvers. Behaviour comes only from the world file:

    "vendor_default": {...profile...},
    "vendors": {"V-0101": {
        "ack_delay": 1,                 # workdays after sending
        "ship_early": false,            # confirm the lead-time date even when need_by is later
        "lead_days": null,              # overrides the item's lead time
        "moq_reject": false,            # reject lines below the item's MOQ
        "price_notice": {"BR-0750": 4.1},
        "fill": 1.0 | {"BR-0750": 0.8}, "over_pct": 0 | {...}, "round_to": 1,
        "backorder": true, "backorder_days": 5,
        "substitutes": {"SL-0101": "SL-0102"},
        "lots": {"SL-0101": [{"lot": "L1", "expiry": "2027-01-31", "share": 0.5}, ...]},
        "invoice": {"delay": 2, "prefix": "INV-", "start": 1001, "price_overrides": {...},
                    "freight": 0, "duplicate_after": null, "duplicate_style": "stripped"},
        "requests": {"answer_delay": 1, "expedite": {"accept": true, "best_days": 3},
                     "defer": {"accept": true}, "cancel": {"accept": true},
                     "dispute": {"accept": true, "credit": null}, "copy_request": {"accept": true}}}},
    "approvers": {"dana.head": {"default": "approve", "decisions": {"REQ-10001": "reject"},
                                "over_limit": "return" | "forward", "max_amount": 2500,
                                "over_max": "return" | "forward" | "reject", "require_note": true}},
    "agent_users": ["..."], "actors": {"vendor": "sys-vendor"}

Every action is an audited write as the vendor's (or approver's) user; what vendors sent is
recorded in `sim_log` (kinds ship_line, backorder, packing_slip, invoice, invoice_dup,
credit_memo, invoice_copy) for the grader.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import select

from ...kernel.identity import users
from ...kernel.money import q4
from ...sim import actor, sim_log
from .. import comms, org
from ..masterdata import items
from ..vendors import vendors
from . import service as s
from .tables import approval_requests, po_acknowledgements, po_lines, purchase_orders, requisitions, vendor_requests

EPS = 1e-9


# Helpers ----------------------------------------------------------------------------------------

def profile(world, vendor_id: str) -> dict[str, Any]:
    """The vendor's behaviour: vendor_default overlaid with the vendor's own profile."""
    base = dict(world.section("vendor_default", {}))
    own = world.section("vendors", {}).get(vendor_id) or {}
    for k, v in own.items():
        base[k] = {**base[k], **v} if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return base


def per_item(value: Any, item_id: str | None, default: float) -> float:
    """A number that may be given per item ({"BR-0750": 0.8, "*": 1.0}) or for all items."""
    if isinstance(value, dict):
        return float(value.get(item_id or "", value.get("*", default)))  # type: ignore[arg-type]
    return float(default if value is None else value)


def workdays_between(conn, start: str, end: str) -> int:
    """Workdays after `start` up to and including `end`."""
    d, last, n = dt.date.fromisoformat(start), dt.date.fromisoformat(end), 0
    while d < last:
        d += dt.timedelta(days=1)
        if org.is_workday(conn, d.isoformat()):
            n += 1
    return n


def add_workdays(conn, start: str, n: int) -> str:
    """The date `n` workdays after `start` (n <= 0: `start` itself)."""
    d = dt.date.fromisoformat(start)
    while n > 0:
        d += dt.timedelta(days=1)
        if org.is_workday(conn, d.isoformat()):
            n -= 1
    return d.isoformat()


def vendor_user(world) -> str:
    """The system user vendors act as."""
    return (world.section("actors", {}) or {}).get("vendor", "sys-vendor")


def _logs(day, vendor_id: str, *kinds: str) -> list[dict[str, Any]]:
    rows = day.db.conn.execute(select(sim_log).where(sim_log.c.actor == vendor_id, sim_log.c.kind.in_(kinds))
                               .order_by(sim_log.c.id)).mappings()
    return [{**dict(r), "payload": json.loads(r["payload"]) if r["payload"] else None} for r in rows]


def _deliver(day, user: str, box: str, sender: str, subject: str, text: str, pdf_title: str, pdf_lines: list[str],
             filename: str, related: tuple[str, str] | None = None) -> None:
    """A message with a PDF into a company inbox."""
    body = {"box": box, "sender": sender, "subject": subject, "attachment": filename}
    pdf = comms.make_pdf(pdf_title, pdf_lines)

    def fn(tx):
        return comms.deliver(tx, box, sender, subject, text, [(filename, pdf)],
                             related_type=related[0] if related else None,
                             related_id=related[1] if related else None)
    day.act(user, "msg.deliver", f"/inbox/{box}", body, fn)


def _sender(day, vendor_id: str) -> str:
    row = day.db.conn.execute(select(vendors).where(vendors.c.id == vendor_id)).mappings().first()
    if row is not None and row.get("email"):
        return row["email"]
    return f"orders@{vendor_id.lower()}.example"


def _vendor_ids(day) -> list[str]:
    rows = day.db.conn.execute(select(purchase_orders.c.vendor_id).distinct()
                               .where(purchase_orders.c.status.in_(("sent", "partially_received", "received",
                                                                    "closed")))
                               .order_by(purchase_orders.c.vendor_id))
    ids = {r[0] for r in rows}
    ids |= {r[0] for r in day.db.conn.execute(select(vendor_requests.c.vendor_id).distinct()
                                              .where(vendor_requests.c.status == "open"))}
    return sorted(ids)


# Vendors ---------------------------------------------------------------------------------------

@actor("vendors")
def vendors_act(day) -> None:
    """Each vendor, in id order: answer requests, acknowledge, ship, invoice."""
    user = vendor_user(day.world)
    for vendor_id in _vendor_ids(day):
        prof = profile(day.world, vendor_id)
        if prof.get("silent"):
            continue
        # Requests first, so a cancel or expedite answered today governs today's shipments.
        _answer_requests(day, user, vendor_id, prof)
        _acknowledge(day, user, vendor_id, prof)
        _ship(day, user, vendor_id, prof)
        _invoice(day, user, vendor_id, prof)


def _acknowledge(day, user: str, vendor_id: str, prof: dict[str, Any]) -> None:
    conn = day.db.conn
    pos = conn.execute(select(purchase_orders).where(purchase_orders.c.vendor_id == vendor_id,
                                                     purchase_orders.c.status.in_(("sent", "partially_received")))
                       .order_by(purchase_orders.c.id)).mappings().all()
    for po in pos:
        if conn.execute(select(po_acknowledgements.c.id).where(po_acknowledgements.c.po_id == po["id"])).first():
            continue
        if workdays_between(conn, po["sent_on"], day.date) < int(prof.get("ack_delay", 1)):
            continue
        lines = []
        for l in conn.execute(select(po_lines).where(po_lines.c.po_id == po["id"], po_lines.c.status == "open")
                              .order_by(po_lines.c.line_no)).mappings():
            item = conn.execute(select(items).where(items.c.id == l["item_id"])).mappings().first() if l["item_id"] else None
            lead = int(prof["lead_days"]) if prof.get("lead_days") is not None else int(item["lead_time_days"] if item else 5)
            earliest = add_workdays(conn, po["sent_on"], lead)
            need = l["need_by"] or po["need_by"] or earliest
            confirmed = earliest if prof.get("ship_early") else max(earliest, need)
            agreed = conn.execute(select(vendor_requests.c.answer_date).where(
                vendor_requests.c.po_id == po["id"], vendor_requests.c.kind.in_(("expedite", "defer")),
                vendor_requests.c.decision == "accepted", vendor_requests.c.answer_date.is_not(None),
                (vendor_requests.c.po_line == l["line_no"]) | vendor_requests.c.po_line.is_(None))
                .order_by(vendor_requests.c.id.desc())).scalar()
            confirmed = agreed or confirmed
            decision, note, price = "accepted", None, None
            if prof.get("moq_reject") and item and item["moq"] and l["qty"] + EPS < item["moq"]:
                decision, note = "rejected", f"Below our minimum order quantity of {item['moq']:g}."
            notice = (prof.get("price_notice") or {}).get(l["item_id"] or "")
            if notice is not None and decision == "accepted":
                decision, price, note = "changed", float(notice), f"Price is now {float(notice):.4f} per unit."
            lines.append({"line_no": l["line_no"], "decision": decision, "confirmed_date": confirmed,
                          **({"unit_price": price} if price is not None else {}), **({"note": note} if note else {})})
        body = {"confirmed_date": max((l["confirmed_date"] for l in lines), default=None), "lines": lines}
        model = s.AcknowledgementIn.model_validate(body)
        day.act(user, "po.acknowledge", f"/purchase-orders/{po['id']}/acknowledgements", body,
                lambda tx, p=po["id"], m=model: s.acknowledge_po(tx, p, m))


def _round(qty: float, step: float) -> float:
    if step and step > 0:
        return q4(round(qty / step) * step)
    return q4(qty)


def _lots_for(day, prof: dict[str, Any], item: dict[str, Any] | None, item_id: str, qty: float, ref: str
              ) -> list[dict[str, Any]]:
    if item is None or not item["lot_controlled"]:
        return []
    planted = (prof.get("lots") or {}).get(item_id)
    if planted:
        out, left = [], qty
        for n, lot in enumerate(planted):
            share = qty * float(lot.get("share", 1.0)) if n < len(planted) - 1 else left
            share = q4(min(share, left))
            if share > EPS:
                out.append({"lot": lot["lot"], "expiry": lot.get("expiry"), "qty": share})
                left = q4(left - share)
        return out
    life = int(item["shelf_life_days"] or 365)
    expiry = (dt.date.fromisoformat(day.date) + dt.timedelta(days=life)).isoformat()
    return [{"lot": f"{ref.replace('/', '-')}-{day.date.replace('-', '')}", "expiry": expiry, "qty": qty}]


def _ship(day, user: str, vendor_id: str, prof: dict[str, Any]) -> None:
    conn = day.db.conn
    shipped: dict[str, list[dict[str, Any]]] = {}
    for row in _logs(day, vendor_id, "ship_line"):
        shipped.setdefault(row["ref"], []).append(row)
    cancelled = {(r["po_id"], r["po_line"]) for r in conn.execute(
        select(vendor_requests).where(vendor_requests.c.vendor_id == vendor_id, vendor_requests.c.kind == "cancel",
                                      vendor_requests.c.decision == "accepted")).mappings()}
    stmt = (select(po_lines, purchase_orders.c.vendor_id).join(purchase_orders, purchase_orders.c.id == po_lines.c.po_id)
            .where(purchase_orders.c.vendor_id == vendor_id,
                   purchase_orders.c.status.in_(("sent", "partially_received")),
                   po_lines.c.status == "open", po_lines.c.confirmed_date.is_not(None),
                   po_lines.c.confirmed_date <= day.date)
            .order_by(po_lines.c.po_id, po_lines.c.line_no))
    slips: dict[str, list[dict[str, Any]]] = {}
    for l in conn.execute(stmt).mappings().all():
        if (l["po_id"], l["line_no"]) in cancelled or (l["po_id"], None) in cancelled:
            continue
        ref = f"{l['po_id']}/{l['line_no']}"
        prior = shipped.get(ref, [])
        item = conn.execute(select(items).where(items.c.id == l["item_id"])).mappings().first() if l["item_id"] else None
        if not prior:
            fill = per_item(prof.get("fill"), l["item_id"], 1.0)
            over = per_item(prof.get("over_pct"), l["item_id"], 0.0)
            qty = _round(l["qty"] * fill * (1 + over / 100), float(prof.get("round_to", 1) or 0))
            if fill >= 1 - EPS and over <= EPS:
                qty = q4(l["qty"])
        else:
            done = sum(p["payload"]["qty"] for p in prior)
            remaining = q4(l["qty"] - done)
            if remaining <= EPS or not prof.get("backorder"):
                continue
            last = prior[-1]["day"]
            if workdays_between(conn, last, day.date) < int(prof.get("backorder_days", 5)):
                continue
            qty = remaining
        if qty <= EPS:
            continue
        sent_item = (prof.get("substitutes") or {}).get(l["item_id"] or "", l["item_id"])
        sent = conn.execute(select(items).where(items.c.id == sent_item)).mappings().first() if sent_item else None
        lots = _lots_for(day, prof, sent or item, sent_item, qty, ref)
        payload = {"po_id": l["po_id"], "po_line": l["line_no"], "ordered_item": l["item_id"], "item_id": sent_item,
                   "qty": qty, "ordered_qty": l["qty"], "unit_price": l["unit_price"], "lots": lots,
                   "substitution": sent_item != l["item_id"]}
        day.log(vendor_id, "ship_line", ref, payload)
        if not prior and qty + EPS < l["qty"] and prof.get("backorder"):
            day.log(vendor_id, "backorder", ref, {"po_id": l["po_id"], "po_line": l["line_no"],
                                                  "qty": q4(l["qty"] - qty)})
        slips.setdefault(l["po_id"], []).append(payload)
    for po_id, lines in sorted(slips.items()):
        slip_no = f"PS-{po_id}-{day.date.replace('-', '')}"
        day.log(vendor_id, "packing_slip", po_id, {"packing_slip": slip_no, "po_id": po_id, "lines": lines})
        text = slip_text(slip_no, vendor_id, po_id, day.date, lines)
        _deliver(day, user, "receiving", _sender(day, vendor_id), f"Packing slip {slip_no} for {po_id}",
                 "\n".join(text), f"Packing slip {slip_no}", text, f"{slip_no}.pdf", ("purchase_order", po_id))


def slip_text(slip_no: str, vendor_id: str, po_id: str, ship_date: str, lines: list[dict[str, Any]]) -> list[str]:
    """The lines of a packing slip: header, then one line per shipped PO line with the item
    sent (a substitute names the ordered item) and its lots."""
    text = [f"Packing slip {slip_no}", f"Vendor {vendor_id}", f"Your order {po_id}", f"Ship date {ship_date}", ""]
    for p in lines:
        lot_text = "; ".join(f"lot {x['lot']} exp {x['expiry']} qty {x['qty']:g}" for x in p["lots"])
        text.append(f"Line {p['po_line']}: {p['item_id']} qty {p['qty']:g}"
                    + (f" (substitute for {p['ordered_item']})" if p["substitution"] else "")
                    + (f" [{lot_text}]" if lot_text else ""))
    return text


def invoice_text(vendor_id: str, inv: dict[str, Any]) -> list[str]:
    """The lines of a vendor invoice as the vendor writes it (also its PDF)."""
    text = [f"INVOICE {inv['invoice_no']}", f"From vendor {vendor_id}", f"Invoice date {inv['invoice_date']}",
            f"Your PO {inv['po_id']}", ""]
    for l in inv["lines"]:
        text.append(f"Line {l['po_line']}: {l['item_id']} qty {l['qty']:g} @ {l['unit_price']:.4f} = {l['amount']:.2f}")
    if inv.get("freight"):
        text.append(f"Freight: {inv['freight']:.2f}")
    text.append(f"Total due: {inv['total']:.2f}")
    return text


def _invoice(day, user: str, vendor_id: str, prof: dict[str, Any]) -> None:
    conn = day.db.conn
    cfg = prof.get("invoice") or {}
    if cfg.get("never"):
        return
    invoices = _logs(day, vendor_id, "invoice")
    billed = {sid for inv in invoices for sid in inv["payload"]["ship_log_ids"]}
    delay = int(cfg.get("delay", 2))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for sh in _logs(day, vendor_id, "ship_line"):
        if sh["id"] in billed or workdays_between(conn, sh["day"], day.date) < delay:
            continue
        groups.setdefault((sh["day"], sh["payload"]["po_id"]), []).append(sh)
    n = len(invoices)
    for (ship_day, po_id), ships in sorted(groups.items()):
        n += 1
        number = f"{cfg.get('prefix', 'INV-')}{int(cfg.get('start', 1001)) + n - 1}"
        lines = []
        for sh in ships:
            p = sh["payload"]
            price = float((cfg.get("price_overrides") or {}).get(p["item_id"] or "", p["unit_price"]))
            amount = s.line_cents(p["qty"], price) / 100
            lines.append({"po_line": p["po_line"], "item_id": p["item_id"], "qty": p["qty"], "unit_price": price,
                          "amount": amount})
        freight = float(cfg.get("freight", 0) or 0)
        total = round(sum(l["amount"] for l in lines) + freight, 2)
        inv = {"invoice_no": number, "vendor_id": vendor_id, "po_id": po_id, "invoice_date": day.date,
               "ship_date": ship_day, "ship_log_ids": [sh["id"] for sh in ships], "lines": lines,
               "freight": freight, "total": total}
        day.log(vendor_id, "invoice", number, inv)
        text = invoice_text(vendor_id, inv)
        _deliver(day, user, "ap", _sender(day, vendor_id), f"Invoice {number} for PO {po_id}", "\n".join(text),
                 f"Invoice {number}", text, f"{number}.pdf", ("purchase_order", po_id))
    # A planted duplicate: the same invoice sent again later, possibly under a variant number.
    after = cfg.get("duplicate_after")
    if after is not None:
        dups = {d["payload"]["original"] for d in _logs(day, vendor_id, "invoice_dup")}
        for inv in invoices:
            p = inv["payload"]
            if p["invoice_no"] in dups or workdays_between(conn, inv["day"], day.date) < int(after):
                continue
            style = cfg.get("duplicate_style", "stripped")
            number = p["invoice_no"].replace("-", "") if style == "stripped" else f"{p['invoice_no']}-A"
            dup = {**p, "invoice_no": number, "original": p["invoice_no"], "invoice_date": day.date}
            day.log(vendor_id, "invoice_dup", number, dup)
            text = invoice_text(vendor_id, dup)
            _deliver(day, user, "ap", _sender(day, vendor_id), f"Invoice {number} for PO {p['po_id']}",
                     "\n".join(text), f"Invoice {number}", text, f"{number}.pdf", ("purchase_order", p["po_id"]))


def _answer_requests(day, user: str, vendor_id: str, prof: dict[str, Any]) -> None:
    conn = day.db.conn
    cfg = prof.get("requests") or {}
    open_reqs = conn.execute(select(vendor_requests).where(vendor_requests.c.vendor_id == vendor_id,
                                                           vendor_requests.c.status == "open")
                             .order_by(vendor_requests.c.id)).mappings().all()
    for vr in open_reqs:
        kind_cfg = cfg.get(vr["kind"]) or {}
        if workdays_between(conn, vr["created_on"], day.date) < int(kind_cfg.get("answer_delay",
                                                                                  cfg.get("answer_delay", 1))):
            continue
        accept = bool(kind_cfg.get("accept", True))
        body: dict[str, Any] = {"decision": "accepted" if accept else "refused"}
        extra = None
        if vr["kind"] in ("expedite", "defer") and accept:
            date = vr["requested_date"]
            best = kind_cfg.get("best_days")
            if vr["kind"] == "expedite" and best is not None:
                date = max(date, add_workdays(conn, day.date, int(best)))
            body["answer_date"] = date
            body["note"] = f"We can ship on {date}."
        elif vr["kind"] == "dispute" and accept:
            credit = kind_cfg.get("credit")
            if credit is None:
                credit = _disputed_excess(day, vendor_id, vr)
            memo_no = f"CM-{vr['id']}"
            body.update({"credit_amount": round(float(credit), 2), "credit_memo_no": memo_no,
                         "note": f"Credit memo {memo_no} for {float(credit):.2f} issued."})
            extra = ("credit_memo", memo_no, {"credit_memo_no": memo_no, "vendor_id": vendor_id,
                                              "invoice_no": vr["invoice_no"], "ap_invoice_id": vr["ap_invoice_id"],
                                              "amount": round(float(credit), 2), "date": day.date})
        elif vr["kind"] == "copy_request" and accept:
            original = next((i["payload"] for i in _logs(day, vendor_id, "invoice")
                             if i["payload"]["invoice_no"] == vr["invoice_no"]
                             or (vr["po_id"] and i["payload"]["po_id"] == vr["po_id"])), None)
            if original is None:
                body = {"decision": "refused", "note": "We have no such invoice on file."}
            else:
                body["note"] = f"Copy of invoice {original['invoice_no']} sent."
                extra = ("invoice_copy", original["invoice_no"], original)
        elif not accept:
            body["note"] = kind_cfg.get("note") or "We cannot do that."
        else:
            body["note"] = kind_cfg.get("note") or "Agreed."
        model = s.VendorAnswerIn.model_validate(body)
        out = day.act(user, "vendor.respond", f"/vendor-requests/{vr['id']}/answer", body,
                      lambda tx, i=vr["id"], m=model: s.answer_vendor_request(tx, i, m))
        if out is None or extra is None:
            continue
        kind, ref, payload = extra
        day.log(vendor_id, kind, ref, payload)
        if kind == "credit_memo":
            text = [f"CREDIT MEMO {ref}", f"From vendor {vendor_id}", f"Date {day.date}",
                    f"Against invoice {payload['invoice_no'] or payload['ap_invoice_id']}",
                    f"Credit amount: {payload['amount']:.2f}"]
            _deliver(day, user, "ap", _sender(day, vendor_id), f"Credit memo {ref}", "\n".join(text),
                     f"Credit memo {ref}", text, f"{ref}.pdf", ("vendor_request", vr["id"]))
        else:
            text = invoice_text(vendor_id, payload)
            _deliver(day, user, "ap", _sender(day, vendor_id), f"Copy of invoice {ref}", "\n".join(text),
                     f"Invoice {ref} (copy)", text, f"{ref}-copy.pdf", ("vendor_request", vr["id"]))


def _disputed_excess(day, vendor_id: str, vr: dict[str, Any]) -> float:
    """What the vendor billed above the PO price on the disputed invoice (0 if unknown)."""
    for inv in _logs(day, vendor_id, "invoice"):
        p = inv["payload"]
        if p["invoice_no"] != vr["invoice_no"] and not (vr["po_id"] and not vr["invoice_no"] and p["po_id"] == vr["po_id"]):
            continue
        excess = 0.0
        for l in p["lines"]:
            po_price = day.db.conn.execute(select(po_lines.c.unit_price).where(
                po_lines.c.po_id == p["po_id"], po_lines.c.line_no == l["po_line"])).scalar() or l["unit_price"]
            excess += max(l["unit_price"] - po_price, 0) * l["qty"]
        return round(excess + float(p.get("freight") or 0) * 0, 2)
    return 0.0


# Approvers --------------------------------------------------------------------------------------

@actor("approvers")
def approvers_act(day) -> None:
    """Approvers named in the world decide requisitions waiting on them since an earlier day;
    users on leave (and the agent's own users) never act."""
    rules = day.world.section("approvers", {})
    agents = set(day.world.section("agent_users", []) or [])
    conn = day.db.conn
    pending = conn.execute(select(approval_requests).where(approval_requests.c.status == "pending",
                                                           approval_requests.c.doc_type == "requisition",
                                                           approval_requests.c.requested_on < day.date)
                           .order_by(approval_requests.c.id)).mappings().all()
    for ar in pending:
        who = ar["approver"]
        if who not in rules or who in agents:
            continue
        if day.look(lambda tx, w=who: org.on_leave(tx, w, day.date)):
            continue
        rule = rules[who] or {}
        req = conn.execute(select(requisitions).where(requisitions.c.id == ar["doc_id"])).mappings().first()
        decision = (rule.get("decisions") or {}).get(ar["doc_id"], rule.get("default", "approve"))
        limit = day.look(lambda tx, w=who: org.approval_limit_cents(tx, w, "requisition"))
        if decision == "approve" and req["total_cents"] > limit:
            decision = rule.get("over_limit", "return")
        elif decision == "approve" and rule.get("max_amount") is not None and \
                req["total_cents"] > round(float(rule["max_amount"]) * 100):
            decision = rule.get("over_max", "return")            # the approver's own, lower threshold
        elif decision == "approve" and rule.get("require_note") and not (req["note"] or "").strip():
            decision = "return"                                   # no justification attached
        path = f"/requisitions/{ar['doc_id']}"
        if decision == "approve":
            day.act(who, "req.approve", f"{path}/approve", None,
                    lambda tx, r=ar["doc_id"]: s.approve_requisition(tx, r, None))
        elif decision == "forward":
            manager = conn.execute(select(users.c.manager_id).where(users.c.id == who)).scalar()
            if manager:
                body = {"to": manager, "note": "Above my approval limit."}
                day.act(who, "req.forward", f"{path}/forward", body,
                        lambda tx, r=ar["doc_id"], b=s.ForwardIn(**body): s.forward_requisition(tx, r, b))
        elif decision in ("reject", "return"):
            body = {"note": rule.get("note") or ("Above my approval limit." if req["total_cents"] > limit
                                                 else f"{decision.capitalize()}ed by approver.")}
            action = "req.reject" if decision == "reject" else "req.return"
            day.act(who, action, f"{path}/{decision}", body,
                    lambda tx, r=ar["doc_id"], d=("rejected" if decision == "reject" else "returned"),
                    b=s.NoteIn(**body): s.decide_requisition(tx, r, d, b))
