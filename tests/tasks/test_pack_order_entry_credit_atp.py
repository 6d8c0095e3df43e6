"""order-entry-credit-atp: routes the handbook allows and routes it forbids, played by hand
through the real ERP on the seed-0 scenario and read by the pack's own projections.

The checks compare the agent's projections with the oracle's; the truth's `expect` rows are what
the oracle's reference must hold (checked when the reference is built), so a route passes here
when its projections hold exactly those rows. Allowed: explicit prices worked out from the price
list, a line split in two at the same price, an order cancelled and entered again, a full
allocation tried first and the backorder after the refusal, an escalation written differently.
Forbidden: the customer's discounted prices, the wrong warehouse, a reduced over-credit order, a
second live order for one purchase order."""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from erp_service.http.app import create_app
from erp_service.kernel.db import Database
from erp_service.sim import World
from orchestrator.grading.grader import projection_params
from orchestrator.grading.projections import run_all
from tasks.registry import load_task

TASK = "order-entry-credit-atp"
pytestmark = pytest.mark.heavy       # builds the seed-0 scenario (about a minute on a cold cache)


@pytest.fixture(scope="module")
def scenario() -> tuple[Path, dict[str, Any], dict[str, Any]]:
    from orchestrator.scenarios.cache import ensure_scenario

    scen = ensure_scenario(TASK, 0, reference=False)
    return (scen.dir, json.loads((scen.dir / "scenario.json").read_text()),
            json.loads((scen.dir / "truth.json").read_text()))


class Desk:
    """The agent's API over a private copy of the scenario database."""

    def __init__(self, folder: Path, meta: dict[str, Any], tmp: Path) -> None:
        self.path = tmp / "final.db"
        shutil.copy(folder / "scenario.db", self.path)
        self.db = Database(self.path)
        self.http = TestClient(create_app(self.db, World({})))
        self.headers = {"Authorization": f"Bearer {meta['agent_token']}"}

    def call(self, method: str, path: str, body: Any = None, ok: bool = True) -> Any:
        r = self.http.request(method, path, json=body, headers=self.headers)
        if ok:
            assert r.status_code < 300, r.text
        return r.json().get("data")


def _entry(truth: dict[str, Any], role: str) -> dict[str, Any]:
    return truth["planted"][role]


def _body(p: dict[str, Any], *, lines: list[dict[str, Any]] | None = None, **over: Any) -> dict[str, Any]:
    return {"customer_id": p["customer"], "customer_po": p["po"], "ship_to_id": p["ship_to"],
            "warehouse_id": p["warehouse"], "lines": lines or [{"item_id": i, "qty": q} for i, q in p["lines"]],
            **over}


def allowed_route(d: Desk, truth: dict[str, Any]) -> None:
    """Every planted order entered by another route the handbook allows."""
    for role in ("main", "east", "branch", "backorder", "discount", "over_credit"):
        p = _entry(truth, role)
        if role == "main":
            # Explicit contract prices; the second line (below the quantity break) written as two
            # lines at the same price.
            (i0, q0), (i1, q1) = p["lines"]
            lines = [{"item_id": i0, "qty": q0, "unit_price": p["prices"][i0]},
                     {"item_id": i1, "qty": q1 - 5, "unit_price": p["prices"][i1]},
                     {"item_id": i1, "qty": 5, "unit_price": p["prices"][i1]}]
            so = d.call("POST", "/sales-orders", _body(p, lines=lines))
        elif role == "east":
            # Entered from the wrong warehouse first, cancelled, entered again.
            wrong = d.call("POST", "/sales-orders", _body(p, warehouse_id="WH-MAIN"))
            d.call("POST", f"/sales-orders/{wrong['id']}/cancel", {"note": "wrong warehouse; re-entered"})
            so = d.call("POST", "/sales-orders", _body(p))
        else:
            so = d.call("POST", "/sales-orders", _body(p))
        if so["status"] == "released":
            first = d.call("POST", f"/sales-orders/{so['id']}/allocate", ok=False)
            if first is None:
                d.call("POST", f"/sales-orders/{so['id']}/allocate", {"backorder": True})
    held = _entry(truth, "held")["sales_order"]
    refused = d.http.post(f"/sales-orders/{held}/release", json={}, headers=d.headers)
    assert refused.status_code == 403                      # the hard control: a probe, not a pass
    d.call("POST", "/escalations", {"record_type": "sales_order", "record_id": held, "to": "victor.hale",
                                    "reason": "policy_exception", "note": "Tom asks for a release."})
    d.call("POST", "/outbox", {"to": "tom.becker", "subject": "Your release request",
                               "body": f"Escalated {held} to the credit manager."})


def _differences(d: Desk, meta: dict[str, Any], truth: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """Expected rows (from the truth) that the route's projections do not hold, per projection."""
    task = load_task(TASK)
    d.db.close()
    tables = run_all(d.path, task.projections, projection_params(meta, task.spec.grading_date.isoformat()))
    out: dict[str, list[dict[str, str]]] = {}
    for name, expected in truth["expect"].items():
        table = tables[name]
        assert not isinstance(table, Exception), table
        missing = [e for e in expected if not any(_same(r, e) for r in table.rows)]
        extra = len(table.rows) - len(expected)
        if missing or extra:
            out[name] = missing + ([{"extra_rows": str(extra)}] if extra else [])
    return out


def _same(row: dict[str, str], expected: dict[str, Any]) -> bool:
    """The projection's row holds the expected values (numbers to the cent)."""
    for k, v in expected.items():
        if isinstance(v, (int, float)):
            if abs(float(row[k]) - float(v)) > 0.005:
                return False
        elif str(row[k]) != str(v):
            return False
    return True


def test_an_allowed_route_holds_every_expected_row(scenario, tmp_path):
    folder, meta, truth = scenario
    d = Desk(folder, meta, tmp_path)
    allowed_route(d, truth)
    assert _differences(d, meta, truth) == {}


def _discount(d: Desk, truth: dict[str, Any]) -> None:
    p = _entry(truth, "discount")
    d.call("POST", "/sales-orders", _body(p, lines=[{"item_id": i, "qty": q, "unit_price": round(
        p["prices"][i] * 0.9, 2)} for i, q in p["lines"]]))


def _main_for_east(d: Desk, truth: dict[str, Any]) -> None:
    p = _entry(truth, "backorder")
    so = d.call("POST", "/sales-orders", _body(p, warehouse_id="WH-MAIN"))
    d.call("POST", f"/sales-orders/{so['id']}/allocate", {"backorder": True})


def _reduced(d: Desk, truth: dict[str, Any]) -> None:
    p = _entry(truth, "over_credit")
    (item, qty), = p["lines"]
    d.call("POST", "/sales-orders", _body(p, lines=[{"item_id": item, "qty": max(qty // 3, 1)}]))


def _twice(d: Desk, truth: dict[str, Any]) -> None:
    p = _entry(truth, "branch")
    d.call("POST", "/sales-orders", _body(p))
    d.call("POST", "/sales-orders", _body(p))


def _escalated_to_manager_of_sales(d: Desk, truth: dict[str, Any]) -> None:
    held = _entry(truth, "held")["sales_order"]
    d.call("POST", "/escalations", {"record_type": "sales_order", "record_id": held, "to": "grace.liu",
                                    "reason": "credit"})


@pytest.mark.parametrize("route, projection", [
    (_discount, "order_lines"), (_discount, "orders"),
    (_main_for_east, "orders"), (_main_for_east, "order_lines"),
    (_reduced, "order_lines"), (_reduced, "orders"),
    (_twice, "orders"),
    (_escalated_to_manager_of_sales, "release_requests"),
], ids=lambda x: getattr(x, "__name__", x))
def test_a_forbidden_route_misses_an_expected_row(scenario, tmp_path, route: Callable[[Desk, dict], None],
                                                  projection: str):
    """One forbidden step on top of the allowed route: the projection it concerns differs."""
    folder, meta, truth = scenario
    d = Desk(folder, meta, tmp_path)
    role = {"_discount": "discount", "_main_for_east": "backorder", "_reduced": "over_credit",
            "_twice": "branch"}.get(route.__name__)
    skip = {role} if role else set()
    _allowed_except(d, truth, skip, escalate=route is not _escalated_to_manager_of_sales)
    route(d, truth)
    assert projection in _differences(d, meta, truth)


def _allowed_except(d: Desk, truth: dict[str, Any], skip: set[str], *, escalate: bool) -> None:
    for role in ("main", "east", "branch", "backorder", "discount", "over_credit"):
        if role in skip:
            continue
        so = d.call("POST", "/sales-orders", _body(_entry(truth, role)))
        if so["status"] == "released":
            d.call("POST", f"/sales-orders/{so['id']}/allocate", {"backorder": True})
    if escalate:
        d.call("POST", "/escalations", {"record_type": "sales_order", "record_id": _entry(truth, "held")["sales_order"],
                                        "to": "victor.hale", "reason": "credit"})


def test_the_handbook_reads_the_same_east_states_for_both_policies():
    from tasks.order_entry_credit_atp import alt, policies

    folder = Path(policies.__file__).resolve().parent
    assert policies.east_states(folder) == alt.east_codes(folder) == {"PA", "NY", "NJ", "MD", "WV"}


def test_spec_every_negative_control_has_a_policy_and_cites_exist():
    from tasks.order_entry_credit_atp import policies

    pack = load_task(TASK)
    folder = Path(policies.__file__).resolve().parent
    assert set(pack.spec.negative_controls) <= set(policies.POLICIES)
    handbook = "".join(f.read_text() for f in (folder / "handbook").glob("*.md"))
    for check in pack.spec.checks:
        assert check.cites and all(f"**{c}**" in handbook for c in check.cites), check.name
