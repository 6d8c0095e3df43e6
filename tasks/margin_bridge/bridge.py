"""Gross margin from the ledger, as the handbook defines it (FIN-1.1): revenue accounts 4000-4399
less cost-of-sales accounts 5000-5699, posted activity dated in the month."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import text

REVENUE = ("4000", "4399")
COST_OF_SALES = ("5000", "5699")


@dataclass(frozen=True)
class Margin:
    """One month's revenue, cost of sales and gross margin (cents)."""

    revenue: int
    cost: int

    @property
    def margin(self) -> int:
        return self.revenue - self.cost

    def as_dict(self) -> dict[str, int]:
        return {**asdict(self), "margin": self.margin}


def gross_margin(conn, month: str) -> Margin:
    """The month's (YYYY-MM) gross margin from posted journal lines."""
    row = conn.execute(text("""
        SELECT COALESCE(SUM(CASE WHEN l.account_id BETWEEN :r0 AND :r1
                                 THEN l.credit_cents - l.debit_cents ELSE 0 END), 0),
               COALESCE(SUM(CASE WHEN l.account_id BETWEEN :c0 AND :c1
                                 THEN l.debit_cents - l.credit_cents ELSE 0 END), 0)
        FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id
        WHERE e.status IN ('posted', 'reversed') AND substr(e.entry_date, 1, 7) = :month"""),
        {"r0": REVENUE[0], "r1": REVENUE[1], "c0": COST_OF_SALES[0], "c1": COST_OF_SALES[1], "month": month}).one()
    return Margin(int(row[0]), int(row[1]))


def invoice_margin(conn, invoice_id: str) -> tuple[int, int]:
    """(revenue, cost) in cents of one customer invoice, from its lines."""
    row = conn.execute(text("SELECT COALESCE(SUM(amount_cents), 0), COALESCE(SUM(cost_cents), 0) "
                            "FROM ar_invoice_lines WHERE invoice_id = :id"), {"id": invoice_id}).one()
    return int(row[0]), int(row[1])
