"""Pure statistics used by the summary and the report.

Conventions (declared in summary.json too):
- median: the middle value of the sorted list; for an even count, the mean of the two middle values.
- p90: nearest rank: the value at 1-based rank ceil(0.9 * n) of the sorted list.
  (The historical pilot used zero-based index floor(0.9 * n) capped at n - 1; `p90_floor_index`
  computes that one, for comparisons with it only.)
- Wilson score interval at 95% (z = 1.959963984540054) for every pass rate.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054
DIGITS = 6

MEDIAN_CONVENTION = "middle of sorted values; mean of the two middle values when n is even"
P90_CONVENTION = "nearest rank: sorted value at 1-based rank ceil(0.9*n)"
WILSON_CONVENTION = "Wilson score interval, 95% (z=1.959963984540054)"


def rnd(x: float | None) -> float | None:
    """Round for publication (6 decimals) so the summary is stable across platforms."""
    return None if x is None else round(float(x), DIGITS)


def rate(k: int | float, n: int) -> float | None:
    """k / n rounded, or None when n is 0 (no scored attempts: no rate)."""
    return None if n == 0 else rnd(k / n)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for k successes in n trials; None for n == 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"wilson: need 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (rnd(max(0.0, centre - half)), rnd(min(1.0, centre + half)))  # type: ignore[return-value]


def median(values: Sequence[float]) -> float | None:
    """Median per MEDIAN_CONVENTION; None for no values."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return None
    mid = n // 2
    return rnd(xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2)


def p_nearest_rank(values: Sequence[float], q: float) -> float | None:
    """The q-quantile by nearest rank (1-based rank ceil(q*n)); None for no values."""
    if not 0 < q <= 1:
        raise ValueError("q must be in (0, 1]")
    xs = sorted(values)
    if not xs:
        return None
    # round() guards against 0.9*10 = 9.000000000000002 pushing the rank up by one
    rank = max(1, math.ceil(round(q * len(xs), 9)))
    return rnd(xs[rank - 1])


def p90(values: Sequence[float]) -> float | None:
    """p90 per P90_CONVENTION."""
    return p_nearest_rank(values, 0.9)


def p90_floor_index(values: Sequence[float]) -> float | None:
    """The pilot's historical p90: zero-based index floor(0.9*n), capped at n-1."""
    xs = sorted(values)
    if not xs:
        return None
    return rnd(xs[min(len(xs) - 1, math.floor(0.9 * len(xs)))])
