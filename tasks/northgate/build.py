"""One call for generators: Northgate with its opening balances and a year of history."""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from erp_service.domains.comms import dispositions, messages
from erp_service.domains.ledger import Line, post
from erp_service.domains.org import is_workday

from . import month_end, orders, plant, supply
from .accounting import OPENING
from .api import InProcessErp
from .company import HISTORY_START, Northgate, build_master
from .history import History, days, history_world
from .people import CONTROLLER


def build_northgate(path: Path, seed: int, *, history_end: str, last_order: str | None = None
                    ) -> tuple[Northgate, InProcessErp]:
    """Master data, opening balances, and history from HISTORY_START to `history_end` (no new
    purchase orders after `last_order`, so the open documents at the start are the ones a task
    plants). Returns the company and an in-process driver of the ERP's routes."""
    ng = build_master(path, seed, start=HISTORY_START)
    # Generation is all-or-nothing (a failed build is thrown away), so commits need not wait
    # for the disk; `finish` checkpoints the WAL into the file.
    ng.builder.db.raw("PRAGMA synchronous=OFF")
    ng.builder.run(CONTROLLER, lambda tx: post(tx, source="opening", source_ref="OPENING",
                                               memo="Opening balances", lines=[Line(a, c) for a, c in OPENING]))
    erp = InProcessErp(ng.builder, ng.tokens, history_world(ng))
    run_history(ng, start=HISTORY_START, end=history_end, last_order=last_order, erp=erp)
    close_history_inbox(ng)
    return ng, erp


def run_history(ng: Northgate, *, start: str, end: str, last_order: str | None = None,
                erp: InProcessErp | None = None) -> InProcessErp:
    """Play history from `start` (the database's date) to `end` inclusive; buyers place no
    orders after `last_order`."""
    erp = erp or InProcessErp(ng.builder, ng.tokens, history_world(ng))
    h = History(ng=ng, erp=erp, start=start, end=end, last_order=last_order)
    h.stock.load_catalog(ng.catalog)
    orders.plan_demand(h)
    supply.plan_runs(h)
    for day in days(start, end):
        if day != start:
            erp.advance(day)
        with ng.builder.db.transaction() as conn:
            working = is_workday(conn, day)
        if not working:
            continue
        h.today = day
        h.workdays.append(day)
        month_end.first_workday(h)
        orders.apply_cash(h)
        orders.take_orders(h)
        plant.run_plant(h)
        supply.receive(h)
        supply.buy(h)
        orders.ship(h)
        supply.bill(h)
        supply.pay(h)
        month_end.last_workday(h)
    return erp


def close_history_inbox(ng: Northgate) -> None:
    """The history's clerks dealt with every message they received: record it as processed."""
    handler = {"ap": "riley.park", "ar": "sara.lindqvist", "sales": "marco.rossi", "receiving": "luis.ortega"}

    def fn(tx):
        open_msgs = tx.all(select(messages.c.id, messages.c.box).where(
            messages.c.direction == "in", messages.c.disposition.is_(None)).order_by(messages.c.id))
        for m in open_msgs:
            tx.update(messages, m["id"], disposition="processed")
            tx.insert(dispositions, message_id=m["id"], disposition="processed", ref=None,
                      note="processed during normal operations", forwarded_to=None, forward_id=None,
                      by_user=handler.get(m["box"], "luis.ortega"), on_date=tx.business_date)
    ng.builder.run("sys-setup", fn)
