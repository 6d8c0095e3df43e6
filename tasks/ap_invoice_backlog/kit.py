"""What the planted cases and the routine stream build documents with: the vendors as they
print and send, their items and supplies, seeded quantities and prices, and invoice numbers."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .documents import Doc, Line, cents
from .plan import Calendar
from .purchasing import PoLine, PoPlan, Receipt
from .vendors import MRO_ACCOUNT, NEW_VENDORS, STOCK_LAYOUT, STOCK_NUMBERING, TAX_RATE, Numbers

if TYPE_CHECKING:
    from tasks.northgate.catalog import Item
    from tasks.northgate.company import Northgate

#: What the MRO vendors sell on a PO without an item number: (description, price, quantity choices).
MRO_SUPPLIES: dict[str, list[tuple[str, float, tuple[int, ...]]]] = {
    "V-0201": [("Nitrile gloves, box of 100", 8.95, (10, 20, 40)), ("Shop towels, case of 500", 42.50, (2, 4, 6)),
               ("Semi-synthetic cutting fluid, 5 gal", 96.00, (2, 3, 4)),
               ("Flap discs, box of 10", 27.80, (3, 5, 8)), ("Pipe thread sealant, 16 oz", 11.40, (6, 12))],
    "V-0202": [("Carbide end mill, half inch", 48.60, (4, 6, 10)), ("Cobalt drill set, 29 pc", 139.00, (1, 2)),
               ("Turning inserts CNMG 432, box of 10", 84.20, (2, 4, 6)), ("Pipe tap set, quarter inch NPT", 36.75, (2, 4))],
    "V-0203": [("Safety glasses, box of 12", 31.20, (2, 4, 6)), ("Foam earplugs, box of 200", 24.90, (2, 3, 5)),
               ("Hi-vis vests, pack of 10", 54.00, (1, 2, 3)), ("Cut-resistant sleeves, pair", 9.85, (12, 24))],
}


@dataclass(frozen=True)
class Party:
    """A vendor as its documents show it."""

    id: str
    name: str
    email: str
    address: str
    layout: str
    numbering: str
    terms: str


class Kit:
    """Seeded building blocks for documents (one per generation; draw in a fixed order)."""

    def __init__(self, ng: Northgate, rng: random.Random, cal: Calendar, existing_numbers: dict[str, list[str]]):
        self.rng = rng
        self.cal = cal
        self.numbers = Numbers(rng)
        self.existing = existing_numbers
        self.used: dict[str, set[str]] = {}
        self.parties: dict[str, Party] = {}
        for v in ng.vendors:
            self.parties[v.id] = Party(v.id, v.name, f"ar@{v.domain}", f"{v.city}, {v.state}",
                                       STOCK_LAYOUT.get(v.id, "services"), STOCK_NUMBERING.get(v.id, "INV-{n5}"),
                                       v.terms)
        for nv in NEW_VENDORS:
            self.parties[nv.id] = Party(nv.id, nv.name, f"ar@{nv.domain}", f"{nv.city}, {nv.state}",
                                        "po_lines" if nv.kind == "mro" else "services", nv.numbering, nv.terms)
        self.items: dict[str, list[Item]] = {}
        for it in ng.catalog.items:
            if it.preferred_vendor and it.type not in ("phantom", "subassembly", "finished"):
                self.items.setdefault(it.preferred_vendor, []).append(it)
        self.item = {it.id: it for it in ng.catalog.items}

    # -- numbers and prices ---------------------------------------------------------------------

    def number(self, vendor: str) -> str:
        """The vendor's next invoice number (never one it used in history)."""
        p = self.parties[vendor]
        while True:
            no = self.numbers.next(vendor, p.numbering)
            if no not in self.existing.get(vendor, []) and no not in self.used.get(vendor, set()):
                return self.claim(vendor, no)

    def claim(self, vendor: str, number: str) -> str:
        """Record that the vendor printed `number` (so its own stream never repeats it)."""
        self.used.setdefault(vendor, set()).add(number)
        return number

    def price(self, item: Item) -> float:
        """A PO price near the item's standard cost (whole cents)."""
        return round(item.standard_cost * self.rng.uniform(0.98, 1.04), 2) or 0.01

    def qty(self, item: Item, value: float) -> float:
        """An order quantity worth about `value`: the MOQ or more, in order multiples."""
        step = item.order_multiple or 1
        q = max(item.moq or step, round(value / max(item.standard_cost, 0.01) / step) * step)
        return float(q)

    # -- orders ----------------------------------------------------------------------------------

    def stock_po(self, vendor: str, day: str, n_lines: int, value: float, *, items: list[str] | None = None
                 ) -> PoPlan:
        """A PO of stock items from the vendor (given items, or seeded distinct ones)."""
        pool = self.items[vendor]
        chosen = [self.item[i] for i in items] if items else self.rng.sample(pool, min(n_lines, len(pool)))
        lines = [PoLine(it.description, self.qty(it, value / len(chosen) * self.rng.uniform(0.7, 1.3)),
                        self.price(it), item=it) for it in chosen]
        return PoPlan(vendor, day, lines)

    def mro_po(self, vendor: str, day: str, n_lines: int) -> PoPlan:
        """A PO of described supplies (no item number), expensed to shop supplies on receipt."""
        chosen = self.rng.sample(MRO_SUPPLIES[vendor], min(n_lines, len(MRO_SUPPLIES[vendor])))
        lines = [PoLine(desc, float(self.rng.choice(qtys)), price, account=MRO_ACCOUNT) for desc, price, qtys in chosen]
        return PoPlan(vendor, day, lines)

    # -- documents --------------------------------------------------------------------------------

    def po_invoice(self, key: str, po: PoPlan, receipt: Receipt | None, invoice_date: str, delivered: str, *,
                   qty: dict[int, float] | None = None, price: dict[int, float] | None = None,
                   number: str | None = None, **extra: object) -> Doc:
        """The vendor's invoice for what it shipped (a receipt's quantities, or `qty`), at the PO
        price unless `price` says otherwise; MRO supplies carry sales tax."""
        p = self.parties[po.vendor]
        billed = qty if qty is not None else (receipt.qty if receipt is not None else {})
        lines = []
        for i, q in sorted(billed.items()):
            ln = po.lines[i]
            unit = (price or {}).get(i, ln.price)
            lines.append(Line(ln.description, q, unit, cents(q * unit), item=ln.item.id if ln.item else None,
                              po_index=i))
        doc = Doc(key=key, vendor=p.id, vendor_name=p.name, sender=p.email, delivered=delivered,
                  layout=p.layout, number=self.claim(p.id, number) if number else self.number(p.id),
                  invoice_date=invoice_date, po=po,
                  lines=lines, terms=p.terms, address=p.address,
                  tax_rate=TAX_RATE if po.lines[0].item is None else 0.0)
        for k, v in extra.items():
            setattr(doc, k, v)
        doc.subject = doc.subject or f"Invoice {doc.number} from {p.name}"
        # `{po}` is filled when the message is delivered: the order's id exists only once it is placed.
        doc.body = doc.body or (f"Hello Northgate accounts payable,\n\nPlease find attached our invoice {doc.number} "
                                f"for your order {{po}}.\n\n{p.name} - accounts receivable")
        return doc

    def service_invoice(self, key: str, vendor: str, lines: list[Line], invoice_date: str, delivered: str, *,
                        number: str | None = None, **extra: object) -> Doc:
        """An invoice for services or supplies billed without a PO."""
        p = self.parties[vendor]
        doc = Doc(key=key, vendor=p.id, vendor_name=p.name, sender=p.email, delivered=delivered, layout="services",
                  number=self.claim(vendor, number) if number else self.number(vendor), invoice_date=invoice_date,
                  lines=lines, terms=p.terms,
                  address=p.address)
        for k, v in extra.items():
            setattr(doc, k, v)
        doc.subject = doc.subject or f"Invoice {doc.number} from {p.name}"
        doc.body = doc.body or (f"Hello,\n\nAttached is invoice {doc.number}.\n\nThank you,\n{p.name}")
        return doc

    def letter(self, key: str, vendor: str, sender: str, subject: str, body: str, delivered: str,
               attach: Doc | None = None) -> Doc:
        """A plain message (a reply, a notice) — with an enclosed invoice when `attach` is given."""
        p = self.parties.get(vendor)
        if attach is not None:
            attach.subject = subject
        return Doc(key=key, vendor=vendor, vendor_name=p.name if p else vendor, sender=sender, delivered=delivered,
                   layout="letter", subject=subject, body=body, attach=attach)
