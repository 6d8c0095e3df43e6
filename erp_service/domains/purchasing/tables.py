"""Purchasing tables: requisitions and their approval requests, purchase orders, vendor
acknowledgements and the requests the company sends vendors (expedite, defer, cancel, dispute,
copy of a document)."""
from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

requisitions = Table(
    "requisitions", metadata,
    *doc_columns(),          # draft | submitted | approved | returned | rejected | converted | cancelled
    Column("requester", String, nullable=False),
    Column("department_id", String),
    Column("need_by", String),
    Column("note", Text),
    Column("total_cents", Integer, nullable=False, default=0),
    Column("assigned_to", String),                     # the approver the pending request waits on
    Column("approved_by", String),
    Column("approved_on", String),
)

requisition_lines = Table(
    "requisition_lines", metadata,
    Column("requisition_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("item_id", String),
    Column("description", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("uom", String),
    Column("unit_price", Float, nullable=False),         # estimate
    Column("amount_cents", Integer, nullable=False),
    Column("vendor_id", String),                         # suggested vendor
    Column("account_id", String),                        # expense account for non-stock lines
    Column("need_by", String),
    Column("po_id", String),                             # set when converted
    Column("po_line", Integer),
)

approval_requests = Table(
    "approval_requests", metadata,
    Column("id", String, primary_key=True),              # APR-10001
    Column("doc_type", String, nullable=False),          # requisition
    Column("doc_id", String, nullable=False, index=True),
    Column("approver", String, nullable=False, index=True),
    Column("status", String, nullable=False),            # pending | approved | rejected | returned | forwarded | cancelled
    Column("amount_cents", Integer, nullable=False),
    Column("requested_by", String),
    Column("requested_on", String, nullable=False),
    Column("acted_on", String),
    Column("acted_by", String),
    Column("note", Text),
    Column("created_wall", String),
)

purchase_orders = Table(
    "purchase_orders", metadata,
    *doc_columns(),          # draft | approved | sent | partially_received | received | closed | cancelled
    Column("vendor_id", String, nullable=False, index=True),
    Column("buyer", String),
    Column("warehouse_id", String),
    Column("order_date", String, nullable=False),
    Column("need_by", String),
    Column("total_cents", Integer, nullable=False, default=0),
    Column("approved_by", String),
    Column("sent_on", String),
    Column("source", String, nullable=False, default="manual"),   # manual | requisition | mrp
    Column("note", Text),
)

po_lines = Table(
    "po_lines", metadata,
    Column("po_id", String, primary_key=True),
    Column("line_no", Integer, primary_key=True),
    Column("item_id", String),
    Column("description", String, nullable=False),
    Column("qty", Float, nullable=False),
    Column("uom", String),
    Column("unit_price", Float, nullable=False),
    Column("amount_cents", Integer, nullable=False),
    Column("price_source", String),                      # agreement:<id> | requisition | manual | standard
    Column("account_id", String),
    Column("need_by", String),
    Column("confirmed_date", String),                    # from the vendor's acknowledgement
    Column("qty_received", Float, nullable=False, default=0.0),
    Column("qty_refused", Float, nullable=False, default=0.0),
    Column("status", String, nullable=False, default="open"),     # open | closed | cancelled
    Column("requisition_id", String),
    Column("requisition_line", Integer),
)

po_acknowledgements = Table(
    "po_acknowledgements", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("po_id", String, nullable=False, index=True),
    Column("line_no", Integer),                          # null = whole order
    Column("ack_date", String, nullable=False),
    Column("decision", String, nullable=False),          # accepted | rejected | changed
    Column("confirmed_date", String),
    Column("unit_price", Float),                         # price notice, if any
    Column("note", Text),
    Column("by_user", String),
)

vendor_requests = Table(
    "vendor_requests", metadata,
    *doc_columns(),                                       # open | answered | withdrawn
    Column("kind", String, nullable=False),               # expedite | defer | cancel | dispute | copy_request
    Column("vendor_id", String, nullable=False, index=True),
    Column("po_id", String),
    Column("po_line", Integer),
    Column("ap_invoice_id", String),
    Column("invoice_no", String),
    Column("requested_date", String),
    Column("reason", String),
    Column("note", Text),
    Column("decision", String),                           # accepted | refused
    Column("answer", Text),
    Column("answered_on", String),
    Column("answer_date", String),                        # new date the vendor commits to
    Column("credit_cents", Integer),                      # credit memo amount for an accepted dispute
    Column("credit_memo_no", String),
)

register_object("requisition", requisitions, [(requisition_lines, "requisition_id")])
register_object("purchase_order", purchase_orders, [(po_lines, "po_id")])
register_object("vendor_request", vendor_requests)
register_object("approval_request", approval_requests)
