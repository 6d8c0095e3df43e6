"""Money and quantities: cents in the database, two-decimal numbers on the wire."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator


def to_cents(value: Any) -> int:
    """Decimal amount (number or string) to integer cents, rounding half up."""
    try:
        return int((Decimal(str(value)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
    except (InvalidOperation, ValueError) as exc:
        raise ValueError(f"not an amount: {value!r}") from exc


def from_cents(cents: int | None) -> float | None:
    """Integer cents to a two-decimal number for JSON."""
    return None if cents is None else round(cents / 100, 2)


def q4(value: Any) -> float:
    """Quantities and unit prices: rounded to four places."""
    return float(Decimal(str(value)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def _check_amount(value: Decimal) -> Decimal:
    if not value.is_finite():
        raise ValueError("amount must be a finite number")
    if value.as_tuple().exponent < -2:  # type: ignore[operator]
        raise ValueError("amount has more than two decimal places")
    if abs(value) >= Decimal("1e12"):
        raise ValueError("amount is out of range")
    return value


def _check_qty(value: Decimal) -> Decimal:
    if not value.is_finite() or abs(value) >= Decimal("1e9"):
        raise ValueError("quantity is out of range")
    return value


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    return value


#: An amount of money in a request body: at most two decimals.
Amount = Annotated[Decimal, BeforeValidator(_no_bool), AfterValidator(_check_amount)]
#: A quantity in a request body.
Quantity = Annotated[Decimal, BeforeValidator(_no_bool), AfterValidator(_check_qty)]
