"""The stock-on-hand and item-usage reports."""
from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field
from sqlalchemy import func, select

from ...kernel.dates import IsoDate
from ...kernel.money import q4
from ...kernel.tx import Tx
from ..reports import AsOfParams, ReportParams, as_of_of, register_report
from .stock import EPS, balance, on_hand_rows
from .tables import inventory_txns

USAGE_KINDS = ("wo_issue", "wo_issue_reversal", "shipment", "shipment_reversal")


class OnHandParams(AsOfParams):
    item_id: str | None = None
    warehouse_id: str | None = None


class UsageParams(ReportParams):
    as_of: IsoDate | None = None
    months: int = Field(6, ge=1, le=24)
    item_id: str | None = None


def on_hand_report(tx: Tx, params: OnHandParams) -> dict[str, Any]:
    """Stock by item, warehouse, location and lot as of a date, with value at standard cost."""
    as_of = as_of_of(tx, params)
    rows = [r for r in on_hand_rows(tx, item_id=params.item_id, warehouse_id=params.warehouse_id, as_of=as_of)
            if abs(r["qty"]) > EPS]
    for r in rows:
        r["expired"] = bool(r["expiry"] and r["expiry"] < as_of)
    return {"as_of": as_of, "rows": rows, "total_value": round(sum(r["value"] for r in rows), 2)}


def item_usage_report(tx: Tx, params: UsageParams) -> dict[str, Any]:
    """Average monthly usage (issues to work orders and shipments, net of reversals) over the
    last `months` months before `as_of`, with on-hand and months of cover."""
    as_of = params.as_of.isoformat() if params.as_of else tx.business_date
    start = (dt.date.fromisoformat(as_of) - dt.timedelta(days=round(params.months * 365 / 12))).isoformat()
    stmt = (select(inventory_txns.c.item_id, func.sum(inventory_txns.c.qty).label("qty"))
            .where(inventory_txns.c.kind.in_(USAGE_KINDS), inventory_txns.c.on_date > start,
                   inventory_txns.c.on_date <= as_of)
            .group_by(inventory_txns.c.item_id).order_by(inventory_txns.c.item_id))
    if params.item_id:
        stmt = stmt.where(inventory_txns.c.item_id == params.item_id)
    rows = []
    for r in tx.all(stmt):
        used = q4(-r["qty"])
        avg = q4(used / params.months)
        oh = q4(balance(tx, r["item_id"]))
        rows.append({"item_id": r["item_id"], "used": used, "avg_monthly_usage": avg, "on_hand": oh,
                     "months_of_cover": q4(oh / avg) if avg > EPS else None})
    return {"as_of": as_of, "from": start, "months": params.months, "rows": rows}


register_report("on-hand", on_hand_report, OnHandParams, title="Stock on hand")
register_report("item-usage", item_usage_report, UsageParams, title="Average monthly item usage")
