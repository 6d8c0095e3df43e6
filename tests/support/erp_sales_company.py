"""The sales tests' company."""
from __future__ import annotations

from erp_company import build_company

from erp_service.domains.inventory import AdjustmentIn, create_adjustment
from erp_service.domains.masterdata import items, locations, warehouses
from erp_service.domains.sales import customers, price_list_items, price_lists, ship_to


def make_company(tmp_path):
    """The test company plus a warehouse, a lot-controlled item with two lots in stock, a price
    list and three customers (a parent, its taxable subsidiary, an inactive one)."""
    c = build_company(tmp_path)
    b = c.builder
    b.insert(warehouses, id="WH-MAIN", name="Main")
    b.insert(locations, id="WH-MAIN-A01", warehouse_id="WH-MAIN", name="A01", kind="stock")
    b.insert(items, id="FV-100", description="Finished valve 1in", type="finished", uom="ea", lot_controlled=1,
             shelf_life_days=365, standard_cost=40.0, list_price=100.0, lead_time_days=0, safety_stock=0,
             moq=0, order_multiple=0, active=1)
    b.insert(price_lists, id="PL-DIST", name="Distributors")
    b.insert_many(price_list_items, [{"price_list_id": "PL-DIST", "item_id": "FV-100", "min_qty": 0, "unit_price": 90.0},
                                     {"price_list_id": "PL-DIST", "item_id": "FV-100", "min_qty": 50, "unit_price": 85.0}])
    b.insert(customers, id="C-0100", name="Parent Supply", status="active", terms="NET30",
             credit_limit_cents=10_000_00, credit_hold=0, price_list_id="PL-DIST", tax_status="exempt", tax_rate=0.0,
             email="ap@parent.example", phone="555-200-1000")
    b.insert(customers, id="C-0101", name="Valley Plumbing", status="active", terms="NET30",
             credit_limit_cents=5_000_00, credit_hold=0, price_list_id="PL-DIST", tax_status="taxable", tax_rate=7.25,
             parent_id="C-0100", email="ap@valley.example", phone="555-200-2000")
    b.insert(customers, id="C-0102", name="Closed Co", status="inactive", terms="NET30", credit_limit_cents=0,
             credit_hold=0, tax_status="exempt", tax_rate=0.0)
    b.insert(ship_to, id="C-0101-01", customer_id="C-0101", name="Yard", address="1 Yard Rd", is_default=1)
    for lot, exp, qty in (("L-LATE", "2027-06-30", 30), ("L-EARLY", "2027-01-31", 20)):
        b.act("inventory_controller", "inv.adjust", "/inventory/adjustments", None, lambda tx, lot=lot, exp=exp, qty=qty:
              create_adjustment(tx, AdjustmentIn(item_id="FV-100", warehouse_id="WH-MAIN", location_id="WH-MAIN-A01",
                                                 lot_no=lot, qty=qty, reason="found", expiry=exp)))
    return c


