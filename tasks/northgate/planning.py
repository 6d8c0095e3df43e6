"""Northgate's production planning on top of the history: the planner's weekly forecast of the
finished valves (from the order history), the planner's weekly MRP routine (run MRP, release
the firm planned orders) and a preview of an MRP run on a scratch copy of the database.

Nothing here runs inside `run_history`, so packs that do not call it keep their bytes: a pack
that needs planning history calls `install_forecasts` and `weekly_planning` after building
Northgate (its last history day is then a planning day).
"""
from __future__ import annotations

import datetime as dt
import math
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from erp_service.domains.masterdata import items
from erp_service.domains.planning import MrpRunIn, forecasts, mrp_suggestions, run_mrp
from erp_service.domains.sales import sales_orders, so_lines
from erp_service.kernel.clock import set_business_date
from erp_service.kernel.db import Database
from erp_service.kernel.identity import load_actor
from erp_service.kernel.tx import Tx

from .api import InProcessErp
from .company import Northgate
from .history import PLANNER

#: Weeks of order history a forecast averages.
USAGE_WEEKS = 13


def monday_of(day: str) -> str:
    """The Monday of the week of `day`."""
    d = dt.date.fromisoformat(day)
    return (d - dt.timedelta(days=d.weekday())).isoformat()


def weekly_usage(ng: Northgate, item_ids: list[str], until: str, weeks: int = USAGE_WEEKS) -> dict[str, float]:
    """Average weekly quantity ordered by customers per item over the `weeks` before `until`."""
    since = (dt.date.fromisoformat(until) - dt.timedelta(days=7 * weeks)).isoformat()
    with ng.builder.db.transaction() as conn:
        rows = conn.execute(select(so_lines.c.item_id, func.sum(so_lines.c.qty))
                            .join(sales_orders, sales_orders.c.id == so_lines.c.so_id)
                            .where(sales_orders.c.order_date > since, sales_orders.c.order_date <= until,
                                   so_lines.c.item_id.in_(item_ids))
                            .group_by(so_lines.c.item_id)).all()
    return {str(i): float(q) / weeks for i, q in rows}


def install_forecasts(ng: Northgate, *, first_week: str, weeks: int) -> dict[str, float]:
    """The planner's weekly forecast of every finished valve (its recent weekly orders, rounded
    up to 5) for `weeks` weeks from the Monday `first_week`; returns the weekly quantities."""
    valves = sorted(i.id for i in ng.catalog.items if i.type == "finished")
    usage = weekly_usage(ng, valves, first_week)
    per_week = {v: float(5 * math.ceil(usage.get(v, 0.0) / 5)) for v in valves if usage.get(v, 0.0) > 0}
    start = dt.date.fromisoformat(first_week)
    rows = [{"item_id": v, "week_start": (start + dt.timedelta(days=7 * w)).isoformat(), "qty": q}
            for v, q in sorted(per_week.items()) for w in range(weeks)]
    ng.builder.insert_many(forecasts, rows)
    return per_week


def weekly_planning(erp: InProcessErp, *, planner: str = PLANNER,
                    keep: Callable[[dict[str, Any]], bool] = lambda s: True) -> dict[str, Any]:
    """The planner's routine: run MRP with the defaults, release the firm planned orders (those
    `keep` accepts). Returns the run and the released suggestions."""
    run = erp.call(planner, "POST", "/mrp/runs", {})
    sugs = erp.call(planner, "GET", "/mrp/suggestions", None, run_id=run["id"], limit=1000)["items"]
    released = []
    for s in sugs:
        if s["firm"] and s["kind"] in ("planned_po", "planned_wo") and keep(s):
            released.append(erp.call(planner, "POST", f"/mrp/suggestions/{s['id']}/release", {}))
    return {"run": run, "suggestions": sugs, "released": released}


def preview_mrp(ng: Northgate, *, on: str, lead_times: dict[str, int] | None = None,
                user: str = PLANNER) -> list[dict[str, Any]]:
    """The suggestions an MRP run with the defaults would make on `on` (with `lead_times`
    changed first), computed on a scratch copy of the database; the company is untouched."""
    with tempfile.TemporaryDirectory(prefix="ng-mrp-") as tmp:
        copy = Path(tmp) / "preview.db"
        src = sqlite3.connect(str(ng.builder.db.path))
        dst = sqlite3.connect(str(copy))
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
        db = Database(copy)
        try:  # the copy is thrown away, so the run may commit there
            with db.transaction() as conn:
                set_business_date(conn, on)
                actor = load_actor(conn, user, channel="setup")
                if actor is None:
                    raise KeyError(f"no such user {user!r}")
                for item_id, days in sorted((lead_times or {}).items()):
                    conn.execute(items.update().where(items.c.id == item_id).values(lead_time_days=days))
                tx = Tx(conn=conn, actor=actor, business_date=on)
                run = run_mrp(tx, MrpRunIn.model_validate({}))
                rows = [dict(r) for r in conn.execute(select(mrp_suggestions).where(
                    mrp_suggestions.c.run_id == run["id"]).order_by(mrp_suggestions.c.id)).mappings()]
        finally:
            db.engine.dispose()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows
