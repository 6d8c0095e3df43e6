"""`IsoDate`: the one date type of request bodies and query parameters.

Pydantic's own `date` is lax: it takes Unix timestamps (``1796083200`` or ``"1796083200"``),
datetimes with a zero time and floats, so ``"pay_date": 1796083200`` would be a payment date.
The contract (docs/contracts.md §2) says dates are ``YYYY-MM-DD`` strings; this type accepts
exactly that (and `datetime.date` objects from Python callers, never datetimes) and refuses
everything else as invalid input (422).
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from pydantic import BeforeValidator

ISO_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def parse_iso_date(value: Any) -> dt.date:
    """`value` as a calendar date if it is a ``YYYY-MM-DD`` string or a `date`; ValueError else."""
    if isinstance(value, dt.datetime):  # a datetime is a date subclass: refuse it explicitly
        raise ValueError("expected a date as a YYYY-MM-DD string, not a date and time")
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str) or not ISO_DATE_RE.fullmatch(value):
        raise ValueError(f"expected a date as a YYYY-MM-DD string, got {_shown(value)}")
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a calendar date") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: A strict ISO date: use it for every date field of a request model and every date query
#: parameter (``pay_date: IsoDate``, ``as_of: IsoDate | None = None``).
IsoDate = Annotated[dt.date, BeforeValidator(parse_iso_date)]
