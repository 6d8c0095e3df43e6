"""The ERP's response bodies (`erp_service.http.api.render_json`, orjson) are what the standard
library's `json.dumps(..., ensure_ascii=False, separators=(",", ":"), default=str)` wrote before:
the same bytes for everything but a float's spelling, and the same value for floats."""
from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from decimal import Decimal

import pytest

from erp_service.http.api import render_json


def standard(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int


SAME_BYTES = [
    {"business_date": "2026-10-08", "data": {"items": [{"id": "APINV-10001", "open": None, "on_hold": False}],
                                              "total": 1, "offset": 0, "limit": 50}},
    {"text": "Zoë – ☃ 𝄞 \u2028 \x7f", "ctl": "a\nb\tc\r\x00\x1f\"\\/"},
    {"date": dt.date(2026, 10, 8), "when": dt.datetime(2026, 10, 8, 9, 30, 1, 5),
     "aware": dt.datetime(2026, 10, 8, 9, 30, tzinfo=dt.UTC), "time": dt.time(9, 30)},
    {"amount": Decimal("1234.50"), "point": Point(3), "colour": Colour.RED, "level": Level.HIGH},
    {2: "int key", True: "bool key", None: "none key", 1.5: "float key"},
    [1, -2, 2**63 - 1, -(2**63), [[[]]], {}, ""],
    {"nested": [{"a": [{"b": [1, 2, {"c": None}]}]}]},
]


@pytest.mark.parametrize("value", SAME_BYTES, ids=range(len(SAME_BYTES)))
def test_same_bytes_as_the_standard_library(value: object) -> None:
    assert render_json(value) == standard(value)


@pytest.mark.parametrize("value", [0.1, 1234.5, 1e16, 1e-7, 12345678.9, -0.0, 3.0])
def test_floats_keep_their_value(value: float) -> None:
    assert json.loads(render_json({"x": value})) == json.loads(standard({"x": value}))


def test_what_orjson_refuses_the_standard_library_renders() -> None:
    huge = {"n": 2**70, "deep": [[[[1]]]]}
    assert render_json(huge) == standard(huge)
    deep: list = []
    for _ in range(300):   # past orjson's 254 levels, within the standard library's recursion
        deep = [deep]
    assert render_json(deep) == standard(deep)


def test_a_lone_surrogate_fails_as_it_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        standard({"s": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        render_json({"s": "\ud800"})
