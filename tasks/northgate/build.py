"""One call for generators: Northgate with its opening balances and a year of history."""
from __future__ import annotations

from pathlib import Path

from erp_service.domains.comms import dispositions, messages
from erp_service.domains.ledger import Line, post
from sqlalchemy import select

from .api import InProcessErp
from .company import HISTORY_START, Northgate, build_master
from .history import HISTORY_WORLD, run_history
from .people import CONTROLLER

#: Opening balances on the first day of history (cents, debit positive; non-control accounts).
OPENING = [("1000", 90_000_000), ("1500", 120_000_000), ("1510", -30_000_000), ("1540", 60_000_000),
           ("1550", -12_000_000), ("3000", -10_000_000), ("3100", -218_000_000)]


def build_northgate(path: Path, seed: int, *, history_end: str, last_order: str) -> tuple[Northgate, InProcessErp]:
    """Master data, opening balances, and history from HISTORY_START to `history_end` (no new
    purchase orders after `last_order`, so the open documents at the start are the ones a task
    plants)."""
    ng = build_master(path, seed, start=HISTORY_START)
    ng.builder.run(CONTROLLER, lambda tx: post(tx, source="opening", source_ref="OPENING",
                                               memo="Opening balances", lines=[Line(a, c) for a, c in OPENING]))
    erp = InProcessErp(ng.builder, ng.tokens, HISTORY_WORLD)
    run_history(ng, start=HISTORY_START, end=history_end, last_order=last_order, erp=erp)
    close_history_inbox(ng)
    return ng, erp


def close_history_inbox(ng: Northgate) -> None:
    """The history's clerks dealt with every message they received: record it as processed."""
    def fn(tx):
        open_msgs = tx.all(select(messages.c.id, messages.c.box).where(
            messages.c.direction == "in", messages.c.disposition.is_(None)).order_by(messages.c.id))
        for m in open_msgs:
            tx.update(messages, m["id"], disposition="processed")
            tx.insert(dispositions, message_id=m["id"], disposition="processed", ref=None,
                      note="processed during normal operations", forwarded_to=None, forward_id=None,
                      by_user="riley.park" if m["box"] == "ap" else "luis.ortega", on_date=tx.business_date)
    ng.builder.run("sys-setup", fn)
