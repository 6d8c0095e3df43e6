"""requisition-approval-queue: the handbook figures the oracle reads, its completeness and split
rules on requisition records shaped as the API returns them, and the pack's spec."""
from __future__ import annotations

from pathlib import Path

from tasks.registry import load_task
from tasks.requisition_approval_queue import policies as p

PACK = Path(p.__file__).resolve().parent


def _req(rid, requester="ethan.wright", vendor="V-0112", created="2026-10-01", total=6000.0, note="why",
         account="6350", item=None):
    return {"id": rid, "requester": requester, "created_on": created, "total": total, "note": note,
            "lines": [{"item_id": item, "account_id": account, "vendor_id": vendor, "amount": total}]}


class _Org(p.Org):
    def __init__(self, holidays=()):  # no client: only the calendar arithmetic is used
        super().__init__(client=None, today="2026-10-06", holidays=set(holidays), cache={})  # type: ignore[arg-type]


def test_handbook_figures():
    assert p.handbook_limit(PACK) == 10_000.0
    assert p.handbook_window(PACK) == 5


def test_completeness():
    assert p._incomplete(_req("R1")) is None
    assert p._incomplete(_req("R1", note="  ")) == "missing_justification"
    assert p._incomplete(_req("R1", account=None)) == "missing_account"
    assert p._incomplete(_req("R1", account=None, item="BR-0750")) is None    # stock items carry no account


def test_split_groups_by_requester_vendor_and_window():
    a = _req("R1", created="2026-10-01")
    b = _req("R2", created="2026-10-05")
    far = _req("R3", created="2026-10-12")
    other_vendor = _req("R4", vendor="V-0113", created="2026-10-02")
    other_requester = _req("R5", requester="kim.ng", created="2026-10-02")
    waiting = [a, b, far, other_vendor, other_requester]
    org = _Org()
    assert [r["id"] for r in p._split_group(a, waiting, org, 5)] == ["R1", "R2"]
    assert [r["id"] for r in p._split_group(b, waiting, org, 5)] == ["R1", "R2", "R3"]
    # A holiday between them stretches nothing: it simply does not count.
    assert org.business_days("2026-10-01", "2026-10-05") == 2
    assert _Org({"2026-10-02"}).business_days("2026-10-01", "2026-10-05") == 1


def test_spec_every_negative_control_has_a_policy_and_cites_exist():
    pack = load_task("requisition-approval-queue")
    assert set(pack.spec.negative_controls) <= set(p.POLICIES)
    assert "neg:blind-retry" in p.POLICIES
    handbook = "".join(f.read_text() for f in (PACK / "handbook").glob("*.md"))
    for check in pack.spec.checks:
        assert check.cites and all(f"**{c}**" in handbook for c in check.cites), check.name
