"""Master data of Northgate: people and tokens, chart and periods, items and BOMs, vendors with
verified bank accounts, customers, budgets, the operating bank account and the plant calendar."""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from pathlib import Path

from erp_service.domains import ledger, masterdata, org, sales
from erp_service.domains import vendors as vendor_domain
from erp_service.domains.banking import bank_accounts
from erp_service.setup import CompanyBuilder
from erp_service.standard import install_standard

from .accounting import budget_rows
from .catalog import Catalog, make_catalog, sellable
from .parties import Party, make_customers, make_vendors
from .people import COMPANY_NAME, DEPARTMENTS, EMAIL_DOMAIN, PEOPLE, phone_for

HISTORY_START = "2025-10-01"
LAST_PERIOD = "2027-03-31"
HOLIDAYS = [("2025-11-27", "Thanksgiving"), ("2025-12-25", "Christmas Day"), ("2026-01-01", "New Year's Day"),
            ("2026-05-25", "Memorial Day"), ("2026-07-03", "Independence Day (observed)"),
            ("2026-09-07", "Labor Day"), ("2026-11-26", "Thanksgiving"), ("2026-12-25", "Christmas Day")]
WAREHOUSES = [("WH-MAIN", "Main plant warehouse, Columbus OH"), ("WH-EAST", "East distribution center, Pittsburgh PA")]
#: Customer price lists: (id, name, factor on the item's list price); 5% off from 50 units.
PRICE_LISTS = [("PL-DIST", "Distributors", 0.82), ("PL-CONT", "Contractors", 1.0)]
WORK_CENTERS = [("WC-SAW", "Saw and bar prep", 16), ("WC-MACH", "CNC machining", 32),
                ("WC-ASSY", "Assembly", 24), ("WC-TEST", "Pressure test and pack", 16)]


def token_secret(seed: int, user_id: str, salt: str = "northgate") -> str:
    """A deterministic token secret per (seed, user): reproducible databases, distinct per seed."""
    return "ngv_" + hashlib.sha256(f"{salt}:{seed}:{user_id}".encode()).hexdigest()[:40]


@dataclass
class Northgate:
    """A built company: the builder (open database), its parties and the tokens by user."""

    builder: CompanyBuilder
    seed: int
    rng: random.Random
    vendors: list[Party]
    customers: list[Party]
    catalog: Catalog
    tokens: dict[str, str] = field(default_factory=dict)

    def vendor(self, vendor_id: str) -> Party:
        """One vendor by id."""
        return next(v for v in self.vendors if v.id == vendor_id)


def build_master(path: Path, seed: int, *, start: str = HISTORY_START) -> Northgate:
    """Create the database at `path` with all master data, dated `start`."""
    rng = random.Random(f"northgate:{seed}")
    b = CompanyBuilder.create(path, business_date=start, name=COMPANY_NAME)
    install_standard(b, first_period=start, last_period=LAST_PERIOD)
    b.insert(org.company, key="mail_domain", value=EMAIL_DOMAIN)  # box addresses: ap@northgatevalve.com
    b.insert_many(org.departments, [{"id": d, "name": n, "head_user_id": h, "cost_center": f"CC-{d}"}
                                    for d, n, h in DEPARTMENTS])
    tokens: dict[str, str] = {}
    for i, p in enumerate(PEOPLE):
        b.add_user(p.id, p.name, roles=list(p.roles), title=p.title, department=p.department, manager=p.manager,
                   email=p.email, phone=phone_for(i))
        secret = token_secret(seed, p.id)
        b.add_token(p.id, secret, f"tok-{p.id}", label="issued")
        tokens[p.id] = secret
    b.insert_many(org.approval_limits, [{"user_id": p.id, "doc_type": k, "limit_cents": v * 100}
                                        for p in PEOPLE for k, v in sorted(p.limits.items())])
    b.insert_many(org.calendar, [{"day": d, "kind": "holiday", "note": n} for d, n in HOLIDAYS])
    # Leave: a week for a few people, at seeded times.
    for uid in ("maya.chen", "tomas.novak", "victor.hale"):
        month = rng.randint(1, 9)
        day = rng.randint(3, 20)
        b.insert(org.leave, user_id=uid, start_date=f"2026-{month:02d}-{day:02d}",
                 end_date=f"2026-{month:02d}-{day + 4:02d}", note="annual leave")
    b.insert(org.delegations, from_user="maya.chen", to_user="ben.carter", doc_type="requisition",
             start_date="2026-01-01", end_date="2026-12-31")

    vendor_list = make_vendors(rng)
    customer_list = make_customers(rng)
    catalog = make_catalog(rng, [v.id for v in vendor_list])
    b.insert_many(masterdata.warehouses, [{"id": w, "name": n, "address": None} for w, n in WAREHOUSES])
    b.insert_many(masterdata.locations, [{"id": f"{w}-{z}", "warehouse_id": w, "name": f"{w} zone {z}",
                                          "kind": "storage"} for w, _ in WAREHOUSES for z in ("A01", "B01", "RCV")])
    b.insert_many(masterdata.work_centers, [{"id": i, "name": n, "daily_capacity_hours": h} for i, n, h in WORK_CENTERS])
    b.insert_many(masterdata.items, [{
        "id": it.id, "description": it.description, "type": it.type, "category": it.type, "uom": it.uom,
        "lot_controlled": 1 if it.lot_controlled else 0, "shelf_life_days": it.shelf_life_days or None,
        "standard_cost": it.standard_cost, "list_price": it.list_price, "lead_time_days": it.lead_time_days,
        "safety_stock": it.safety_stock, "moq": it.moq, "order_multiple": it.order_multiple,
        "preferred_vendor": it.preferred_vendor, "planner": "jordan.lee" if it.type not in ("finished",) else None,
        "default_warehouse": "WH-MAIN", "active": 1} for it in catalog.items])
    line_no: dict[str, int] = {}
    rows = []
    for ln in catalog.bom:
        line_no[ln.parent] = line_no.get(ln.parent, 0) + 1
        pending = ln.effective_from > "2026-12-31"
        rows.append({"parent_item": ln.parent, "line_no": line_no[ln.parent], "component_item": ln.component,
                     "qty_per": ln.qty_per, "scrap_pct": ln.scrap_pct, "effective_from": ln.effective_from,
                     "effective_to": ln.effective_to, "pending_change": 1 if pending else 0,
                     "change_note": catalog.pending_change if pending else None})
    b.insert_many(masterdata.boms, rows)
    b.insert_many(masterdata.routings, [
        {"item_id": it.id, "step": s, "work_center_id": wc, "setup_hours": 0.5, "hours_per_unit": h}
        for it in catalog.items if it.type == "finished"
        for s, (wc, h) in enumerate([("WC-MACH", 0.2), ("WC-ASSY", 0.15), ("WC-TEST", 0.05)], start=1)])
    # Price agreements with quantity breaks for the brass rod from Mid-State.
    for it in catalog.items:
        if it.type == "bar_stock" and rng.random() < 0.6:
            pa_id = f"PA-{it.id}"
            b.insert(masterdata.price_agreements, id=pa_id, vendor_id=it.preferred_vendor, item_id=it.id,
                     valid_from="2026-01-01", valid_to="2026-12-31", note="annual agreement")
            b.insert_many(masterdata.price_breaks, [
                {"agreement_id": pa_id, "min_qty": q, "unit_price": round(it.standard_cost * f, 4)}
                for q, f in ((0, 1.0), (500, 0.95), (1000, 0.9))])
    b.insert_many(masterdata.approved_substitutes, [
        {"item_id": f"SEAL-0{n}0", "substitute_id": f"ORING-0{n}", "vendor_id": "V-0105", "note": "engineering approved"}
        for n in (1, 2)])

    b.insert_many(vendor_domain.vendors, [{
        "id": v.id, "name": v.name, "status": "active", "terms": v.terms, "tin": v.tin,
        "email": f"ar@{v.domain}", "phone": v.phone, "address": f"{v.city}, {v.state}", "contact": "Accounts receivable",
        "quality_hold": 0, "remit_account": f"VBA-{v.id[2:]}", "default_account": "6350",
        "created_on": "2020-01-01"} for v in vendor_list])
    b.insert_many(vendor_domain.vendor_bank_accounts, [{
        "id": f"VBA-{v.id[2:]}", "status": "verified", "created_by": "sys-setup", "created_on": "2020-01-01",
        "created_wall": None, "vendor_id": v.id, "bank_name": v.bank_name, "account_name": v.name,
        "account_number": v.account, "routing_number": v.routing, "source_ref": None, "note": "on file",
        "decided_by": "priya.raman", "decided_on": "2020-01-02", "decision_note": "verified at onboarding"}
        for v in vendor_list])
    b.insert_many(sales.price_lists, [{"id": pl, "name": name} for pl, name, _ in PRICE_LISTS])
    b.insert_many(sales.price_list_items, [
        {"price_list_id": pl, "item_id": it.id, "min_qty": q, "unit_price": round(it.list_price * f * bf, 2)}
        for pl, _, f in PRICE_LISTS for it in sellable(catalog) for q, bf in ((0, 1.0), (50, 0.95))])
    b.insert_many(sales.customers, [{
        "id": c.id, "name": c.name, "status": "active", "terms": c.terms, "credit_limit_cents": c.credit_limit * 100,
        "credit_hold": 0, "price_list_id": "PL-DIST" if c.kind == "distributor" else "PL-CONT",
        "tax_status": "taxable" if c.kind == "contractor" and c.state == "OH" else "exempt",
        "tax_rate": 7.5 if c.kind == "contractor" and c.state == "OH" else 0.0, "parent_id": c.parent,
        "email": f"ap@{c.domain}", "phone": c.phone, "address": f"{c.city}, {c.state}", "contact": "Accounts payable",
        "created_on": "2020-01-01"} for c in customer_list])
    b.insert_many(sales.ship_to, [{"id": f"{c.id}-01", "customer_id": c.id, "name": f"{c.name} warehouse",
                                   "address": f"{100 + int(c.id[2:]) % 900} Commerce Dr, {c.city}, {c.state}",
                                   "is_default": 1} for c in customer_list])
    b.insert(bank_accounts, id="OPER", name="Operating account", bank_name="First Buckeye Bank",
             account_number="4410029917", gl_account_id="1000", status="active")
    # Budgets per department, account and month: the history's fiscal year and the current one.
    b.insert_many(ledger.budgets, budget_rows(rng, ledger_periods(start, 24)))
    return Northgate(builder=b, seed=seed, rng=rng, vendors=vendor_list, customers=customer_list,
                     catalog=catalog, tokens=tokens)


def ledger_periods(start: str, months: int = 12) -> list[str]:
    """The period ids of `months` months from `start` (twelve: one fiscal year)."""
    y, m = int(start[:4]), int(start[5:7])
    out = []
    for _ in range(months):
        out.append(f"{y:04d}-{m:02d}")
        m += 1
        if m == 13:
            y, m = y + 1, 1
    return out
