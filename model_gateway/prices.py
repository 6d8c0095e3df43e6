"""The declared, versioned price table (`prices.yaml`) and the cost of one call."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

DEFAULT_TABLE = Path(__file__).with_name("prices.yaml")
PER = 1_000_000  # prices are per million tokens


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens of each kind."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(frozen=True)
class PriceTable:
    """A named version of the prices of the models."""

    version: str
    models: dict[str, Price]

    def price(self, model: str | None) -> Price | None:
        """The price of a model; also matches a dated name (`claude-x-20250101`) to `claude-x`."""
        if not model:
            return None
        if model in self.models:
            return self.models[model]
        base, sep, tail = model.rpartition("-")
        if sep and tail.isdigit() and len(tail) == 8:
            return self.models.get(base)
        return None

    def cost(self, model: str | None, *, fresh_input: int, output: int, cache_read: int, cache_write: int) -> float | None:
        """Dollars for one call, or None when the model is not in the table."""
        p = self.price(model)
        if p is None:
            return None
        total = fresh_input * p.input + output * p.output + cache_read * p.cache_read + cache_write * p.cache_write
        return round(total / PER, 8)


def load_prices(path: Path | None = None) -> PriceTable:
    """Read a price table (default: the packaged `prices.yaml`); ValueError names what is wrong."""
    path = path or DEFAULT_TABLE
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("version"), str) or not isinstance(doc.get("models"), dict):
        raise ValueError(f"{path}: a price table needs `version` (text) and `models` (mapping)")
    models: dict[str, Price] = {}
    for name, raw in doc["models"].items():
        if not isinstance(raw, dict) or "input" not in raw or "output" not in raw:
            raise ValueError(f"{path}: models.{name} needs at least `input` and `output`")
        extra = set(raw) - {"input", "output", "cache_read", "cache_write"}
        if extra:
            raise ValueError(f"{path}: models.{name}: unknown field(s) {', '.join(sorted(extra))}")
        values = {k: float(v) for k, v in raw.items()}
        if any(v < 0 for v in values.values()):
            raise ValueError(f"{path}: models.{name}: a price cannot be negative")
        models[str(name)] = Price(**values)
    return PriceTable(version=doc["version"], models=models)
