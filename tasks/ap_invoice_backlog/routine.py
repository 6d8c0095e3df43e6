"""The routine stream of the backlog: the ordinary invoices around the planted cases, each of
which matches (PO invoices billing exactly what was received at the order's price) or is coded
by the list and inside its limit (services without a PO). They are most of the inbox, and
processing them right is most of the work; none of them is a trap.

Counts come from the band's `documents`; delivery days are spread over the three windows
(before turn 1, before turn 2, before turn 3) in the shares of `plan.BATCH_SHARES`.
"""
from __future__ import annotations

from collections.abc import Callable

from .documents import Line, cents
from .kit import MRO_SUPPLIES, Kit
from .plan import RECEIPTS_END, Backlog, batch_quota
from .vendors import CODING_BY_VENDOR

#: Stock and MRO vendors that bill on a PO, and how often (weights).
PO_VENDORS = {"V-0101": 3.0, "V-0103": 2.0, "V-0104": 1.5, "V-0105": 3.0, "V-0106": 3.0, "V-0111": 1.5,
              "V-0112": 1.5, "V-0201": 2.0, "V-0202": 1.5, "V-0203": 1.0}
#: Vendors whose invoices sometimes carry freight (castings and bar stock, as in history).
FREIGHT_VENDORS = ("V-0101", "V-0103")
#: Share of the routine documents that are services billed without a PO.
NONPO_SHARE = 0.16
PARTIAL_SHARE = 0.06


def _service_lines(kit: Kit, vendor: str) -> list[Line]:
    """One routine non-PO invoice's lines for `vendor` (amounts inside its limit)."""
    rng = kit.rng

    def qty_rate(desc: str, qty: float, rate: float) -> Line:
        return Line(desc, qty, rate, cents(qty * rate))

    def amount(desc: str, value: float) -> Line:
        return Line(desc, None, None, cents(value))

    makers: dict[str, Callable[[], list[Line]]] = {
        "V-0210": lambda: [qty_rate("Temporary labor, hours", float(rng.randint(48, 110)), 24.50)],
        "V-0211": lambda: [qty_rate("Uniform rental, weekly", 1.0, round(rng.uniform(168, 214), 2)),
                           qty_rate("Shop towel service", 1.0, 38.00)],
        "V-0206": lambda: [qty_rate("Janitorial services, monthly", 1.0, 1850.00)]
        + ([qty_rate("Floor scrubbing, warehouse", 1.0, 240.00)] if rng.random() < 0.4 else []),
        "V-0209": lambda: [qty_rate("Alarm monitoring, monthly", 1.0, 345.00)]
        + ([qty_rate("Service call, door sensor", 1.0, 125.00)] if rng.random() < 0.3 else []),
        "V-0207": lambda: [qty_rate("Roll-off container pulls", float(rng.randint(2, 4)), 165.00),
                           qty_rate("Landfill disposal, tons", round(rng.uniform(2.5, 6.0), 1), 48.00)],
        "V-0205": lambda: [qty_rate("Service call", 1.0, 185.00),
                           qty_rate("Labor, hours", float(rng.randint(3, 12)), 95.00),
                           amount("Parts and materials", rng.uniform(60, 900))],
        "V-0212": lambda: [qty_rate("Electrical labor, hours", float(rng.randint(4, 14)), 110.00),
                           amount("Materials", rng.uniform(80, 600))],
        "V-0204": lambda: [qty_rate("Calibration of pressure gauges", float(rng.randint(6, 14)), 36.00)],
        "V-0208": lambda: [qty_rate("Copy paper, case", float(rng.randint(2, 6)), 42.99),
                           qty_rate("Toner cartridge", float(rng.randint(1, 3)), 89.50)],
    }
    return makers[vendor]()


NONPO_WEIGHTS = {"V-0210": 3.0, "V-0211": 2.5, "V-0206": 1.0, "V-0209": 1.0, "V-0207": 2.0, "V-0205": 2.0,
                 "V-0212": 1.5, "V-0204": 1.0, "V-0208": 1.5}


def _pick(kit: Kit, weights: dict[str, float]) -> str:
    names = sorted(weights)
    return kit.rng.choices(names, weights=[weights[n] for n in names])[0]


def nonpo(kit: Kit, bl: Backlog, batch: int) -> None:
    """One routine invoice for services or supplies without a PO, delivered in `batch`."""
    rng, cal = kit.rng, kit.cal
    vendor = _pick(kit, NONPO_WEIGHTS)
    limit = CODING_BY_VENDOR[vendor].limit or 1e12
    lines = _service_lines(kit, vendor)
    while cents(sum(ln.amount for ln in lines)) > limit:
        lines = lines[:-1] or [Line(lines[0].description, 1.0, round(limit / 2, 2), round(limit / 2, 2))]
    delivered = rng.choice(cal.window(batch))
    inv_day = cal.shift(delivered, -rng.randint(1, 4))
    bl.add(kit.service_invoice("routine", vendor, lines, inv_day, delivered))


def monthly_bills(kit: Kit, bl: Backlog) -> int:
    """November's power and packaging bills (dated the first, arriving on turn 1's day)."""
    rng, cal = kit.rng, kit.cal
    power = kit.service_invoice("routine", "V-0108", [Line("Electricity and gas, October 2026", None, None,
                                                           cents(3600 * rng.uniform(0.9, 1.1)))],
                                "2026-11-01", cal.start)
    packaging = kit.service_invoice("routine", "V-0102", [Line("Cartons, foam and pallets", None, None,
                                                               cents(4350 * rng.uniform(0.9, 1.1)))],
                                    "2026-11-01", cal.shift(cal.start, -1))
    bl.add(power, packaging)
    return 2


def po_stream(kit: Kit, bl: Backlog, batches: list[int]) -> None:
    """Routine PO invoices, one per entry of `batches` (its delivery window); now and then an
    order arrives in two deliveries, each billed on its own invoice."""
    rng, cal = kit.rng, kit.cal
    todo = list(batches)
    while todo:
        batch = todo.pop()
        vendor = _pick(kit, PO_VENDORS)
        delivered = rng.choice(cal.window(batch))
        inv_day = cal.shift(delivered, -rng.randint(1, 3))
        rcv = min(cal.shift(inv_day, -rng.randint(0, 2)), RECEIPTS_END)
        po_day = cal.shift(rcv, -rng.randint(2, 5))
        if po_day >= rcv:                     # the calendar's first days: receive two days after ordering
            rcv = cal.shift(po_day, 2)
            inv_day = max(inv_day, rcv)
            delivered = max(delivered, cal.shift(inv_day, 1))
        if vendor in MRO_SUPPLIES:
            po = kit.mro_po(vendor, po_day, rng.randint(1, 3))
        else:
            po = kit.stock_po(vendor, po_day, rng.choice([1, 1, 2, 2, 3]), rng.uniform(800, 6000))
        bl.pos.append(po)
        freight = round(rng.uniform(85, 340), 2) if vendor in FREIGHT_VENDORS and rng.random() < 0.5 else 0.0
        # (The quantity is tested after the draw, so that the draws stay in the same order.)
        split = todo and len(po.lines) == 1 and cal.shift(po_day, 2) < rcv and rng.random() < PARTIAL_SHARE \
            and po.lines[0].qty >= 10
        part = float(round(po.lines[0].qty * rng.choice([0.6, 0.75]) / 5) * 5) if split else 0.0
        if split and 0 < part < po.lines[0].qty:
            first_rcv = cal.shift(po_day, 2)
            r1 = po.receive(first_rcv, {0: part})
            r2 = po.receive(rcv, {0: po.lines[0].qty - part})
            first_inv = min(cal.shift(first_rcv, 1), inv_day)
            bl.add(kit.po_invoice("routine", po, r1, first_inv, min(cal.shift(first_inv, 1), delivered)))
            bl.add(kit.po_invoice("routine", po, r2, inv_day, delivered, freight=freight))
            todo.pop()
        else:
            r = po.receive(rcv)
            bl.add(kit.po_invoice("routine", po, r, inv_day, delivered, freight=freight))


def routine(kit: Kit, bl: Backlog, n_docs: int) -> None:
    """`n_docs` routine documents: the month's bills, services without a PO, and PO invoices."""
    n = max(0, n_docs - monthly_bills(kit, bl))
    batches = batch_quota(n, kit.rng)
    n_nonpo = round(n * NONPO_SHARE)
    for batch in batches[:n_nonpo]:
        nonpo(kit, bl, batch)
    po_stream(kit, bl, batches[n_nonpo:])
