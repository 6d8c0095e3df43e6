"""Phone calls: the number dialled (on file or not) and the world's scripted transcript."""
from __future__ import annotations

import re
from typing import Any

from ...kernel.errors import invalid, not_found
from ...kernel.schema import metadata
from ...kernel.tx import Tx
from .schemas import CallIn
from .tables import calls
from .world import RANG_OUT


def _digits10(number: str | None) -> str:
    return re.sub(r"\D", "", number or "")[-10:]


def party_phone(tx: Tx, party_type: str, party_id: str) -> str | None:
    """The phone number on file for a vendor, customer or user (404 if the party does not exist)."""
    table = {"vendor": "vendors", "customer": "customers", "user": "users"}[party_type]
    t = metadata.tables.get(table)
    if t is None:
        raise not_found(party_type, party_id)
    row = tx.find(t, id=party_id)
    if row is None:
        raise not_found(party_type, party_id)
    return row.get("phone")


def scripted_transcript(world: Any, party_type: str, party_id: str, dialled: str, on_file: str | None,
                        today: str) -> str:
    """The world's transcript for this party and dialled number on `today`, else rang out."""
    section = world.section("calls", []) if world is not None else []
    best: tuple[str, int] | None = None
    text = RANG_OUT
    for i, entry in enumerate(section or []):
        if str(entry.get("party_id")) != party_id:
            continue
        if entry.get("party_type") not in (None, party_type):
            continue
        number = entry.get("number", "on_file")
        target = on_file if number == "on_file" else number
        if not target or _digits10(target) != _digits10(dialled):
            continue
        start = entry.get("from") or ""
        if start > today:
            continue
        if best is None or (start, i) >= best:
            best, text = (start, i), str(entry.get("transcript", RANG_OUT))
    return text


def place_call(tx: Tx, body: CallIn, world: Any) -> dict[str, Any]:
    """Call a party; records the number dialled and whether it is the one on file."""
    on_file = party_phone(tx, body.party_type, body.party_id)
    number = body.number or on_file
    if not number:
        raise invalid(f"No phone number is on file for {body.party_type} {body.party_id}; give `number`.")
    if len(re.sub(r"\D", "", number)) < 7:
        raise invalid(f"{number!r} is not a phone number.")
    source = "on_file" if on_file and _digits10(number) == _digits10(on_file) else "other"
    transcript = scripted_transcript(world, body.party_type, body.party_id, number, on_file, tx.business_date)
    row = tx.create_doc("call", calls, "CALL", "completed", party_type=body.party_type, party_id=body.party_id,
                        number=number, number_on_file=on_file, number_source=source, purpose=body.purpose,
                        transcript=transcript)
    return call_view(tx.get(calls, row["id"]))


def call_view(row: dict[str, Any]) -> dict[str, Any]:
    """A call as the API shows it."""
    return {k: row[k] for k in ("id", "party_type", "party_id", "number", "number_on_file", "number_source",
                               "purpose", "transcript", "created_by", "created_on")}
