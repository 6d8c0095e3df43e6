"""Master data service functions: item reads, BOM explosion, agreement prices, the item's planning fields."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field
from sqlalchemy import or_, select

from ...http.api import In
from ...kernel.errors import invalid, not_found
from ...kernel.money import Quantity, q4
from ...kernel.schema import metadata
from ...kernel.tx import Tx
from .tables import MADE_TYPES, approved_substitutes, boms, items, price_agreements, price_breaks, routings


def get_item(tx: Tx, item_id: str) -> dict[str, Any]:
    """The item row, or 404."""
    return tx.get(items, item_id, "item")


def is_made(item: dict[str, Any]) -> bool:
    """True for items the plant makes on work orders."""
    return item["type"] in MADE_TYPES


def bom_lines(tx: Tx, parent: str, on: str | None = None) -> list[dict[str, Any]]:
    """The BOM lines of `parent` in effect on `on` (default today), in line order."""
    on = on or tx.business_date
    stmt = (select(boms).where(boms.c.parent_item == parent)
            .where(or_(boms.c.effective_from.is_(None), boms.c.effective_from <= on))
            .where(or_(boms.c.effective_to.is_(None), boms.c.effective_to >= on))
            .order_by(boms.c.line_no, boms.c.id))
    return tx.all(stmt)


def explode(tx: Tx, parent: str, qty: float = 1.0, on: str | None = None, *,
            through_phantoms: bool = True, _depth: int = 0) -> list[dict[str, Any]]:
    """Components needed for `qty` of `parent`, scrap included, one level deep except that
    phantom components are replaced by their own components (phantoms are never stocked)."""
    if _depth > 20:
        raise invalid(f"The bill of materials of {parent} is circular.")
    out: dict[str, float] = {}
    for line in bom_lines(tx, parent, on):
        need = qty * line["qty_per"] * (1 + (line["scrap_pct"] or 0) / 100)
        comp = tx.find(items, id=line["component_item"])
        if through_phantoms and comp is not None and comp["type"] == "phantom":
            for sub in explode(tx, comp["id"], need, on, _depth=_depth + 1):
                out[sub["item_id"]] = out.get(sub["item_id"], 0.0) + sub["qty"]
        else:
            out[line["component_item"]] = out.get(line["component_item"], 0.0) + need
    return [{"item_id": k, "qty": q4(v)} for k, v in out.items()]


def explode_all_levels(tx: Tx, parent: str, on: str | None = None) -> list[dict[str, Any]]:
    """Multi-level explosion per unit of `parent`: every line with its level and extended qty."""
    rows: list[dict[str, Any]] = []

    def walk(item_id: str, per: float, level: int) -> None:
        if level > 20:
            raise invalid(f"The bill of materials of {parent} is circular.")
        for line in bom_lines(tx, item_id, on):
            ext = per * line["qty_per"] * (1 + (line["scrap_pct"] or 0) / 100)
            comp = tx.find(items, id=line["component_item"])
            rows.append({"level": level, "parent": item_id, "component": line["component_item"],
                         "description": comp["description"] if comp else None,
                         "type": comp["type"] if comp else None, "qty_per": line["qty_per"],
                         "scrap_pct": line["scrap_pct"], "extended_qty": q4(ext),
                         "pending_change": bool(line["pending_change"])})
            walk(line["component_item"], ext, level + 1)

    walk(parent, 1.0, 1)
    return rows


def agreement_price(tx: Tx, vendor_id: str, item_id: str, qty: float, on: str | None = None
                    ) -> tuple[float, str] | None:
    """The agreement unit price at the highest quantity break `qty` reaches, valid on `on`,
    with the agreement id; None when no agreement applies."""
    on = on or tx.business_date
    agr = tx.one(select(price_agreements).where(
        price_agreements.c.vendor_id == vendor_id, price_agreements.c.item_id == item_id,
        price_agreements.c.valid_from <= on, price_agreements.c.valid_to >= on)
        .order_by(price_agreements.c.valid_from.desc(), price_agreements.c.id))
    if agr is None:
        return None
    brk = tx.one(select(price_breaks).where(price_breaks.c.agreement_id == agr["id"],
                                            price_breaks.c.min_qty <= qty)
                 .order_by(price_breaks.c.min_qty.desc()))
    if brk is None:
        return None
    return float(brk["unit_price"]), agr["id"]


def agreement_view(tx: Tx, row: dict[str, Any]) -> dict[str, Any]:
    """A price agreement with its breaks."""
    return {**row, "breaks": [{"min_qty": b["min_qty"], "unit_price": b["unit_price"]}
                              for b in tx.rows(price_breaks, order_by=price_breaks.c.min_qty,
                                               agreement_id=row["id"])],
            "active": row["valid_from"] <= tx.business_date <= row["valid_to"]}


def item_out(row: dict[str, Any]) -> dict[str, Any]:
    """An item as the API shows it."""
    return {**{k: v for k, v in row.items()}, "lot_controlled": bool(row["lot_controlled"]),
            "active": bool(row["active"]), "made": row["type"] in MADE_TYPES}


# Inventory sits above master data (it moves items); it registers how an item's on-hand rows
# are read, for the item detail.
_ON_HAND: list[Callable[..., list[dict[str, Any]]]] = []


def register_on_hand(fn: Callable[..., list[dict[str, Any]]]) -> None:
    """Install ``fn(tx, item_id=...) -> on-hand rows`` (inventory does)."""
    _ON_HAND[:] = [fn]


def _on_hand(tx: Tx, item_id: str) -> list[dict[str, Any]]:
    if not _ON_HAND:
        raise RuntimeError("the item detail needs on-hand rows from inventory, which is not imported")
    return _ON_HAND[0](tx, item_id=item_id)


def item_view(tx: Tx, item_id: str) -> dict[str, Any]:
    """An item with its BOM, where-used, substitutes, price agreements and on-hand by location."""
    row = get_item(tx, item_id)
    subs = tx.all(select(approved_substitutes).where(
        or_(approved_substitutes.c.item_id == item_id, approved_substitutes.c.substitute_id == item_id))
        .order_by(approved_substitutes.c.id))
    agrs = tx.rows(price_agreements, item_id=item_id)
    oh = _on_hand(tx, item_id)
    return {**item_out(row),
            "bom": [{k: l[k] for k in ("line_no", "component_item", "qty_per", "scrap_pct", "effective_from",
                                       "effective_to")} | {"pending_change": bool(l["pending_change"])}
                    for l in tx.rows(boms, order_by=[boms.c.line_no, boms.c.id], parent_item=item_id)],
            "routing": [{k: r[k] for k in ("step", "work_center_id", "setup_hours", "hours_per_unit")}
                        for r in tx.rows(routings, order_by=routings.c.step, item_id=item_id)],
            "substitutes": subs,
            "agreements": [agreement_view(tx, a) for a in agrs],
            "on_hand": oh, "on_hand_total": q4(sum(r["qty"] for r in oh))}


PLANNING_FIELDS = ("lead_time_days", "safety_stock", "moq", "order_multiple", "preferred_vendor", "planner")


class ItemPatch(In):
    """Planning fields of an item (the only ones the API may change)."""

    lead_time_days: int | None = Field(None, ge=0, le=730)
    safety_stock: Quantity | None = Field(None, ge=0)
    moq: Quantity | None = Field(None, ge=0)
    order_multiple: Quantity | None = Field(None, ge=0)
    preferred_vendor: str | None = None
    planner: str | None = None


def update_item(tx: Tx, item_id: str, body: ItemPatch) -> dict[str, Any]:
    """Change an item's planning fields."""
    get_item(tx, item_id)
    values = {k: v for k, v in body.model_dump(exclude_unset=True).items()}
    if not values:
        raise invalid("Nothing to change: give at least one planning field.")
    for k in ("safety_stock", "moq", "order_multiple"):
        if values.get(k) is not None:
            values[k] = q4(values[k])
        elif k in values:
            raise invalid(f"{k} cannot be null.")
    if "lead_time_days" in values and values["lead_time_days"] is None:
        raise invalid("lead_time_days cannot be null.")
    if values.get("preferred_vendor"):
        vendors = metadata.tables.get("vendors")
        if vendors is not None and tx.find(vendors, id=values["preferred_vendor"]) is None:
            raise not_found("vendor", values["preferred_vendor"])
    tx.touch("item", item_id)
    tx.update(items, item_id, **values)
    return item_view(tx, item_id)
