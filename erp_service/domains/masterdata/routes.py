"""Master data response models and routes."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import or_, select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.dates import IsoDate
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from .service import ItemPatch, agreement_view, bom_lines, explode, explode_all_levels, get_item, item_out, item_view, update_item
from .tables import approved_substitutes, boms, items, locations, lots, price_agreements, warehouses, work_centers

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
