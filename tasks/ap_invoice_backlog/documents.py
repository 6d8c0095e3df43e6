"""Vendor documents of the backlog: invoices in three layouts (PO line numbers, items only,
services without a PO) and plain letters, rendered as the PDFs and emails the AP inbox gets.

A `Doc` is what a vendor (or a colleague) sends. It is rendered when it is delivered, so a PO
invoice prints the purchase order's real id and line numbers. Invoices are also recorded in
`sim_log` (kind `invoice`), where the grader's `edit_billed_amounts` rule reads what each vendor
really billed; the agent's API has no route to that table.

Columns of an invoice's table are separated by at least two spaces; the agent reads the PDF
(`erp attachment`), the message body only says that an invoice is attached.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from erp_service.domains.comms import deliver, make_pdf
from erp_service.kernel import pipeline
from erp_service.sim import sim_log

if TYPE_CHECKING:
    from erp_service.setup import CompanyBuilder

    from .purchasing import PoPlan

COMPANY = "Northgate Valve Co."
BILL_TO = f"{COMPANY}, Accounts Payable, 2200 Foundry Road, Columbus, OH 43207"
AP_BOX = "ap"


def money(x: float) -> str:
    """An amount as invoices print it (`2,266.00`)."""
    return f"{x:,.2f}"


def cents(x: float) -> float:
    """Rounded to the cent."""
    return round(x + 1e-9, 2)


@dataclass
class Line:
    """One billed line: on a PO invoice it bills PO line `po_index` of its order."""

    description: str
    qty: float | None
    unit_price: float | None
    amount: float
    item: str | None = None
    po_index: int | None = None       # index into the PO plan's lines (PO invoices)


@dataclass
class Doc:
    """One inbound message of the AP inbox: an invoice (with its PDF) or a plain letter."""

    key: str                          # "routine" or the planted case it belongs to
    vendor: str                       # vendor id (the sender's, for letters)
    vendor_name: str
    sender: str                       # email address it comes from
    delivered: str                    # the day it reaches the AP inbox
    layout: str                       # po_lines | items | services | letter
    number: str | None = None
    invoice_date: str | None = None
    po: PoPlan | None = None
    po_text: str | None = None        # a PO number printed that is not one of ours
    lines: list[Line] = field(default_factory=list)
    freight: float = 0.0
    tax_rate: float = 0.0
    terms: str = "NET30"
    bill_to: str = BILL_TO
    heading: str = "INVOICE"
    notes: list[str] = field(default_factory=list)
    subject: str = ""
    body: str = ""
    attach: Doc | None = None         # a letter that carries an invoice (a replacement)
    logged: bool = True               # recorded in sim_log as what the vendor billed
    address: str = ""

    # -- amounts -----------------------------------------------------------------------------

    @property
    def subtotal(self) -> float:
        return cents(sum(ln.amount for ln in self.lines))

    @property
    def tax(self) -> float:
        return cents(self.subtotal * self.tax_rate / 100)

    @property
    def total(self) -> float:
        return cents(self.subtotal + self.freight + self.tax)

    @property
    def po_id(self) -> str | None:
        """The PO id printed on the invoice (ours once the order exists, or a foreign one)."""
        if self.po_text:
            return self.po_text
        return self.po.id if self.po is not None else None

    def po_line(self, ln: Line) -> int | None:
        """The PO line number a billed line bills."""
        if self.po is None or ln.po_index is None:
            return None
        return self.po.line_nos[ln.po_index]

    # -- rendering -------------------------------------------------------------------------------

    def pdf_lines(self) -> list[str]:
        """The invoice as printed (the PDF's text lines after its title)."""
        out = [self.vendor_name, self.address, "", f"{self.heading} {self.number}", f"Invoice date: {self.invoice_date}",
               f"Bill to: {self.bill_to}"]
        if self.po_id:
            out.append(f"Customer PO: {self.po_id}")
        out += [f"Terms: {self.terms}", ""]
        if self.layout == "po_lines":
            out.append(_row(["PO line", "Item", "Description", "Qty", "Unit price", "Amount"], (7, 10, 34, 9, 11)))
            for ln in self.lines:
                out.append(_row([str(self.po_line(ln)), ln.item or "-", ln.description, _qty(ln.qty),
                                 _price(ln.unit_price), money(ln.amount)], (7, 10, 34, 9, 11)))
        elif self.layout == "items":
            out.append(_row(["Item", "Description", "Qty", "Unit price", "Amount"], (10, 34, 9, 11)))
            for ln in self.lines:
                out.append(_row([ln.item or "-", ln.description, _qty(ln.qty), _price(ln.unit_price),
                                 money(ln.amount)], (10, 34, 9, 11)))
        else:
            out.append(_row(["Description", "Qty", "Rate", "Amount"], (46, 7, 10)))
            for ln in self.lines:
                cells = [ln.description, _qty(ln.qty) if ln.qty is not None else "",
                         _price(ln.unit_price, 2) if ln.unit_price is not None else "", money(ln.amount)]
                out.append(_row(cells, (46, 7, 10)))
        out += ["", f"Subtotal: {money(self.subtotal)}"]
        if self.freight:
            out.append(f"Freight: {money(self.freight)}")
        if self.tax_rate:
            out.append(f"Sales tax {self.tax_rate:g}%: {money(self.tax)}")
        out.append(f"Total due: {money(self.total)}")
        if self.notes:
            out += [""] + self.notes
        out += ["", "Thank you for your business."]
        return out

    def pdf(self) -> tuple[str, bytes]:
        """(file name, PDF bytes) of the invoice; the PDF's title is the message subject."""
        return f"{(self.number or 'invoice').replace('/', '-')}.pdf", make_pdf(self.subject, self.pdf_lines())

    def text(self) -> str:
        """The message body, with the order's id where it says `{po}`."""
        return self.body.replace("{po}", self.po_id or "")

    def attachments(self) -> list[tuple[str, bytes]]:
        """What the message carries: its own PDF, or the invoice a letter encloses."""
        if self.layout != "letter":
            return [self.pdf()]
        return [self.attach.pdf()] if self.attach is not None else []

    def billed(self) -> dict[str, Any]:
        """What the vendor billed, as the grader compares it (`sim_log` payload): the lines an
        agent enters as item lines (PO invoices), freight and the total."""
        items = [{"po_line": self.po_line(ln), "item_id": ln.item, "qty": ln.qty, "unit_price": ln.unit_price,
                  "amount": ln.amount} for ln in self.lines] if self.po is not None else []
        return {"invoice_no": self.number, "vendor_id": self.vendor, "po_id": self.po_id,
                "invoice_date": self.invoice_date, "lines": items, "freight": self.freight, "tax": self.tax,
                "total": self.total, "ship_log_ids": [], "case": self.key}


def _qty(q: float | None) -> str:
    return "" if q is None else f"{q:g}"


def _price(p: float | None, places: int = 4) -> str:
    return "" if p is None else f"{p:,.{places}f}"


def _row(cells: list[str], widths: tuple[int, ...]) -> str:
    """Cells padded to their widths, always at least two spaces apart (the last is free)."""
    out = []
    for i, c in enumerate(cells):
        if i < len(widths):
            out.append(c.ljust(widths[i]) + "  ")
        else:
            out.append(c)
    return "".join(out).rstrip()


# -- delivery ------------------------------------------------------------------------------------

def log_billed(b: CompanyBuilder, doc: Doc) -> None:
    """Record what the vendor billed (every invoice, whenever it is delivered)."""
    for d in (doc, doc.attach):
        if d is None or d.layout == "letter" or not d.logged:
            continue
        b.insert(sim_log, day=d.invoice_date, actor=d.vendor, kind="invoice", ref=d.number,
                 payload=json.dumps(d.billed(), sort_keys=True))


def deliver_now(b: CompanyBuilder, doc: Doc) -> str:
    """Deliver a document into the AP inbox on the builder's date, as the mail system does."""
    atts = doc.attachments()
    out = pipeline.write(b.db, b.actor("sys-mail"), action="msg.deliver", method="SETUP", path=f"/inbox/{AP_BOX}",
                         body={"subject": doc.subject},
                         fn=lambda tx: deliver(tx, AP_BOX, doc.sender, doc.subject, doc.text(), atts,
                                               received_on=doc.delivered))
    return str(out.data["id"])


def scheduled(doc: Doc) -> dict[str, Any]:
    """The world's scheduled report (`warehouse.reports`, box ap) that delivers `doc` on its
    day between turns: the same subject, body and PDF as a document delivered at once."""
    inv = doc if doc.layout != "letter" else doc.attach
    rep: dict[str, Any] = {"on": doc.delivered, "box": AP_BOX, "from": doc.sender, "subject": doc.subject,
                           "body": doc.text()}
    if inv is not None:
        if inv.subject != doc.subject:
            raise ValueError(f"{doc.subject!r}: an enclosed invoice is titled by its letter's subject")
        name, _ = inv.pdf()
        rep.update({"lines": inv.pdf_lines(), "filename": name})
    return rep
