"""The history clerks' view of stock: on hand in the main warehouse, on order from vendors and
on work orders, and demand rates — kept in step with the ERP by applying the same quantities
(the ERP refuses any withdrawal the stock cannot cover, so a drift would stop generation)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .catalog import BomLine, Catalog, Item


def q4(x: float) -> float:
    """Four decimals, as the ERP stores quantities."""
    return round(x + 0.0, 4)


@dataclass
class Stock:
    """Quantities by item (main warehouse)."""

    items: dict[str, Item] = field(default_factory=dict)
    bom: dict[str, list[BomLine]] = field(default_factory=dict)
    on_hand: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    on_order: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    weekly: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def load_catalog(self, cat: Catalog) -> None:
        """Items and BOM lines (in effect during history)."""
        self.items = {i.id: i for i in cat.items}
        for ln in cat.bom:
            if ln.effective_from <= "2026-12-31":
                self.bom.setdefault(ln.parent, []).append(ln)

    def explode(self, parent: str, qty: float) -> dict[str, float]:
        """Components for `qty` of `parent`, scrap included, through phantoms — the ERP's
        `masterdata.explode` arithmetic, so backflushed quantities match to the 4th decimal."""
        out: dict[str, float] = {}
        for ln in self.bom.get(parent, []):
            need = qty * ln.qty_per * (1 + (ln.scrap_pct or 0) / 100)
            if self.items[ln.component].type == "phantom":
                for k, v in self.explode(ln.component, need).items():
                    out[k] = out.get(k, 0.0) + v
            else:
                out[ln.component] = out.get(ln.component, 0.0) + need
        return {k: q4(v) for k, v in out.items()}

    def add(self, item_id: str, qty: float) -> None:
        """Stock in (receipt, completion)."""
        self.on_hand[item_id] = q4(self.on_hand[item_id] + qty)

    def take(self, item_id: str, qty: float) -> None:
        """Stock out (issue, shipment)."""
        left = q4(self.on_hand[item_id] - qty)
        if left < -1e-6:
            raise RuntimeError(f"history stock model went negative for {item_id}: {left}")
        self.on_hand[item_id] = left

    def covers(self, needs: dict[str, float]) -> bool:
        """True when every need is on hand."""
        return all(self.on_hand[k] + 1e-9 >= v for k, v in needs.items())

    def position(self, item_id: str) -> float:
        """On hand plus on order."""
        return self.on_hand[item_id] + self.on_order[item_id]

    def derive_usage(self) -> None:
        """Weekly usage of components from the weekly demand of what is made (two levels)."""
        for parent in [i for i in self.items.values() if i.type == "finished"]:
            for comp, qty in self.explode(parent.id, self.weekly[parent.id]).items():
                self.weekly[comp] += qty
        for parent in [i for i in self.items.values() if i.type == "subassembly"]:
            for comp, qty in self.explode(parent.id, self.weekly[parent.id]).items():
                self.weekly[comp] += qty
