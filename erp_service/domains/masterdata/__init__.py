"""Master data of the supply side: items, warehouses and locations, lots, bills of materials,
work centers and routings, price agreements with quantity breaks, approved substitutes.

Master data is loaded by scenario generators; through the API only an item's planning fields
can change (PATCH /items/{id}). Vendors and their bank accounts live in `vendors`.
"""
from __future__ import annotations

from .routes import OnHandRow, router
from .service import agreement_price, bom_lines, explode, get_item, is_made, register_on_hand
from .tables import MADE_TYPES, approved_substitutes, boms, items, locations, lots, price_agreements, price_breaks, routings, warehouses, work_centers

__all__ = ["router", "MADE_TYPES", "OnHandRow", "agreement_price", "approved_substitutes", "bom_lines",
           "boms", "explode", "get_item", "is_made", "items", "locations", "lots", "price_agreements",
           "price_breaks", "register_on_hand", "routings", "warehouses", "work_centers"]
