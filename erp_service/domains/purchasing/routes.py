"""Purchasing routes: requisitions and approvals, purchase orders, acknowledgements, vendor
requests."""
from __future__ import annotations

from typing import Any

from fastapi import Depends
from pydantic import BaseModel
from sqlalchemy import select

from ...http.api import Api, Envelope, Page, page_params, read_api, write_api
from ...http.lazy_routes import DomainRouter
from ...kernel.listing import PageRequest, paginate
from ...kernel.tx import Tx
from . import service as s
from .tables import approval_requests, purchase_orders, requisitions, vendor_requests


class RequisitionOut(BaseModel):
    id: str
    status: str
    requester: str
    department_id: str | None = None
    need_by: str | None = None
    note: str | None = None
    total: float
    assigned_to: str | None = None
    approved_by: str | None = None
    approved_on: str | None = None
    created_by: str | None = None
    created_on: str


class RequisitionDetail(RequisitionOut):
    lines: list[dict[str, Any]]
    approvals: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, list[str]]


class ApprovalOut(BaseModel):
    id: str
    doc_type: str
    doc_id: str
    approver: str
    status: str
    amount: float
    requested_by: str | None = None
    requested_on: str
    acted_on: str | None = None
    acted_by: str | None = None
    note: str | None = None


class POOut(BaseModel):
    id: str
    status: str
    vendor_id: str
    buyer: str | None = None
    warehouse_id: str | None = None
    order_date: str
    need_by: str | None = None
    total: float
    approved_by: str | None = None
    sent_on: str | None = None
    source: str
    note: str | None = None
    created_by: str | None = None
    created_on: str


class PODetail(POOut):
    lines: list[dict[str, Any]]
    acknowledgements: list[dict[str, Any]]
    receipts: list[dict[str, Any]]
    vendor_requests: list[dict[str, Any]]
    history: list[dict[str, Any]]
    links: dict[str, list[str]]


class VendorRequestOut(BaseModel):
    id: str
    status: str
    kind: str
    vendor_id: str
    po_id: str | None = None
    po_line: int | None = None
    ap_invoice_id: str | None = None
    invoice_no: str | None = None
    requested_date: str | None = None
    reason: str | None = None
    note: str | None = None
    decision: str | None = None
    answer: str | None = None
    answered_on: str | None = None
    answer_date: str | None = None
    credit_amount: float | None = None
    credit_memo_no: str | None = None
    created_by: str | None = None
    created_on: str
    history: list[dict[str, Any]] = []
    links: dict[str, list[str]] = {}


def _req_row(r: dict[str, Any]) -> dict[str, Any]:
    return s.money_view(r, "total_cents")


router = DomainRouter(tags=["purchasing"])


# --- requisitions
@router.get("/requisitions", response_model=Envelope[Page[RequisitionOut]],
            summary="List requisitions (filters: status, requester, department_id, assigned_to)")
def list_requisitions(status: str | None = None, requester: str | None = None, department_id: str | None = None,
                      assigned_to: str | None = None, page: PageRequest = Depends(page_params),
                      api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(requisitions).order_by(requisitions.c.id), page, render=_req_row,
                                        status=status, requester=requester, department_id=department_id,
                                        assigned_to=assigned_to))


@router.get("/requisitions/{req_id}", response_model=Envelope[RequisitionDetail],
            summary="One requisition with lines, approval requests, history and links")
def get_requisition(req_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: s.requisition_view(tx, req_id), object_type="requisition", object_id=req_id)


@router.post("/requisitions", operation_id="req.create", status_code=201, response_model=Envelope[RequisitionDetail],
             summary="Create a draft requisition")
def post_requisition(body: s.RequisitionIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.create_requisition(tx, body))


@router.post("/requisitions/{req_id}/submit", operation_id="req.submit", status_code=201,
             response_model=Envelope[RequisitionDetail],
             summary="Submit for approval (goes to the department head under the delegation of authority)")
def submit_requisition(req_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.submit_requisition(tx, req_id))


@router.post("/requisitions/{req_id}/approve", operation_id="req.approve", status_code=201,
             response_model=Envelope[RequisitionDetail],
             summary="Approve as the assigned approver, within your requisition limit")
def approve_requisition(req_id: str, body: s.NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.approve_requisition(tx, req_id, body))


@router.post("/requisitions/{req_id}/reject", operation_id="req.reject", status_code=201,
             response_model=Envelope[RequisitionDetail], summary="Reject as the assigned approver")
def reject_requisition(req_id: str, body: s.DecisionIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.decide_requisition(tx, req_id, "rejected", body))


@router.post("/requisitions/{req_id}/return", operation_id="req.return", status_code=201,
             response_model=Envelope[RequisitionDetail], summary="Return to the requester for changes")
def return_requisition(req_id: str, body: s.DecisionIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.decide_requisition(tx, req_id, "returned", body))


@router.post("/requisitions/{req_id}/forward", operation_id="req.forward", status_code=201,
             response_model=Envelope[RequisitionDetail],
             summary="Route to the next approver or to an approver's delegate")
def forward_requisition(req_id: str, body: s.ForwardIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.forward_requisition(tx, req_id, body))


@router.post("/requisitions/{req_id}/cancel", operation_id="req.cancel", status_code=201,
             response_model=Envelope[RequisitionDetail], summary="Withdraw a requisition (requester)")
def cancel_requisition(req_id: str, body: s.NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.cancel_requisition(tx, req_id, body))


@router.get("/approvals", response_model=Envelope[Page[ApprovalOut]],
            summary="Approval requests (defaults: status=pending, approver=you; approver=all for everyone's)")
def list_approvals(status: str | None = "pending", approver: str | None = None, doc_id: str | None = None,
                   page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        who = None if approver == "all" else (approver or tx.actor.user_id)
        st = None if status == "all" else status
        return paginate(tx, select(approval_requests).order_by(approval_requests.c.id), page,
                        render=lambda r: s.money_view(r, "amount_cents"), status=st, approver=who, doc_id=doc_id)
    return api.read(fn)


# --- purchase orders
@router.get("/purchase-orders", response_model=Envelope[Page[POOut]],
            summary="List purchase orders (filters: status, vendor_id, buyer, source)")
def list_pos(status: str | None = None, vendor_id: str | None = None, buyer: str | None = None,
             source: str | None = None, page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    return api.read(lambda tx: paginate(tx, select(purchase_orders).order_by(purchase_orders.c.id), page,
                                        render=lambda r: s.money_view(r, "total_cents"), status=status,
                                        vendor_id=vendor_id, buyer=buyer, source=source))


@router.get("/purchase-orders/{po_id}", response_model=Envelope[PODetail],
            summary="One PO with lines, acknowledgements, receipts, invoices, vendor requests and history")
def get_po(po_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: s.po_view(tx, po_id), object_type="purchase_order", object_id=po_id)


@router.post("/purchase-orders", operation_id="po.create", status_code=201, response_model=Envelope[PODetail],
             summary="Create a draft PO (price defaults to the agreement at the highest quantity break reached)")
def post_po(body: s.PurchaseOrderIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.create_po(tx, body))


@router.post("/purchase-orders/{po_id}/lines", operation_id="po.add_line", status_code=201,
             response_model=Envelope[PODetail], summary="Add a line to an unsent PO")
def post_po_line(po_id: str, body: s.POLineIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.add_po_line(tx, po_id, body))


@router.patch("/purchase-orders/{po_id}/lines/{line_no}", operation_id="po.update_line",
              response_model=Envelope[PODetail], summary="Change a line of an unsent PO (sent POs are frozen)")
def patch_po_line(po_id: str, line_no: int, body: s.POLinePatch, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.update_po_line(tx, po_id, line_no, body))


@router.post("/purchase-orders/{po_id}/approve", operation_id="po.approve", status_code=201,
             response_model=Envelope[PODetail], summary="Approve a draft PO (not its buyer; within your limit)")
def approve_po(po_id: str, body: s.NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.approve_po(tx, po_id, body))


@router.post("/purchase-orders/{po_id}/send", operation_id="po.send", status_code=201,
             response_model=Envelope[PODetail], summary="Send the PO to the vendor")
def send_po(po_id: str, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.send_po(tx, po_id))


@router.post("/purchase-orders/{po_id}/cancel", operation_id="po.cancel", status_code=201,
             response_model=Envelope[PODetail], summary="Cancel a PO that has received nothing")
def cancel_po(po_id: str, body: s.NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.cancel_po(tx, po_id, body))


@router.post("/purchase-orders/{po_id}/close", operation_id="po.close", status_code=201,
             response_model=Envelope[PODetail], summary="Close a sent PO: nothing more will be received")
def close_po(po_id: str, body: s.NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.close_po(tx, po_id, body))


@router.post("/purchase-orders/{po_id}/lines/{line_no}/close", operation_id="po.close_line", status_code=201,
             response_model=Envelope[PODetail], summary="Close one open line of a sent PO")
def close_po_line(po_id: str, line_no: int, body: s.NoteIn | None = None, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.close_po_line(tx, po_id, line_no, body))


@router.post("/purchase-orders/{po_id}/acknowledgements", operation_id="po.acknowledge", status_code=201,
             response_model=Envelope[PODetail], summary="Record the vendor's acknowledgement (vendors only)")
def post_ack(po_id: str, body: s.AcknowledgementIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.acknowledge_po(tx, po_id, body))


# --- vendor requests
@router.get("/vendor-requests", response_model=Envelope[Page[VendorRequestOut]],
            summary="Requests sent to vendors (filters: status, kind, vendor_id, po_id, ap_invoice_id)")
def list_vendor_requests(status: str | None = None, kind: str | None = None, vendor_id: str | None = None,
                         po_id: str | None = None, ap_invoice_id: str | None = None,
                         page: PageRequest = Depends(page_params), api: Api = Depends(read_api)):
    def fn(tx: Tx):
        listed = paginate(tx, select(vendor_requests.c.id).order_by(vendor_requests.c.id), page, status=status,
                          kind=kind, vendor_id=vendor_id, po_id=po_id, ap_invoice_id=ap_invoice_id)
        listed["items"] = [s.vendor_request_view(tx, r["id"]) for r in listed["items"]]
        return listed
    return api.read(fn)


@router.get("/vendor-requests/{vr_id}", response_model=Envelope[VendorRequestOut], summary="One vendor request")
def get_vendor_request(vr_id: str, api: Api = Depends(read_api)):
    return api.read(lambda tx: s.vendor_request_view(tx, vr_id), object_type="vendor_request", object_id=vr_id)


@router.post("/vendor-requests", operation_id="vendor.request", status_code=201,
             response_model=Envelope[VendorRequestOut],
             summary="Ask a vendor to expedite, defer or cancel a PO line, dispute an invoice, or send a copy")
def post_vendor_request(body: s.VendorRequestIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.create_vendor_request(tx, body))


@router.post("/vendor-requests/{vr_id}/answer", operation_id="vendor.respond", status_code=201,
             response_model=Envelope[VendorRequestOut], summary="Record the vendor's answer (vendors only)")
def answer_vendor_request(vr_id: str, body: s.VendorAnswerIn, api: Api = Depends(write_api)):
    return api.write(lambda tx: s.answer_vendor_request(tx, vr_id, body))


# Report ----------------------------------------------------------------------------------------

from ..reports import AsOfParams, as_of_of, register_report  # noqa: E402
from .tables import po_lines  # noqa: E402


class OpenPOParams(AsOfParams):
    vendor_id: str | None = None
    item_id: str | None = None


def open_purchase_orders_report(tx: Tx, params: OpenPOParams) -> dict[str, Any]:
    """Open PO lines (sent or partially received) with quantity and value still to receive,
    the date they are due and whether they are late."""
    as_of = as_of_of(tx, params)
    stmt = (select(purchase_orders.c.id, purchase_orders.c.vendor_id, purchase_orders.c.status,
                   purchase_orders.c.sent_on, po_lines.c.line_no, po_lines.c.item_id, po_lines.c.qty,
                   po_lines.c.qty_received, po_lines.c.unit_price, po_lines.c.need_by, po_lines.c.confirmed_date)
            .join(po_lines, po_lines.c.po_id == purchase_orders.c.id)
            .where(purchase_orders.c.status.in_(("sent", "partially_received")), po_lines.c.status == "open")
            .order_by(purchase_orders.c.id, po_lines.c.line_no))
    if params.vendor_id:
        stmt = stmt.where(purchase_orders.c.vendor_id == params.vendor_id)
    if params.item_id:
        stmt = stmt.where(po_lines.c.item_id == params.item_id)
    rows = []
    for r in tx.all(stmt):
        open_qty = round(r["qty"] - r["qty_received"], 4)
        if open_qty <= 1e-9:
            continue
        due = r["confirmed_date"] or r["need_by"]
        rows.append({"po_id": r["id"], "line_no": r["line_no"], "vendor_id": r["vendor_id"], "status": r["status"],
                     "item_id": r["item_id"], "ordered": r["qty"], "received": r["qty_received"],
                     "open_qty": open_qty, "unit_price": r["unit_price"],
                     "open_value": s.line_cents(open_qty, r["unit_price"]) / 100, "need_by": r["need_by"],
                     "confirmed_date": r["confirmed_date"], "late": bool(due and due < as_of)})
    return {"as_of": as_of, "rows": rows, "total_open_value": round(sum(r["open_value"] for r in rows), 2)}


register_report("open-purchase-orders", open_purchase_orders_report, OpenPOParams, title="Open purchase orders")
