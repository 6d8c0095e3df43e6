"""Comms' tables and codes: messages (in boxes and the outbox), reads, attachments,
dispositions, escalations and calls."""
from __future__ import annotations

from typing import Literal

from sqlalchemy import Column, Integer, LargeBinary, String, Table, Text

from ...kernel.schema import doc_columns, metadata
from ...kernel.tx import register_object

DispositionCode = Literal["processed", "duplicate", "rejected", "escalated", "suspicious", "no_action",
                          "forwarded"]


REASON_CODES = ("price_variance", "quantity_variance", "no_receipt", "duplicate", "fraud_suspected", "budget",
                "over_limit", "policy_exception", "credit", "lead_time", "master_data", "approval",
                "bank_change", "other")


ReasonCode = Literal["price_variance", "quantity_variance", "no_receipt", "duplicate", "fraud_suspected",
                     "budget", "over_limit", "policy_exception", "credit", "lead_time", "master_data",
                     "approval", "bank_change", "other"]


DEFAULT_MAIL_DOMAIN = "company.example"


messages = Table(
    "messages", metadata,
    *doc_columns(),                                      # status: received | sent
    Column("direction", String, nullable=False),         # in | out
    Column("box", String),                               # inbox box; for out: the box it was sent from
    Column("sender", String, nullable=False),
    Column("to", Text),
    Column("cc", Text),
    Column("subject", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("received_on", String),
    Column("thread_id", String, nullable=False),
    Column("in_reply_to", String),
    Column("related_type", String),                      # a record the message is about, if known
    Column("related_id", String),
    Column("disposition", String),                       # the latest disposition code
    Column("disposition_ref", String),
)


message_reads = Table(
    "message_reads", metadata,
    Column("message_id", String, primary_key=True),
    Column("user_id", String, primary_key=True),
    Column("read_on", String, nullable=False),
)


message_attachments = Table(
    "message_attachments", metadata,
    Column("message_id", String, primary_key=True),
    Column("n", Integer, primary_key=True),              # 1-based
    Column("filename", String, nullable=False),
    Column("content_type", String, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String, nullable=False),
    Column("content", LargeBinary, nullable=False),
)


dispositions = Table(
    "dispositions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("message_id", String, nullable=False, index=True),
    Column("disposition", String, nullable=False),
    Column("ref", String),
    Column("note", Text),
    Column("forwarded_to", Text),
    Column("forward_id", String),                        # the outbound copy when forwarded
    Column("by_user", String, nullable=False),
    Column("on_date", String, nullable=False),
)


escalations = Table(
    "escalations", metadata,
    *doc_columns(),                                      # status: open | answered
    Column("record_type", String, nullable=False),
    Column("record_id", String, nullable=False),
    Column("to_user", String, nullable=False),
    Column("reason", String, nullable=False),
    Column("note", Text),
    Column("answered_on", String),
    Column("answered_by", String),
    Column("decision", Text),
    Column("reply_id", String),
)


calls = Table(
    "calls", metadata,
    *doc_columns(),                                      # status: completed
    Column("party_type", String, nullable=False),        # vendor | customer | user
    Column("party_id", String, nullable=False),
    Column("number", String, nullable=False),            # as dialled
    Column("number_on_file", String),
    Column("number_source", String, nullable=False),     # on_file | other
    Column("purpose", Text),
    Column("transcript", Text, nullable=False),
)


register_object("message", messages)


register_object("disposition", dispositions)


register_object("escalation", escalations)


register_object("call", calls)
