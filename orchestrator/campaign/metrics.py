"""Pure statistics used by the summary and the report.

Conventions (declared in summary.json too):
- median: the middle value of the sorted list; for an even count, the mean of the two middle values.
- p90: nearest rank: the value at 1-based rank ceil(0.9 * n) of the sorted list.
  (The historical pilot used zero-based index floor(0.9 * n) capped at n - 1; `p90_floor_index`
  computes that one: `P90_BY_CONVENTION` maps a summary's declared convention to its function,
  so a summary is always verified under the convention it declares.)
- Wilson score interval at 95% (z = 1.959963984540054) for every pass rate.
- pass^k: the unbiased estimator C(c, k) / C(n, k) of one instance's chance to pass k
  repetitions out of its n scored ones (tau-bench), averaged over instances.
- Paired difference of two pass rates: Newcombe's (1998) method 10 interval; the exact McNemar
  test: a two-sided binomial test of the discordant pairs against p = 1/2.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054
DIGITS = 6

MEDIAN_CONVENTION = "middle of sorted values; mean of the two middle values when n is even"
P90_CONVENTION = "nearest rank: sorted value at 1-based rank ceil(0.9*n)"
P90_FLOOR_INDEX_CONVENTION = "pilot: sorted value at zero-based index floor(0.9*n), capped at n-1"
WILSON_CONVENTION = "Wilson score interval, 95% (z=1.959963984540054)"
PASS_HAT_K_CONVENTION = (
    "unbiased estimator (tau-bench): per instance C(c,k)/C(n,k) with n its scored repetitions and c "
    "those that passed, averaged over the instances with n >= k"
)
PAIRED_CI_CONVENTION = "Newcombe (1998) method 10: square-and-add of the two Wilson 95% intervals, phi-corrected"
EXACT_TEST_CONVENTION = "exact McNemar: two-sided binomial test of the discordant pairs, p = min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2)"


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


#: A summary's declared p90 convention -> the function that computes it.
P90_BY_CONVENTION = {P90_CONVENTION: p90, P90_FLOOR_INDEX_CONVENTION: p90_floor_index}


def pass_hat_k(passed: int, n: int, k: int) -> float:
    """C(passed, k) / C(n, k): the unbiased estimate of passing k of k repetitions, from `passed`
    passes in `n` scored repetitions of one instance (needs 1 <= k <= n)."""
    if not 1 <= k <= n or not 0 <= passed <= n:
        raise ValueError(f"pass_hat_k: need 1 <= k <= n and 0 <= passed <= n, got {passed=}, {n=}, {k=}")
    return math.comb(passed, k) / math.comb(n, k)


def binomial_cdf_half(x: int, n: int) -> float:
    """P(X <= x) for X ~ Binomial(n, 1/2), exactly (integer sums; one division at the end)."""
    if n < 0:
        raise ValueError("n must be >= 0")
    if x < 0:
        return 0.0
    return sum(math.comb(n, i) for i in range(min(x, n) + 1)) / 2**n


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for `b` and `c` discordant pairs (1.0 when there are none)."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    return min(1.0, 2 * binomial_cdf_half(min(b, c), b + c))


def newcombe_paired(both: int, first_only: int, second_only: int, neither: int,
                    z: float = Z95) -> tuple[float, float] | None:
    """Newcombe's method-10 interval for p1 - p2 of paired binary outcomes (p1 = first passes,
    p2 = second passes), None without pairs. phi is corrected as Newcombe does: an association
    ad - bc above n/2 is reduced by n/2, one in [0, n/2] counts as none."""
    a, b, c, d = both, first_only, second_only, neither
    n = a + b + c + d
    if n == 0:
        return None
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = _wilson_raw(a + b, n, z)
    l2, u2 = _wilson_raw(a + c, n, z)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    assoc = a * d - b * c
    corrected = assoc - n / 2 if assoc > n / 2 else (assoc if assoc < 0 else 0.0)
    phi = corrected / math.sqrt(margins) if margins else 0.0
    delta = p1 - p2
    lower = delta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    upper = delta + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return (rnd(max(-1.0, lower)), rnd(min(1.0, upper)))  # type: ignore[return-value]


def _wilson_raw(k: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson interval unrounded (Newcombe's interval is built from it)."""
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
