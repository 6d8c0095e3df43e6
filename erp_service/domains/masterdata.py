"""Master data of the supply side: items, warehouses and locations, lots, bills of materials,
work centers and routings, price agreements with quantity breaks, approved substitutes.

Master data is loaded by scenario generators; through the API only an item's planning fields
can change (PATCH /items/{id}). Vendors and their bank accounts live in `vendors.py`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Depends
from pydantic import BaseModel, Field
from sqlalchemy import Column, Float, Integer, String, Table, Text, UniqueConstraint, or_, select

from ..http.api import Api, Envelope, In, Page, page_params, read_api, write_api
from ..http.lazy_routes import DomainRouter
from ..kernel.dates import IsoDate
from ..kernel.errors import invalid, not_found
from ..kernel.listing import PageRequest, paginate
from ..kernel.money import Quantity, q4
from ..kernel.schema import metadata
from ..kernel.tx import Tx, register_object

ITEM_TYPES = ("bar_stock", "casting", "seal", "gasket", "fitting", "subassembly", "phantom", "finished")
#: Item types the plant makes (work orders); everything else is bought (purchase orders).
MADE_TYPES = ("subassembly", "phantom", "finished")

items = Table(
    "items", metadata,
    Column("id", String, primary_key=True),               # BR-0750
    Column("description", String, nullable=False),
    Column("type", String, nullable=False),               # one of ITEM_TYPES
    Column("category", String),
    Column("uom", String, nullable=False, default="ea"),
    Column("lot_controlled", Integer, nullable=False, default=0),
    Column("shelf_life_days", Integer),
    Column("standard_cost", Float, nullable=False, default=0.0),   # per unit, 4 dp
    Column("list_price", Float),                                   # per unit, 4 dp
    Column("lead_time_days", Integer, nullable=False, default=0),
    Column("safety_stock", Float, nullable=False, default=0.0),
    Column("moq", Float, nullable=False, default=0.0),
    Column("order_multiple", Float, nullable=False, default=0.0),
    Column("preferred_vendor", String),
    Column("planner", String),
    Column("default_warehouse", String),
    Column("active", Integer, nullable=False, default=1),
)

warehouses = Table(
    "warehouses", metadata,
    Column("id", String, primary_key=True),               # WH-MAIN
    Column("name", String, nullable=False),
    Column("address", Text),
)

locations = Table(
    "locations", metadata,
    Column("id", String, primary_key=True),               # WH-MAIN-A01
    Column("warehouse_id", String, nullable=False),
    Column("name", String, nullable=False),
    Column("kind", String, nullable=False, default="stock"),   # stock | receiving | quarantine | staging
)

lots = Table(
    "lots", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", String, nullable=False),
    Column("lot_no", String, nullable=False),
    Column("expiry", String),
    Column("vendor_id", String),
    Column("first_received", String),
    UniqueConstraint("item_id", "lot_no"),
)

#: One row per BOM line: parent item, component, quantity per parent unit, scrap and effectivity.
boms = Table(
    "boms", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("parent_item", String, nullable=False, index=True),
    Column("line_no", Integer, nullable=False),
    Column("component_item", String, nullable=False),
    Column("qty_per", Float, nullable=False),
    Column("scrap_pct", Float, nullable=False, default=0.0),
    Column("effective_from", String),
    Column("effective_to", String),
    Column("pending_change", Integer, nullable=False, default=0),   # an engineering change is pending
    Column("change_note", Text),
)

work_centers = Table(
    "work_centers", metadata,
    Column("id", String, primary_key=True),               # WC-MACH
    Column("name", String, nullable=False),
    Column("daily_capacity_hours", Float, nullable=False),
)

routings = Table(
    "routings", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", String, nullable=False, index=True),
    Column("step", Integer, nullable=False),
    Column("work_center_id", String, nullable=False),
    Column("setup_hours", Float, nullable=False, default=0.0),
    Column("hours_per_unit", Float, nullable=False),
)

price_agreements = Table(
    "price_agreements", metadata,
    Column("id", String, primary_key=True),               # PA-1001
    Column("vendor_id", String, nullable=False, index=True),
    Column("item_id", String, nullable=False, index=True),
    Column("valid_from", String, nullable=False),
    Column("valid_to", String, nullable=False),
    Column("note", Text),
)

price_breaks = Table(
    "price_breaks", metadata,
    Column("agreement_id", String, primary_key=True),
    Column("min_qty", Float, primary_key=True),
    Column("unit_price", Float, nullable=False),
)

approved_substitutes = Table(
    "approved_substitutes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", String, nullable=False, index=True),
    Column("substitute_id", String, nullable=False),
    Column("vendor_id", String),                           # null = from any vendor
    Column("note", Text),
)

register_object("item", items)


# Service functions -------------------------------------------------------------------------

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


# Response models ---------------------------------------------------------------------------

class ItemOut(BaseModel):
    id: str
    description: str
    type: str
    category: str | None = None
    uom: str
    lot_controlled: bool
    shelf_life_days: int | None = None
    standard_cost: float
    list_price: float | None = None
    lead_time_days: int
    safety_stock: float
    moq: float
    order_multiple: float
    preferred_vendor: str | None = None
    planner: str | None = None
    default_warehouse: str | None = None
    active: bool
    made: bool


class PriceBreakOut(BaseModel):
    min_qty: float
    unit_price: float


class AgreementOut(BaseModel):
    id: str
    vendor_id: str
    item_id: str
    valid_from: str
    valid_to: str
    note: str | None = None
    active: bool
    breaks: list[PriceBreakOut]


class SubstituteOut(BaseModel):
    id: int
    item_id: str
    substitute_id: str
    vendor_id: str | None = None
    note: str | None = None


class OnHandRow(BaseModel):
    item_id: str
    warehouse_id: str
    location_id: str | None = None
    lot_no: str | None = None
    expiry: str | None = None
    qty: float
    value: float


class ItemDetail(ItemOut):
    bom: list[dict[str, Any]]
    routing: list[dict[str, Any]]
    substitutes: list[SubstituteOut]
    agreements: list[AgreementOut]
    on_hand: list[OnHandRow]
    on_hand_total: float


class BomOut(BaseModel):
    item_id: str
    date: str
    lines: list[dict[str, Any]]
    exploded: list[dict[str, Any]]
    exploded_per_unit: list[dict[str, Any]]
    pending_change: bool


class LocationOut(BaseModel):
    id: str
    name: str
    kind: str


class WarehouseOut(BaseModel):
    id: str
    name: str
    address: str | None = None
    locations: list[LocationOut]


class WorkCenterOut(BaseModel):
    id: str
    name: str
    daily_capacity_hours: float


class LotOut(BaseModel):
    id: int
    item_id: str
    lot_no: str
    expiry: str | None = None
    vendor_id: str | None = None
    first_received: str | None = None


# Routes ------------------------------------------------------------------------------------

router = DomainRouter(tags=["master data"])


@router.get("/items", response_model=Envelope[Page[ItemOut]],
            summary="List items (filters: type, category, preferred_vendor, planner, q)")
def list_items(type: str | None = None, category: str | None = None, preferred_vendor: str | None = None,
               planner: str | None = None, q: str | None = None, page: PageRequest = Depends(page_params),
               api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(items).order_by(items.c.id)
        if q:
            like = f"%{q}%"
            stmt = stmt.where(or_(items.c.id.ilike(like), items.c.description.ilike(like)))
        return paginate(tx, stmt, page, render=item_out, type=type, category=category,
                        preferred_vendor=preferred_vendor, planner=planner)
    return api.read(fn)


@router.get("/items/{item_id}", response_model=Envelope[ItemDetail],
            summary="One item with BOM, routing, substitutes, price agreements and on-hand")
def get_item_route(item_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: item_view(tx, item_id), object_type="item", object_id=item_id)


@router.patch("/items/{item_id}", operation_id="item.update", response_model=Envelope[ItemDetail],
              summary="Change an item's planning fields (lead time, safety stock, MOQ, order multiple, "
                      "preferred vendor, planner)")
def patch_item(item_id: str, body: ItemPatch, api: Api = Depends(write_api)):
    return api.write(lambda tx: update_item(tx, item_id, body))


@router.get("/boms/{item_id}", response_model=Envelope[BomOut],
            summary="Bill of materials of an item in effect on a date, exploded per unit")
def get_bom(item_id: str, date: IsoDate | None = None, api: Api = Depends(read_api)):
    def fn(tx: Tx):
        get_item(tx, item_id)
        on = date.isoformat() if date else tx.business_date
        lines = bom_lines(tx, item_id, on)
        return {"item_id": item_id, "date": on,
                "lines": [{k: l[k] for k in ("line_no", "component_item", "qty_per", "scrap_pct",
                                              "effective_from", "effective_to", "change_note")}
                          | {"pending_change": bool(l["pending_change"])} for l in lines],
                "exploded": explode_all_levels(tx, item_id, on),
                "exploded_per_unit": explode(tx, item_id, 1.0, on),
                "pending_change": any(l["pending_change"] for l in tx.rows(boms, parent_item=item_id))}
    return api.read(fn, object_type="item", object_id=item_id)


@router.get("/price-agreements", response_model=Envelope[Page[AgreementOut]],
            summary="Price agreements with quantity breaks (filters: vendor_id, item_id, active)")
def list_agreements(vendor_id: str | None = None, item_id: str | None = None, active: bool | None = None,
                    page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(price_agreements).order_by(price_agreements.c.id)
        if active is not None:
            cond = (price_agreements.c.valid_from <= tx.business_date) & \
                   (price_agreements.c.valid_to >= tx.business_date)
            stmt = stmt.where(cond if active else ~cond)
        return paginate(tx, stmt, page, render=lambda r: agreement_view(tx, r), vendor_id=vendor_id,
                        item_id=item_id)
    return api.read(fn)


@router.get("/approved-substitutes", response_model=Envelope[Page[SubstituteOut]],
            summary="Approved substitutes (filters: item_id, substitute_id, vendor_id)")
def list_substitutes(item_id: str | None = None, substitute_id: str | None = None, vendor_id: str | None = None,
                     page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(approved_substitutes).order_by(approved_substitutes.c.id),
                                        page, item_id=item_id, substitute_id=substitute_id, vendor_id=vendor_id))


@router.get("/warehouses", response_model=Envelope[Page[WarehouseOut]], summary="Warehouses with their locations")
def list_warehouses(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def render(tx: Tx, w: dict[str, Any]) -> dict[str, Any]:
        return {**w, "locations": [{"id": l["id"], "name": l["name"], "kind": l["kind"]}
                                   for l in tx.rows(locations, warehouse_id=w["id"])]}
    return api.read(lambda tx: paginate(tx, select(warehouses).order_by(warehouses.c.id), page,
                                        render=lambda w: render(tx, w)))


@router.get("/work-centers", response_model=Envelope[Page[WorkCenterOut]], summary="Work centers and daily capacity")
def list_work_centers(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(work_centers).order_by(work_centers.c.id), page))


@router.get("/lots", response_model=Envelope[Page[LotOut]], summary="Lots with expiry (filters: item_id, vendor_id)")
def list_lots(item_id: str | None = None, vendor_id: str | None = None,
              page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(lots).order_by(lots.c.item_id, lots.c.lot_no), page,
                                        item_id=item_id, vendor_id=vendor_id))
