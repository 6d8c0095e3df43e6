"""ap-invoice-backlog (B2, analyst): the generator, `generate(ctx)` (docs/pack-authoring.md).

Northgate after history to Friday 9 October 2026. Nobody enters a vendor invoice for three
weeks: purchasing goes on (the added MRO vendors among others), goods arrive, and vendors bill;
services arrive without a PO. Hannah Brooks (AP supervisor) clears the AP inbox on Monday,
Wednesday and Friday of the first week of November: about 58% of the documents are there on
Monday, the rest (with the replies, a delivery and corrected invoices) arrive between the turns
through the world's scheduled messages and receipts.

The size is the band's (`plan.SIZES[task.yaml band]`): variants of the pack at another band run
this generator unchanged. `build(ctx, size)` takes any `Size` (bench/scenario_gen.py).
"""
from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

from sqlalchemy import select

from erp_service.domains import org
from erp_service.domains import vendors as vendor_domain
from erp_service.domains.payables.tables import ap_invoices
from erp_service.domains.vendors import BankAccountIn, request_bank_account
from tasks.context import GeneratorContext
from tasks.packs import GenerationError

from . import cases, documents, purchasing
from .documents import Doc
from .kit import Kit
from .plan import FIRST_DAY, SIZES, Backlog, Calendar, Size
from .routine import routine
from .vendors import NEW_VENDORS, vendor_rows

HISTORY_END, LAST_ORDER = "2026-10-09", "2026-09-28"
AGENT = "hannah.brooks"


def generate(ctx: GeneratorContext) -> None:
    """Build the backlog at the size of task.yaml's band."""
    build(ctx, SIZES[ctx.spec.band])


def build(ctx: GeneratorContext, size: Size) -> Backlog:
    """Build the scenario of `size` into `ctx` (world, truth; turns as task.yaml has them)."""
    problems = size.problems()
    if problems:
        raise GenerationError("; ".join(problems))
    if ctx.agent_user != AGENT or len(ctx.turns) != 3:
        raise GenerationError(f"this generator plants Hannah Brooks's three turns; task.yaml names "
                              f"{ctx.agent_user} with {len(ctx.turns)} turn(s)")
    ng = ctx.northgate(history_end=HISTORY_END, last_order=LAST_ORDER)
    b = ctx.builder
    # The scenario's own draws come from a stream of their own, seeded like the company's, so
    # that sizes (bands) never shift the company's history.
    rng = random.Random(f"ap-invoice-backlog:{ctx.seed}")
    rows, banks = vendor_rows(rng)
    b.insert_many(vendor_domain.vendors, rows)
    b.insert_many(vendor_domain.vendor_bank_accounts, banks)

    cal = Calendar(ctx.turns[0].date, ctx.turns[1].date, ctx.turns[2].date)
    kit = Kit(ng, rng, cal, _history_numbers(ctx))
    bl = Backlog()
    cases.plant(kit, bl, size.exceptions, _october_rent(ctx))
    planted_docs = len(bl.docs)
    routine(kit, bl, size.documents - planted_docs)
    problems = plan_problems(ng, bl)
    if problems:
        raise GenerationError(f"seed {ctx.seed}: " + "; ".join(problems[:5]))
    for user, first, last in bl.leave:
        b.insert(org.leave, user_id=user, start_date=first, end_date=last, note="annual leave")
    _play(ctx, bl, cal)
    _truth(ctx, bl, size, planted_docs)
    return bl


def plan_problems(ng: Any, bl: Backlog) -> list[str]:
    """Where the seed's plan would not mean what the cases say (empty: it does): an added vendor
    sharing a name or an address with a seeded one, a vendor printing one number twice, a number
    that is not a reference token, or two invoices that look like one delivery billed twice
    (same vendor, order, total and date) other than the planted pair."""
    out = []
    seeded = {v.name for v in ng.vendors} | {f"ar@{v.domain}" for v in ng.vendors}
    for nv in NEW_VENDORS:
        if nv.name in seeded or f"ar@{nv.domain}" in seeded:
            out.append(f"the added vendor {nv.name} ({nv.domain}) collides with a seeded vendor")
    invoices = [d for d in bl.docs if d.layout != "letter"] + [d.attach for d in bl.docs if d.attach is not None]
    originals = [d for d in invoices if not d.key.startswith("resent_copy")]
    printed = Counter((d.vendor, d.number) for d in originals)
    out += [f"{v} prints {no} twice" for (v, no), n in sorted(printed.items()) if n > 1]
    out += [f"{d.vendor} number {d.number} is not LETTERS-DIGITS" for d in originals
            if not re.fullmatch(r"[A-Za-z]{1,8}-\d+", d.number or "")]
    out += [f"{po.vendor}: a receipt of nothing on {r.day}" for po in bl.pos for r in po.receipts
            if any(q <= 0 for q in r.qty.values())]
    twins = Counter((d.vendor, id(d.po), d.total, d.invoice_date) for d in originals if d.po is not None)
    planted = {(d.vendor, id(d.po), d.total, d.invoice_date) for d in originals if d.key == "same_looking_first"}
    out += [f"{k[0]}: two invoices on one order with the same total and date" for k, n in twins.items()
            if n > 1 and k not in planted]
    return out


def _history_numbers(ctx: GeneratorContext) -> dict[str, list[str]]:
    """Invoice numbers each vendor already used (entered during history)."""
    with ctx.builder.db.transaction() as conn:
        rows = conn.execute(select(ap_invoices.c.vendor_id, ap_invoices.c.invoice_no)).all()
    out: dict[str, list[str]] = {}
    for vendor, no in rows:
        out.setdefault(str(vendor), []).append(str(no))
    return out


def _october_rent(ctx: GeneratorContext) -> tuple[float, str]:
    """October's rent as history entered it (amount, number): November's bills the same."""
    with ctx.builder.db.transaction() as conn:
        row = conn.execute(select(ap_invoices.c.total_cents, ap_invoices.c.invoice_no)
                           .where(ap_invoices.c.vendor_id == cases.RENT, ap_invoices.c.invoice_date == "2026-10-01")
                           ).first()
    if row is None:
        raise GenerationError("history entered no October rent invoice")
    return row[0] / 100, str(row[1])


def _play(ctx: GeneratorContext, bl: Backlog, cal: Calendar) -> None:
    """Play the month day by day: orders sent, goods received, documents delivered; what comes
    after the start goes into the world (scheduled messages and receipts)."""
    b, erp = ctx.builder, ctx.erp
    start = cal.start
    by_day: dict[str, list[Doc]] = {}
    for d in sorted(bl.docs, key=lambda d: d.delivered):
        by_day.setdefault(d.delivered, []).append(d)
    requests = {id(doc): (vendor, body) for vendor, doc, body in bl.bank_requests}
    message_ids: dict[int, str] = {}
    for day in [d for d in cal.days if d <= start]:
        b.set_date(day)
        for po in bl.pos:
            if po.day == day:
                purchasing.place(erp, po)
        for po in bl.pos:
            for r in po.receipts:
                if r.day == day and not r.scheduled:
                    purchasing.post_receipt(erp, po, r)
        for doc in by_day.get(day, []):
            documents.log_billed(b, doc)
            message_ids[id(doc)] = documents.deliver_now(b, doc)
            if id(doc) in requests:
                vendor, body = requests[id(doc)]
                bl.planted["bank_email"]["pending_account"] = _request_bank_change(
                    ctx, vendor, {**body, "source_ref": message_ids[id(doc)]})
    late = [d for d in sorted(bl.docs, key=lambda d: d.delivered) if d.delivered > start]
    for doc in late:
        documents.log_billed(b, doc)
    unplaced = [po for po in bl.pos if po.id is None]
    if unplaced:
        raise GenerationError(f"{len(unplaced)} order(s) planned after the start ({unplaced[0].day})")
    b.set_date(start)
    ctx.world.vendor_default = {"silent": True}
    ctx.world.calls = bl.calls
    ctx.world.warehouse = {"reports": [documents.scheduled(d) for d in late]}
    ctx.world.receipts = [purchasing.scheduled_receipt(po, r) for po in bl.pos for r in po.receipts if r.scheduled]


def _request_bank_change(ctx: GeneratorContext, vendor: str, body: dict[str, Any]) -> str:
    """A bank-detail change entered as pending through the vendor portal (setup), so the agent
    may verify or reject it (it could not decide on a change it requested itself)."""
    model = BankAccountIn(**body)
    data = ctx.builder.act("sys-setup", "vendor.bank.request", f"/vendors/{vendor}/bank-accounts", body,
                           lambda tx: request_bank_account(tx, vendor, model))
    return str(data["id"])


# The names the hold report (AP-7.1) may give its vendors: the vendor record's name, its id and
# the short forms a clerk writes ("Buckeye" alone is not one: Buckeye Safety Products is another vendor).
VENDOR_ALIASES = {
    "midstate_names": ["Mid-State Brass Supply", "V-0101", "Mid-State", "Midstate", "Mid State"],
    "keystone_names": ["Keystone Fastener", "V-0104", "Keystone"],
    "calibration_names": ["Buckeye Calibration Labs", "V-0204", "Buckeye Calibration", "Buckeye Cal", "buckeyecal.com"],
}


def _truth(ctx: GeneratorContext, bl: Backlog, size: Size, planted_docs: int) -> None:
    """The planted cases, the reference rows they imply, and the checks' placeholder values."""
    windows = Counter("turn 1" if d.delivered <= ctx.turns[0].date else "turn 2" if d.delivered <= ctx.turns[1].date
                      else "turn 3" for d in bl.docs)
    truth = ctx.truth
    truth.planted = bl.planted
    truth.expect = bl.expect
    truth.absent = bl.absent
    truth.values = {**bl.values, **bl.aliases, **VENDOR_ALIASES}
    vendors = sorted({d.vendor_name for d in bl.docs if d.layout != "letter"})
    facts: dict[str, Any] = {"documents": len(bl.docs), "planted_documents": planted_docs,
                             "exceptions": size.exceptions, "by_turn": dict(sorted(windows.items())),
                             "vendors": len(vendors), "orders": len(bl.pos), "first_day": FIRST_DAY}
    truth.facts = facts
