"""margin-bridge (F1): the generator, `generate(ctx)` (docs/pack-authoring.md).

Northgate after a year of history to 30 September 2026 (buyers ordering throughout), and on
the last day of September four planted drivers of the gross margin, each behind an ERP
document the read-only controller's analyst can find:

- a vendor price increase effective 1 September: the vendor's supplemental invoice for the
  September deliveries at the new price (invoice price variance, account 5110);
- a retroactive customer rebate tier: the accrual journal entry (sales discounts, 4100) with
  the rebate letter attached;
- a mix shift: a one-off project order of the lowest-margin item with stock, shipped and
  billed on 30 September;
- an inventory write-off: a damage adjustment of a finished item (inventory adjustments, 5300).

The amounts are read back from the database after the plants (the ledger's own numbers), and
the answer's numbers and sentences are filled into task.yaml's checks through truth values.
"""
from __future__ import annotations

import base64
import re

from sqlalchemy import text

from tasks.aliases import party_aliases
from tasks.context import GeneratorContext
from tasks.northgate.people import CONTROLLER
from tasks.packs import GenerationError

from .bridge import gross_margin, invoice_margin

HISTORY_END = "2026-09-30"
PRIOR, MONTH = "2026-08", "2026-09"
AP_CLERK, ACCOUNTANT, INVENTORY, ORDER_ENTRY, SHIPPING, CREDIT = (
    "riley.park", "omar.haddad", "kim.ng", "marco.rossi", "aisha.bello", "victor.hale")


def _rows(ctx: GeneratorContext, sql: str, **params: object) -> list[dict]:
    with ctx.builder.db.transaction() as conn:
        return [dict(r._mapping) for r in conn.execute(text(sql), params)]


def _money(cents: int) -> str:
    return f"{cents / 100:,.2f}"


def plant_price_increase(ctx: GeneratorContext) -> dict:
    """The vendor that delivered the most (by value) in September bills its price increase,
    effective on the 1st, on a supplemental invoice for the month's deliveries."""
    top = _rows(ctx, """
        SELECT r.vendor_id AS vendor, SUM(rl.value_cents) AS value, GROUP_CONCAT(DISTINCT rl.item_id) AS items
        FROM receipt_lines rl JOIN receipts r ON r.id = rl.receipt_id
        WHERE r.received_on >= :first AND r.received_on <= :last AND r.status <> 'reversed'
          AND rl.qty_received > 0
        GROUP BY r.vendor_id ORDER BY value DESC, r.vendor_id LIMIT 1""",
        first=f"{MONTH}-01", last=f"{MONTH}-30")
    if not top:
        raise GenerationError("no receipts in September to carry the vendor price increase")
    t = top[0]
    pct = ctx.rng.choice([8, 10, 12, 15])
    cents = round(t["value"] * pct / 100)
    items = ", ".join(sorted(t["items"].split(",")))
    vendor = ctx.erp.get(AP_CLERK, f"/vendors/{t['vendor']}")
    inv_no = f"PA-{ctx.rng.randint(10000, 89999)}"
    desc = (f"Price increase of {pct}% effective 2026-09-01 (our notice of 2026-08-14) on the September "
            f"deliveries of {items}, invoiced at the old prices: ${_money(t['value'])} at {pct}%")
    inv = ctx.erp.post(AP_CLERK, "/ap-invoices", {
        "vendor": t["vendor"], "invoice_no": inv_no, "invoice_date": f"{MONTH}-30", "terms": "NET30",
        "lines": [{"kind": "other", "description": desc, "amount": cents / 100, "account": "5110"}]})
    ctx.erp.post(AP_CLERK, f"/ap-invoices/{inv['id']}/validate")
    ctx.erp.post(CONTROLLER, f"/ap-invoices/{inv['id']}/approve")
    return {"vendor": vendor["name"], "vendor_id": t["vendor"], "items": items, "pct": pct,
            "delivered_cents": t["value"], "invoice_no": inv_no, "id": inv["id"], "cents": cents}


def plant_rebate(ctx: GeneratorContext, exclude: set[str]) -> dict:
    """The largest customer of the year reaches the next rebate tier in September: the rate
    applies back to 1 January, accrued by a journal entry with the rebate letter attached."""
    top = _rows(ctx, """
        SELECT customer_id AS customer, SUM(subtotal_cents) AS ytd FROM ar_invoices
        WHERE invoice_date >= '2026-01-01' AND invoice_date <= :last
        GROUP BY customer_id ORDER BY ytd DESC, customer_id""", last=f"{MONTH}-30")
    t = next(r for r in top if r["customer"] not in exclude)
    customer = ctx.erp.get(ACCOUNTANT, f"/customers/{t['customer']}")
    rate = ctx.rng.choice([1.5, 2.0, 2.5, 3.0])
    cents = round(t["ytd"] * rate / 100)
    letter = (f"Rebate agreement RA-{t['customer']}-2026, amendment 2\n\n{customer['name']} passed the tier-2 "
              f"threshold in September 2026. The tier-2 rebate of {rate}% applies retroactively to every purchase "
              f"since 2026-01-01: {rate}% of ${_money(t['ytd'])} = ${_money(cents)}, credited against future "
              f"invoices.\n")
    memo = (f"Retroactive tier-2 volume rebate for {customer['name']} ({rate}% of 2026 purchases of "
            f"${_money(t['ytd'])}), rebate agreement RA-{t['customer']}-2026")
    je = ctx.erp.post(ACCOUNTANT, "/journal-entries", {
        "entry_date": f"{MONTH}-30", "memo": memo,
        "lines": [{"account": "4100", "debit": cents / 100, "memo": "Customer rebate, tier 2 retroactive"},
                  {"account": "2100", "credit": cents / 100, "memo": f"Rebate payable to {customer['name']}"}]})
    ctx.erp.post(ACCOUNTANT, f"/journal-entries/{je['id']}/attachments", {
        "filename": f"RA-{t['customer']}-2026-amendment-2.txt", "content_type": "text/plain",
        "content_base64": base64.b64encode(letter.encode()).decode()})
    ctx.erp.post(ACCOUNTANT, f"/journal-entries/{je['id']}/submit")
    ctx.erp.post(CONTROLLER, f"/journal-entries/{je['id']}/approve")
    ctx.erp.post(ACCOUNTANT, f"/journal-entries/{je['id']}/post")
    return {"customer": customer["name"], "customer_id": t["customer"], "rate": rate, "ytd_cents": t["ytd"],
            "entry": je["id"], "agreement": f"RA-{t['customer']}-2026", "cents": cents}


def plant_write_off(ctx: GeneratorContext) -> dict:
    """Water-damaged stock of the finished item with the largest value on hand is written off."""
    rows = _rows(ctx, """
        SELECT i.id AS item, i.standard_cost AS cost, SUM(t.qty) AS qty
        FROM inventory_txns t JOIN items i ON i.id = t.item_id
        WHERE i.type = 'finished' AND i.lot_controlled = 0 AND t.warehouse_id = 'WH-MAIN'
        GROUP BY i.id HAVING SUM(t.qty) >= 4 ORDER BY SUM(t.qty) * i.standard_cost DESC, i.id""")
    if not rows:
        raise GenerationError("no finished item on hand to write off")
    r = rows[0]
    target = ctx.rng.uniform(6_000, 12_000)
    qty = max(1, min(int(r["qty"]) - 1, round(target / r["cost"])))
    report = f"QR-{ctx.rng.randint(1000, 8999)}"
    adj = ctx.erp.post(INVENTORY, "/inventory/adjustments", {
        "item_id": r["item"], "warehouse_id": "WH-MAIN", "qty": -qty, "reason": "damage",
        "note": f"Water damage from the roof leak in bay 4 (quality report {report}); stock scrapped"})
    cents = _rows(ctx, """
        SELECT SUM(l.debit_cents - l.credit_cents) AS c FROM journal_lines l
        JOIN journal_entries e ON e.id = l.entry_id
        WHERE e.source_ref = :ref AND l.account_id = '5300'""", ref=adj["id"])[0]["c"]
    if not cents or cents <= 0:
        raise GenerationError(f"the write-off {adj['id']} posted nothing to 5300")
    return {"item": r["item"], "qty": qty, "adjustment": adj["id"], "report": report, "cents": int(cents)}


def plant_mix_order(ctx: GeneratorContext, prior_rate: float, exclude: set[str]) -> dict:
    """A one-off project order of the finished valve with the most stock, at a project price
    a little above cost, shipped and billed on the 30th: it earns far less than August's rate."""
    stock = _rows(ctx, """
        SELECT i.id AS item, i.standard_cost AS cost, SUM(t.qty) AS qty
        FROM inventory_txns t JOIN items i ON i.id = t.item_id
        WHERE i.type = 'finished' AND i.lot_controlled = 0 AND t.warehouse_id = 'WH-MAIN'
        GROUP BY i.id HAVING SUM(t.qty) >= 40 ORDER BY SUM(t.qty) * i.standard_cost DESC, i.id""")
    stock = [s for s in stock if s["item"] not in exclude]
    if not stock:
        raise GenerationError("no finished item with stock for the one-off order")
    s = stock[0]
    qty = int(s["qty"] * ctx.rng.uniform(0.2, 0.3))
    unit_price = round(s["cost"] * ctx.rng.uniform(1.3, 1.45), 2)
    customers = ctx.erp.get(ORDER_ENTRY, "/customers", limit=1000)["items"]
    customer = sorted(customers, key=lambda c: c["id"])[ctx.rng.randint(5, 15)]
    po = f"PRJ-{ctx.rng.randint(1000, 8999)}"
    so = ctx.erp.post(ORDER_ENTRY, "/sales-orders", {
        "customer_id": customer["id"], "customer_po": po, "warehouse_id": "WH-MAIN",
        "requested_date": f"{MONTH}-30",
        "note": "One-off project order at project pricing agreed by the sales manager",
        "lines": [{"item_id": s["item"], "qty": qty, "unit_price": unit_price}]})
    if so["status"] == "on_hold":
        ctx.erp.post(CREDIT, f"/sales-orders/{so['id']}/release", {"note": "Project order; deposit received."})
    sh = ctx.erp.post(SHIPPING, "/shipments", {"so_id": so["id"], "carrier": "Estes"})
    inv = ctx.erp.post(SHIPPING, f"/shipments/{sh['id']}/invoice")
    with ctx.builder.db.transaction() as conn:
        revenue, cost = invoice_margin(conn, inv["id"])
    if revenue <= 0 or (revenue - cost) / revenue > prior_rate - 0.05:
        raise GenerationError(f"the one-off order's margin rate is too close to August's {prior_rate:.3f}")
    effect = round(revenue * prior_rate - (revenue - cost))
    return {"item": s["item"], "qty": qty, "customer": customer["name"], "customer_id": customer["id"],
            "so": so["id"], "invoice": inv["id"], "shipment": sh["id"], "customer_po": po, "revenue_cents": revenue, "cost_cents": cost,
            "cents": effect}


def generate(ctx: GeneratorContext) -> None:
    """Build the margin-bridge scenario into `ctx` (truth values fill task.yaml's checks)."""
    ctx.northgate(history_end=HISTORY_END)
    ctx.builder.set_date(HISTORY_END)
    with ctx.builder.db.transaction() as conn:
        prior = gross_margin(conn, PRIOR)
    prior_rate = prior.margin / prior.revenue
    price = plant_price_increase(ctx)
    write_off = plant_write_off(ctx)
    mix = plant_mix_order(ctx, prior_rate, {write_off["item"]})
    rebate = plant_rebate(ctx, {mix["customer_id"]})
    ctx.builder.set_date(ctx.start_date)
    with ctx.builder.db.transaction() as conn:
        month = gross_margin(conn, MONTH)
        prior_again = gross_margin(conn, PRIOR)
    if prior_again != prior:
        raise GenerationError("the plants changed August's gross margin")
    change = month.margin - prior.margin
    drivers = {"price": price, "rebate": rebate, "mix": mix, "write_off": write_off}
    other = change + sum(d["cents"] for d in drivers.values())
    ctx.truth.planted = drivers
    ctx.truth.facts = {"prior": prior.as_dict(), "month": month.as_dict(), "prior_rate": round(prior_rate, 6),
                       "change_cents": change, "volume_and_other_cents": other}

    def m(cents: int) -> str:
        return f"{abs(cents) / 100:.2f}"

    def entries(ref: str) -> list[str]:
        """The journal entries a document posted (another id of the same record)."""
        return [r["id"] for r in _rows(ctx, "SELECT id FROM journal_entries WHERE source_ref = :r ORDER BY id", r=ref)]

    def description(item: str) -> str:
        return str(_rows(ctx, "SELECT description FROM items WHERE id = :i", i=item)[0]["description"])
    # Every alias a reviewer accepts (FIN-2.1: the vendor, customer or item; the invoice, journal
    # entry, sales order or adjustment): read-only queries, scenario.db is unchanged.
    ctx.truth.values = {
        "gm_change_effect": "down" if change < 0 else "up",
        "other_amount": m(other), "other_effect": "down" if other < 0 else "up",
        # The line absorbs the mix effect's rounding (FIN-2.4's rate): the mix claim's tolerance.
        "other_tolerance": f"{mix['cents'] * 0.002 / 100:.2f}",
        "price_subject": party_aliases(price["vendor"]),
        "price_docs": [price["invoice_no"], price["id"], *entries(price["id"])],
        "rebate_subject": party_aliases(rebate["customer"]),
        "rebate_docs": [rebate["entry"], rebate["agreement"]],
        "mix_subject": [mix["item"], description(mix["item"]), *party_aliases(mix["customer"])],
        "mix_docs": [mix["invoice"], mix["so"], mix["customer_po"], mix["shipment"], *entries(mix["invoice"]),
                     *entries(mix["shipment"])],
        "write_off_subject": [write_off["item"], description(write_off["item"])],
        "write_off_docs": [write_off["adjustment"], write_off["report"], *entries(write_off["adjustment"])],
        "gm_prior": m(prior.margin), "gm_month": m(month.margin), "gm_change": m(change),
        "price_amount": m(price["cents"]), "rebate_amount": m(rebate["cents"]), "mix_amount": m(mix["cents"]),
        "write_off_amount": m(write_off["cents"]),
        "price_vendor": _pattern(price["vendor"]), "price_doc": price["invoice_no"],
        "rebate_customer": _pattern(rebate["customer"]), "rebate_doc": f"({rebate['entry']}|{rebate['agreement']})",
        "mix_item": mix["item"], "mix_doc": f"({mix['invoice']}|{mix['so']}|{mix['customer_po']})",
        "write_off_item": write_off["item"], "write_off_doc": f"({write_off['adjustment']}|{write_off['report']})",
    }


def _pattern(name: str) -> str:
    """A regex for a party's name as the ERP spells it (any run of spaces between words)."""
    return r"\s+".join(re.escape(w) for w in name.split())
