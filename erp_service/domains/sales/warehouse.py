"""The warehouse actor and the world section it reads."""
from __future__ import annotations

from functools import partial

from pydantic import Field
from sqlalchemy import select

from ...sim import Day, SectionModel, WorldDate, actor, sim_log, world_section
from ..comms import deliver, make_pdf


class WarehouseReport(SectionModel):
    """One scheduled warehouse report: sent on the first workday on or after `on`, once."""

    on: WorldDate
    box: str = "warehouse"
    sender: str = Field("warehouse@company.example", alias="from")
    subject: str = "Warehouse report"
    body: str = ""
    lines: list[str | int | float] | None = None      # attached as a PDF when given
    filename: str | None = None


class WarehouseSection(SectionModel):
    """``warehouse``: the reports the warehouse sends by message."""

    reports: list[WarehouseReport] = []


world_section("warehouse", WarehouseSection, owner=__name__, doc="scheduled warehouse reports by message")


@actor("warehouse")
def _warehouse(day: Day) -> None:
    """Scheduled warehouse reports (counts, damage) by message, from ``world["warehouse"]``:
    ``{"reports": [{"on": "2026-10-12", "box": "warehouse", "subject": ..., "body": ...,
    "lines": [...] (optional: attached as a PDF)}]}``, each on the first workday on or after
    its date, once."""
    section = day.world.section("warehouse", {})
    reports = section.get("reports", []) if isinstance(section, dict) else []
    if not reports:
        return
    sent = set(day.look(lambda tx: [r["ref"] for r in tx.all(select(sim_log.c.ref).where(
        sim_log.c.kind == "warehouse_report"))]))
    for i, rep in enumerate(reports):
        if str(rep.get("on", "9999")) > day.date or f"report:{i}" in sent:
            continue
        atts = [(rep.get("filename", f"warehouse-report-{i + 1}.pdf"),
                 make_pdf(rep.get("subject", "Warehouse report"), [str(x) for x in rep["lines"]]))] \
            if rep.get("lines") else []
        day.act("sys-mail", "msg.deliver", "/sim/warehouse", {"report": i}, partial(
            deliver, box=rep.get("box", "warehouse"), sender=rep.get("from", "warehouse@company.example"),
            subject=rep.get("subject", "Warehouse report"), body=rep.get("body", ""), attachments=atts))
        day.log("warehouse", "warehouse_report", f"report:{i}", {"subject": rep.get("subject")})
