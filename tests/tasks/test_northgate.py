"""The Northgate company generator: master data at the advertised scale, a year of history
whose every control account ties on the first day, and determinism by seed.

One full company (twelve months of history) is generated once per module; the determinism
tests use a two-month history, which exercises every policy (buying, receiving, billing,
payment runs, orders, shipments, cash, work orders, month end) at a fraction of the cost."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from erp_service.canonical import canonical_hash
from tasks.northgate.build import build_northgate
from tasks.northgate.company import HISTORY_START
from tasks.northgate.people import CONTROLLER

FULL_END, SHORT_END = "2026-10-07", "2025-11-30"


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """Northgate after twelve months of history (payment-run's parameters), still open."""
    path = tmp_path_factory.mktemp("ng") / "full.db"
    ng, erp = build_northgate(path, 0, history_end=FULL_END, last_order="2026-07-29")
    yield ng, erp, path
    ng.builder.finish()


def _short(tmp: Path, seed: int) -> str:
    path = tmp / f"short-{seed}-{len(list(tmp.iterdir()))}.db"
    ng, _ = build_northgate(path, seed, history_end=SHORT_END, last_order=SHORT_END)
    ng.builder.finish()
    return canonical_hash(path)


def test_same_seed_same_hash_and_seeds_differ(tmp_path):
    first, second = _short(tmp_path, 3), _short(tmp_path, 3)
    assert first == second
    assert _short(tmp_path, 4) != first


def test_first_day_trial_balance_balances_and_every_control_account_ties(full):
    ng, erp, _ = full
    tb = erp.get(CONTROLLER, "/reports/trial-balance")
    assert tb["balanced"] and tb["total_debit"] > 1_000_000
    ties = erp.get(CONTROLLER, "/reports/control-ties")
    assert ties["all_tied"], ties["rows"]
    assert {r["control"] for r in ties["rows"]} >= {"ap", "ar", "inventory", "grni", "unapplied_cash", "wip"}
    by = {r["control"]: r for r in ties["rows"]}
    # The history left real balances behind, not an empty ledger that ties trivially.
    assert by["ar"]["gl"] > 0 and by["inventory"]["gl"] > 0 and by["ap"]["gl"] < 0


def test_validated_po_invoices_clear_grni(full):
    ng, erp, _ = full
    grni = erp.get(CONTROLLER, "/reports/grni")
    ties = {r["control"]: r for r in erp.get(CONTROLLER, "/reports/control-ties")["rows"]}
    inventory = ties["inventory"]["gl"]
    # Every receipt of the history was billed and validated: nothing (or next to nothing) is
    # left in GRNI, while inventory holds real value — GRNI does not shadow inventory.
    assert abs(ties["grni"]["gl"]) < 0.05 * inventory
    assert grni is not None


def test_master_data_at_the_advertised_scale(full):
    ng, _, path = full
    conn = sqlite3.connect(path)
    count = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    assert 18 <= count("SELECT count(*) FROM users WHERE kind = 'staff'") <= 22
    assert 110 <= count("SELECT count(*) FROM items") <= 130
    assert count("SELECT count(*) FROM items WHERE type = 'phantom'") == 1
    assert count("SELECT count(*) FROM items WHERE lot_controlled = 1") >= 20
    assert count("SELECT count(*) FROM boms WHERE pending_change = 1") == 1
    assert 28 <= count("SELECT count(*) FROM vendors") <= 32
    assert 55 <= count("SELECT count(*) FROM customers") <= 65
    assert 55 <= count("SELECT count(*) FROM accounts") <= 65
    assert count("SELECT count(*) FROM work_centers") == 4
    assert count("SELECT count(DISTINCT department_id) FROM budgets") >= 5
    assert count("SELECT count(DISTINCT period_id) FROM budgets") >= 12
    assert count("SELECT count(*) FROM budgets WHERE period_id = '2026-10'") > 0   # the scenario's month
    conn.close()


def test_history_spans_twelve_months_of_every_process(full):
    ng, _, path = full
    conn = sqlite3.connect(path)
    months = lambda sql: {r[0][:7] for r in conn.execute(sql)}  # noqa: E731
    twelve = {f"{y}-{m:02d}" for y, m in [(2025, 10), (2025, 11), (2025, 12)] + [(2026, m) for m in range(1, 10)]}
    assert twelve <= months("SELECT entry_date FROM journal_entries WHERE status = 'posted'")
    assert twelve - {"2025-10"} <= months("SELECT invoice_date FROM ar_invoices")
    assert twelve <= months("SELECT invoice_date FROM ap_invoices")
    assert min(months("SELECT order_date FROM purchase_orders")) == HISTORY_START[:7]
    # Customers paid late and short as well as on time; work orders issued and completed.
    assert conn.execute("SELECT count(*) FROM ar_invoices WHERE status = 'partially_paid'").fetchone()[0] > 0
    late = conn.execute("SELECT count(*) FROM cash_applications a JOIN ar_invoices i ON i.id = a.invoice_id "
                        "WHERE a.on_date > i.due_date").fetchone()[0]
    assert late > 0
    assert conn.execute("SELECT count(*) FROM wo_issues").fetchone()[0] > 0
    assert conn.execute("SELECT count(*) FROM wo_completions").fetchone()[0] > 0
    assert conn.execute("SELECT count(*) FROM shipment_lines WHERE lot_no IS NOT NULL").fetchone()[0] > 0
    conn.close()


def test_history_leaves_nothing_for_the_payment_run(full):
    """payment-run's property: no approved open invoice due by the next run or with a discount
    still open on the pay date."""
    ng, erp, _ = full
    listed = erp.get("hannah.brooks", "/ap-invoices", status="approved", limit=1000)["items"]
    assert not [i for i in listed if i["due_date"] <= "2026-10-16" or (i.get("discount_date") or "") >= "2026-10-09"]
