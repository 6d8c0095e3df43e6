"""Northgate's items and bills of materials: bar stock, castings, lot-controlled seals and
gaskets, purchased fittings and stem hardware, trim subassemblies, one phantom (the stem
hardware kit) and finished valves. Made items are costed by rolling their BOM up at standard."""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Item:
    """One item master record."""

    id: str
    description: str
    type: str                     # bar_stock|casting|seal|gasket|fitting|subassembly|phantom|finished
    uom: str
    standard_cost: float
    list_price: float = 0.0
    lot_controlled: bool = False
    shelf_life_days: int = 0
    lead_time_days: int = 10
    moq: float = 1
    order_multiple: float = 1
    safety_stock: float = 0
    preferred_vendor: str | None = None


@dataclass(frozen=True)
class BomLine:
    """Component of a parent item."""

    parent: str
    component: str
    qty_per: float
    scrap_pct: float = 0.0
    effective_from: str = "2020-01-01"
    effective_to: str | None = None


@dataclass
class Catalog:
    """Items and BOM lines; `pending_change` names the one pending engineering change."""

    items: list[Item] = field(default_factory=list)
    bom: list[BomLine] = field(default_factory=list)
    pending_change: str | None = None


ANCHOR_IDS = ("V-0101", "V-0102", "V-0103", "V-0104", "V-0105", "V-0106", "V-0107", "V-0108",
              "V-0109", "V-0110")
_SIZES = ["1/4", "3/8", "1/2", "3/4", "1", "1-1/4", "1-1/2", "2"]


def make_catalog(rng: random.Random, vendor_ids: list[str]) -> Catalog:
    """About 120 items with a multi-level BOM; costs and some attributes from the seed; made items
    carry their rolled-up material cost as standard cost."""
    cat = Catalog()
    brass, castings, seals, fittings = "V-0101", "V-0103", "V-0105", "V-0106"
    # Bar stock (16)
    for i, dia in enumerate(["0.250", "0.375", "0.500", "0.625", "0.750", "0.875", "1.000", "1.250",
                             "1.500", "1.750", "2.000", "2.250", "2.500", "2.750", "3.000", "3.500"]):
        cat.items.append(Item(f"BR-{int(float(dia) * 1000):04d}", f"C36000 brass rod {dia} in", "bar_stock", "ft",
                              round(rng.uniform(1.1, 9.5) * (1 + i / 8), 2), lead_time_days=rng.choice([5, 7, 10]),
                              moq=rng.choice([100, 200, 500]), order_multiple=50, preferred_vendor=brass))
    # Castings (16)
    for i, size in enumerate(_SIZES):
        for kind in ("BODY", "BONNET"):
            cat.items.append(Item(f"CAST-{i + 1}-{kind}", f"Bronze {kind.lower()} casting {size} in", "casting", "ea",
                                  round(rng.uniform(6, 40) * (1 + i / 4), 2), lead_time_days=15,
                                  moq=rng.choice([25, 50, 100]), order_multiple=25, preferred_vendor=castings))
    # Seals and gaskets, lot-controlled with expiry (24)
    for i, size in enumerate(_SIZES):
        for kind, typ, life in (("SEAL", "seal", 365), ("ORING", "seal", 540), ("GASKET", "gasket", 730)):
            cat.items.append(Item(f"{kind}-{i + 1:02d}{'0' if kind == 'SEAL' else ''}", f"{kind.title()} {size} in EPDM",
                                  typ, "ea", round(rng.uniform(0.3, 4.5), 2), lot_controlled=True,
                                  shelf_life_days=life, lead_time_days=rng.choice([7, 10, 14]),
                                  moq=rng.choice([100, 250, 500]), order_multiple=50, preferred_vendor=seals))
    # Purchased fittings (32)
    for i, size in enumerate(_SIZES):
        for kind in ("ELBOW", "TEE", "NIPPLE", "UNION"):
            cat.items.append(Item(f"FIT-{kind[:3]}-{i + 1:02d}", f"Brass {kind.lower()} {size} in NPT", "fitting", "ea",
                                  round(rng.uniform(0.8, 12), 2), list_price=0, lead_time_days=rng.choice([5, 10]),
                                  moq=rng.choice([50, 100]), order_multiple=10, preferred_vendor=fittings))
    # Stems and handles from two machining vendors (16), stem hardware from Keystone (3)
    others = [v for v in vendor_ids if v not in ANCHOR_IDS] or vendor_ids
    stem_vendor, handle_vendor = others[0], others[1 % len(others)]
    for i, size in enumerate(_SIZES):
        cat.items.append(Item(f"STEM-{i + 1:02d}", f"Valve stem {size} in", "fitting", "ea", round(rng.uniform(1.5, 8), 2),
                              lead_time_days=10, moq=100, order_multiple=25, preferred_vendor=stem_vendor))
        cat.items.append(Item(f"HNDL-{i + 1:02d}", f"Lever handle {size} in", "fitting", "ea", round(rng.uniform(1, 6), 2),
                              lead_time_days=10, moq=100, order_multiple=25, preferred_vendor=handle_vendor))
    for iid, desc, cost in (("FAST-NUT", "Stem nut, brass", 0.18), ("FAST-WASH", "Belleville washer, stainless", 0.09),
                            ("FAST-SCRW", "Handle screw, stainless", 0.07)):
        cat.items.append(Item(iid, desc, "fitting", "ea", round(cost * rng.uniform(0.9, 1.2), 2), lead_time_days=7,
                              moq=1000, order_multiple=500, preferred_vendor="V-0104"))
    # One phantom (the stem hardware kit, never stocked), trim subassemblies and finished valves
    cat.items.append(Item("SUB-HW", "Stem hardware kit (phantom)", "phantom", "ea", 0.0))
    cat.bom += [BomLine("SUB-HW", "FAST-NUT", 1), BomLine("SUB-HW", "FAST-WASH", 2), BomLine("SUB-HW", "FAST-SCRW", 1)]
    for i, size in enumerate(_SIZES):
        n = i + 1
        trim = f"SUB-{n:02d}-TRIM"
        cat.items.append(Item(trim, f"Trim subassembly {size} in", "subassembly", "ea", 0.0, lead_time_days=3))
        cat.items.append(Item(f"VLV-BALL-{n:02d}", f"Ball valve {size} in bronze", "finished", "ea", 0.0,
                              lead_time_days=5))
        cat.bom += [
            BomLine(trim, f"STEM-{n:02d}", 1), BomLine(trim, f"HNDL-{n:02d}", 1), BomLine(trim, "SUB-HW", 1),
            BomLine(trim, f"SEAL-{n:02d}0", 2), BomLine(trim, f"ORING-{n:02d}", 1, scrap_pct=2.0),
            BomLine(f"VLV-BALL-{n:02d}", f"CAST-{n}-BODY", 1, scrap_pct=2.0),
            BomLine(f"VLV-BALL-{n:02d}", f"CAST-{n}-BONNET", 1, scrap_pct=1.0),
            BomLine(f"VLV-BALL-{n:02d}", trim, 1),
            BomLine(f"VLV-BALL-{n:02d}", f"BR-{[250, 375, 500, 625, 750, 875, 1000, 1250][i]:04d}", 0.35, scrap_pct=5.0),
        ]
    # One pending engineering change: a body gasket in the 1-in valve from next quarter.
    cat.bom.append(BomLine("VLV-BALL-05", "GASKET-05", 1, effective_from="2027-01-01"))
    cat.pending_change = "VLV-BALL-05: add GASKET-05 from 2027-01-01"
    return _priced(rng, cat)


def rolled_cost(cat: Catalog, item_id: str, on: str = "2026-06-30") -> float:
    """Material cost of one unit at standard, scrap included, phantoms exploded (the same
    arithmetic as the ERP's `explode`), for BOM lines in effect on `on`."""
    by_id = {i.id: i for i in cat.items}
    total = 0.0
    for ln in cat.bom:
        if ln.parent != item_id or ln.effective_from > on or (ln.effective_to and ln.effective_to < on):
            continue
        comp = by_id[ln.component]
        unit = rolled_cost(cat, comp.id, on) if comp.type in ("phantom", "subassembly", "finished") else comp.standard_cost
        total += ln.qty_per * (1 + ln.scrap_pct / 100) * unit
    return total


def _priced(rng: random.Random, cat: Catalog) -> Catalog:
    """Standard costs of made items from their BOMs; list prices of what Northgate sells."""
    out = []
    for it in cat.items:
        if it.type in ("subassembly", "finished"):
            it = replace(it, standard_cost=round(rolled_cost(cat, it.id), 4))
        out.append(it)
    cat.items = out
    priced = []
    for it in cat.items:
        if it.type == "finished":
            it = replace(it, list_price=round(it.standard_cost * rng.uniform(2.7, 3.3) * 2) / 2)
        elif it.id.startswith("FIT-"):
            it = replace(it, list_price=round(it.standard_cost * rng.uniform(1.8, 2.3), 2))
        elif it.type == "gasket":
            it = replace(it, list_price=round(it.standard_cost * rng.uniform(2.5, 3.5), 2))
        priced.append(it)
    cat.items = priced
    return cat


def sellable(cat: Catalog) -> list[Item]:
    """What customers buy: finished valves, resale fittings and spare gaskets."""
    return [i for i in cat.items if i.list_price > 0]
