"""Sales' routes and response models."""
from __future__ import annotations

from typing import Any

from fastapi import Depends, Path
from pydantic import BaseModel
from sqlalchemy import or_, select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from .customers import customer_view, update_customer
from .orders import allocate_order, cancel_order, create_order, hold_order, order_view, release_order, update_line
from .schemas import AllocateIn, CustomerPatch, HoldIn, ReleaseIn, SalesOrderIn, ShipmentIn, SoLinePatch
from .shipments import create_shipment, shipment_view
from .tables import customers, price_list_items, price_lists, sales_orders, shipments


class ShipToOut(BaseModel):
    id: str
    name: str
    address: str
    is_default: bool


class CustomerOut(BaseModel):
    id: str
    name: str
    status: str
    terms: str
    credit_limit: float
    credit_hold: bool
    price_list_id: str | None = None
    tax_status: str
    tax_rate: float
    parent_id: str | None = None
    email: str | None = None
    phone: str | None = None
    address: str | None = None
    contact: str | None = None
    open_ar: float
    open_orders: float
    available_credit: float
    ship_to: list[ShipToOut]


class PriceListItemOut(BaseModel):
    item_id: str
    min_qty: float
    unit_price: float


class PriceListOut(BaseModel):
    id: str
    name: str
    items: list[PriceListItemOut]


class SoLineOut(BaseModel):
    line_no: int
    item_id: str
    qty: float
    unit_price: float
    list_price: float | None = None
    qty_allocated: float
    qty_shipped: float
    qty_backordered: float = 0.0
    open_qty: float
    status: str
    amount: float


class SalesOrderOut(BaseModel):
    id: str
    status: str
    customer_id: str
    ship_to_id: str | None = None
    order_date: str
    requested_date: str | None = None
    customer_po: str | None = None
    warehouse_id: str | None = None
    hold_reason: str | None = None
    note: str | None = None
    created_by: str | None = None
    total: float
    lines: list[SoLineOut]
    holds: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, Any]


class ShipmentLineOut(BaseModel):
    line_no: int
    so_line: int
    item_id: str
    qty: float
    warehouse_id: str
    location_id: str | None = None
    lot_no: str | None = None
    expiry: str | None = None
    cost: float


class ShipmentOut(BaseModel):
    id: str
    status: str
    so_id: str
    customer_id: str
    ship_to_id: str | None = None
    ship_date: str
    cost: float
    carrier: str | None = None
    tracking: str | None = None
    created_by: str | None = None
    lines: list[ShipmentLineOut]
    history: list[dict[str, Any]]
    links: dict[str, Any]


router = DomainRouter(tags=["sales"])


@router.get("/customers", response_model=Envelope[Page[CustomerOut]], summary="List customers")
def list_customers(status: str | None = None, q: str | None = None, credit_hold: bool | None = None,
                   page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        stmt = select(customers.c.id).order_by(customers.c.id)
        if q:
            stmt = stmt.where(or_(customers.c.name.ilike(f"%{q}%"), customers.c.id.ilike(f"%{q}%")))
        listed = paginate(tx, stmt, page, status=status,
                          credit_hold=None if credit_hold is None else int(credit_hold))
        listed["items"] = [customer_view(tx, r["id"]) for r in listed["items"]]
        return listed
    return api.read(fn)


@router.get("/customers/{customer_id}", response_model=Envelope[CustomerOut],
            summary="One customer with open AR, open orders and available credit")
def get_customer_route(customer_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: customer_view(tx, customer_id), object_type="customer", object_id=customer_id)


@router.patch("/customers/{customer_id}", operation_id="customer.update", response_model=Envelope[CustomerOut],
              summary="Change a customer's credit limit, credit hold or terms")
def patch_customer(customer_id: str, body: CustomerPatch, api: Api = Depends(write_api)):
    return api.write(lambda tx: update_customer(tx, customer_id, body), object_type="customer",
                     object_id=customer_id)


@router.get("/price-lists", response_model=Envelope[Page[PriceListOut]], summary="Customer price lists")
def list_price_lists(page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def render(tx: Tx, r: dict) -> dict:
        return {**r, "items": [{"item_id": i["item_id"], "min_qty": i["min_qty"], "unit_price": i["unit_price"]}
                               for i in tx.rows(price_list_items, price_list_id=r["id"])]}
    return api.read(lambda tx: paginate(tx, select(price_lists).order_by(price_lists.c.id), page,
                                        render=lambda r: render(tx, r)))


@router.get("/sales-orders", response_model=Envelope[Page[SalesOrderOut]], summary="List sales orders")
def list_orders(status: str | None = None, customer_id: str | None = None, hold_reason: str | None = None,
                page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(sales_orders).order_by(sales_orders.c.id), page,
                                        render=lambda r: order_view(tx, r["id"]), status=status,
                                        customer_id=customer_id, hold_reason=hold_reason))


@router.get("/sales-orders/{so_id}", response_model=Envelope[SalesOrderOut],
            summary="One sales order with lines, history, holds and links")
def get_order(so_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: order_view(tx, so_id), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders", operation_id="so.create", status_code=201, response_model=Envelope[SalesOrderOut],
             summary="Enter a sales order (automatic credit check: released or on hold)")
def post_order(body: SalesOrderIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_order(tx, body))


@router.patch("/sales-orders/{so_id}/lines/{line_no}", operation_id="so.update_line",
              response_model=Envelope[SalesOrderOut], summary="Change an open line's quantity or price")
def patch_order_line(so_id: str, body: SoLinePatch, line_no: int = Path(..., ge=1, le=100_000),
                     api: Api = Depends(write_api)):
    return api.write(lambda tx: update_line(tx, so_id, line_no, body), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/hold", operation_id="so.hold", status_code=201,
             response_model=Envelope[SalesOrderOut], summary="Put an order on credit or pricing hold")
def post_hold(so_id: str, body: HoldIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: hold_order(tx, so_id, body), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/release", operation_id="so.release_hold", status_code=201,
             response_model=Envelope[SalesOrderOut], summary="Release a held order (credit manager)")
def post_release(so_id: str, body: ReleaseIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: release_order(tx, so_id, body), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/allocate", operation_id="so.allocate", status_code=201,
             response_model=Envelope[SalesOrderOut],
             summary="Reserve stock for the open lines in the order's warehouse (backorder: reserve what is free, "
                     "backorder the rest)")
def post_allocate(so_id: str, body: AllocateIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: allocate_order(tx, so_id, body), object_type="sales_order", object_id=so_id)


@router.post("/sales-orders/{so_id}/cancel", operation_id="so.cancel", status_code=201,
             response_model=Envelope[SalesOrderOut], summary="Cancel an order that has not shipped")
def post_cancel(so_id: str, body: ReleaseIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: cancel_order(tx, so_id, body), object_type="sales_order", object_id=so_id)


@router.get("/shipments", response_model=Envelope[Page[ShipmentOut]], summary="List shipments")
def list_shipments(so_id: str | None = None, customer_id: str | None = None, status: str | None = None,
                   page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(shipments).order_by(shipments.c.id), page,
                                        render=lambda r: shipment_view(tx, r["id"]), so_id=so_id,
                                        customer_id=customer_id, status=status))


@router.get("/shipments/{shipment_id}", response_model=Envelope[ShipmentOut], summary="One shipment with its picks")
def get_shipment(shipment_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: shipment_view(tx, shipment_id), object_type="shipment", object_id=shipment_id)


@router.post("/shipments", operation_id="so.ship", status_code=201, response_model=Envelope[ShipmentOut],
             summary="Ship a released order (first-expiry-first; never above open quantity or stock)")
def post_shipment(body: ShipmentIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: create_shipment(tx, body))
