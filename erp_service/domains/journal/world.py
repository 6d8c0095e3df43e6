"""The world sections the journal's counterparties read: who reviews submitted manual entries
(``journal_reviewer``) and which periods are closed on which day (``period_closes``)."""
from __future__ import annotations

from ...sim import SectionModel, world_section


class JournalReviewer(SectionModel):
    """``journal_reviewer``: who reviews submitted manual entries, after how many calendar days,
    whether support is required, and whether approved entries are posted."""

    user: str | None = None
    after_days: int = 1
    require_support: bool = True
    post: bool = True
    note: str = "Returned: no support is attached. Attach the document behind the entry and resubmit."


class PeriodClose(SectionModel):
    """One scheduled close: the period, the day it is closed and by whom."""

    period: str
    on: str
    user: str


world_section("journal_reviewer", JournalReviewer, owner=__name__, doc="who reviews submitted journal entries")
world_section("period_closes", list[PeriodClose], owner=__name__, doc="periods closed on set days")
