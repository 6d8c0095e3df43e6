"""Journal tables: entry attachments, and the period and journal-entry object registrations."""
from __future__ import annotations

from sqlalchemy import Column, Integer, String, Table, Text

from ...kernel.schema import metadata
from ...kernel.tx import register_object

# The domains below journal, imported before its table as the flat module was: tables register on the
# shared MetaData in import order, and the scenario database's bytes follow that order.
from .. import org, payables  # noqa: F401
from ..ledger import journal_entries, journal_lines, periods

attachments = Table(
    "attachments", metadata,
    Column("id", String, primary_key=True),          # ATT-10001
    Column("doc_type", String, nullable=False),
    Column("doc_id", String, nullable=False, index=True),
    Column("filename", String, nullable=False),
    Column("content_type", String, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String, nullable=False),
    Column("content_b64", Text, nullable=False),
    Column("created_by", String),
    Column("created_on", String, nullable=False),
)

register_object("period", periods)
# journal_entry is registered by ledger; attachments are snapshotted with it.
register_object("journal_entry", journal_entries, [(journal_lines, "entry_id"), (attachments, "doc_id")])
