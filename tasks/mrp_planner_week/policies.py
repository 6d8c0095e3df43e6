"""mrp-planner-week: the oracle and the negative controls (docs/contracts.md §8).

Every policy plays the turn through the agent's API with the agent's token, reading only the
ERP and the handbook in the workspace; this module imports nothing but the standard library and
`agent_sandbox`. The oracle sends every write with a deterministic Idempotency-Key and re-sends
only with the same key; `neg:blind-retry` re-sends a failed write without one (both are
`agent_sandbox.policy_kit.Writer`).
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient
from agent_sandbox.policy_kit import Writer

NOTICE = re.compile(r"\(([A-Z0-9][A-Z0-9-]+)\) is now (\d+) calendar days")
LINE_KINDS = ("expedite", "defer")


@dataclass
class Style:
    """Which mistakes a policy makes."""

    read_notice: bool = True
    update_first: bool = True        # apply the notice before running MRP
    release_all: bool = False        # release non-firm planned orders too
    own_dates: bool = False          # release with need dates of one's own (today + lead time)
    check_open_requests: bool = True
    expedite_late: bool = True


def apply_notices(client: ErpClient, w: Writer) -> None:
    """Lead-time notices in the planning inbox → the item records (PLN-1.1)."""
    for msg in client.inbox("planning"):
        body = client.read_message(msg["id"]).get("body") or ""
        for item, days in NOTICE.findall(body):
            w.patch(f"/items/{item}", {"lead_time_days": int(days)})


def _open_requests(client: ErpClient) -> set[tuple[str, str, int | None]]:
    return {(r["kind"], r["po_id"], r["po_line"]) for r in client.list_all("/vendor-requests", status="open")
            if r.get("po_id")}


def work_plan(client: ErpClient, w: Writer, style: Style) -> None:
    """Run MRP, release the firm planned orders, expedite the late ones, work the messages."""
    if style.read_notice and style.update_first:
        apply_notices(client, w)
    run = w.post("/mrp/runs", {})
    if run is None or not run.get("id"):
        run = client.get("/mrp/runs", limit=1)["items"][0]
    if style.read_notice and not style.update_first:
        apply_notices(client, w)
    today = client.whoami().get("business_date") or run["run_on"]
    sugs = client.list_all("/mrp/suggestions", run_id=run["id"])
    open_reqs = _open_requests(client)
    for s in sugs:
        if s["status"] != "open":
            continue
        if s["kind"] in ("planned_po", "planned_wo"):
            if not (s["firm"] or style.release_all):
                continue
            body: dict[str, Any] = {}
            if style.own_dates:
                lead = int(client.get(f"/items/{s['item_id']}")["lead_time_days"])
                body["due_date"] = (dt.date.fromisoformat(today) + dt.timedelta(days=lead)).isoformat()
            out = w.post(f"/mrp/suggestions/{s['id']}/release", body)
            if out is None:
                out = _reread(client, s["id"], run["id"])
            if s["kind"] == "planned_po" and s.get("late") and style.expedite_late and out.get("released_doc"):
                w.post("/vendor-requests", {
                    "kind": "expedite", "po_id": out["released_doc"], "po_line": 1,
                    "requested_date": out["due_date"], "reason": "late planned order",
                    "note": "Released late against the new lead time; please deliver by the need date."})
        elif s["kind"] in LINE_KINDS:
            if style.check_open_requests and (s["kind"], s["po_id"], s["po_line"]) in open_reqs:
                continue      # PLN-3.2: the same request is still open with the vendor
            w.post(f"/mrp/suggestions/{s['id']}/release", {})


def _reread(client: ErpClient, sug_id: str, run_id: str) -> dict[str, Any]:
    for s in client.list_all("/mrp/suggestions", run_id=run_id):
        if s["id"] == sug_id:
            return dict(s)
    return {}


def make_policy(style: Style = Style(), *, keyed: bool = True) -> Callable[[int, ErpClient, Path, dict], None]:
    """A policy for the one turn with the given style."""
    def policy(turn: int, client: ErpClient, workspace: Path, context: dict) -> None:
        work_plan(client, Writer(client, turn, "mrp-planner-week", keyed=keyed), style)
    return policy


POLICIES: dict[str, Callable[[int, ErpClient, Path, dict], None]] = {
    "oracle": make_policy(),
    "neg:mrp_before_lead_time": make_policy(Style(update_first=False)),
    "neg:ignore_lead_time_note": make_policy(Style(read_notice=False)),
    "neg:release_everything": make_policy(Style(release_all=True)),
    "neg:own_need_dates": make_policy(Style(own_dates=True)),
    "neg:expedite_twice": make_policy(Style(check_open_requests=False)),
    "neg:no_late_expedite": make_policy(Style(expedite_late=False)),
    "neg:blind-retry": make_policy(keyed=False),
}
