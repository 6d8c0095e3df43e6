"""How journal entries and their attachments are shown."""
from __future__ import annotations

from ...kernel.money import from_cents
from ...kernel.tx import Tx
from ..ledger import journal_entries, journal_lines
from .tables import attachments


def entry_total_cents(tx: Tx, entry_id: str) -> int:
    """Sum of the debits of an entry."""
    return sum(l["debit_cents"] for l in tx.rows(journal_lines, entry_id=entry_id))


def entry_out(tx: Tx, e: dict) -> dict:
    """The list view of a journal entry."""
    return {"id": e["id"], "status": e["status"], "entry_date": e["entry_date"], "period": e["period_id"],
            "source": e["source"], "source_ref": e["source_ref"], "memo": e["memo"], "prepared_by": e["created_by"],
            "created_on": e["created_on"], "approved_by": e["approved_by"], "posted_on": e["posted_on"],
            "reverses": e["reverses"], "reversed_by": e["reversed_by"],
            "total": from_cents(entry_total_cents(tx, e["id"]))}


def entry_detail(tx: Tx, entry_id: str) -> dict:
    """An entry with lines, attachments (metadata), history and links."""
    e = tx.get(journal_entries, entry_id, "journal entry")
    out = entry_out(tx, e)
    out["lines"] = [{"line_no": l["line_no"], "account": l["account_id"], "debit": from_cents(l["debit_cents"]),
                     "credit": from_cents(l["credit_cents"]), "memo": l["memo"], "party_type": l["party_type"],
                     "party_id": l["party_id"], "doc_ref": l["doc_ref"]}
                    for l in tx.rows(journal_lines, entry_id=entry_id)]
    out["attachments"] = [attachment_meta(a) for a in tx.rows(attachments, doc_type="journal_entry", doc_id=entry_id)]
    out["history"] = tx.history("journal_entry", entry_id)
    links = {"journal_entry": [x for x in (e["reverses"], e["reversed_by"]) if x]}
    if e["source_ref"]:
        links["source"] = [e["source_ref"]]
    out["links"] = links
    return out


def attachment_meta(a: dict) -> dict:
    return {"id": a["id"], "filename": a["filename"], "content_type": a["content_type"], "size": a["size"],
            "sha256": a["sha256"], "attached_by": a["created_by"], "attached_on": a["created_on"]}
