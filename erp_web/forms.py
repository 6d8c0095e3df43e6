"""Write forms: the submitted values as the request body, and the ERP's problem beside its field.

A value the person typed is passed on as typed where it does not convert (a number field holding
"12,5"), so the ERP's own validation answers it and the UI shows that answer; the UI adds no
rules of its own.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from erp_web.schema import Field

ROWS_SHOWN = 6  # empty rows offered in a `rows` field (lines of a document)
_FIELD_OF_DETAIL = re.compile(r"^([a-z_][a-z0-9_]*)((?:\.[a-z0-9_]+)*)\s*:\s*(.+)$", re.S)


def parse_form(raw: bytes) -> dict[str, list[str]]:
    """An `application/x-www-form-urlencoded` body as name -> values (blank values kept)."""
    out: dict[str, list[str]] = {}
    for k, v in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True):
        out.setdefault(k, []).append(v)
    return out


def first(form: Mapping[str, list[str]], name: str, default: str = "") -> str:
    values = form.get(name) or []
    return values[0] if values else default


def _convert(f: Field, text: str) -> Any:
    text = text.strip()
    if f.kind == "integer":
        try:
            return int(text)
        except ValueError:
            return text
    if f.kind == "number":
        try:
            return float(text.replace(",", "")) if re.fullmatch(r"-?[\d,]*\.?\d+", text) else text
        except ValueError:
            return text
    if f.kind == "boolean":
        return {"true": True, "yes": True, "on": True, "false": False, "no": False}.get(text.lower(), text)
    if f.kind == "list":
        return [p.strip() for p in re.split(r"[,\n]", text) if p.strip()]
    if f.kind == "json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def body_from_form(fields: tuple[Field, ...], form: Mapping[str, list[str]]) -> dict[str, Any]:
    """The JSON body: every field the person filled in (blank optional fields are left out, so the
    ERP applies its defaults); the rows of a lines table that have any value."""
    body: dict[str, Any] = {}
    for f in fields:
        if f.kind == "rows":
            rows = []
            for i in range(ROWS_SHOWN * 4):
                row = {c.name: _convert(c, first(form, f"{f.name}-{i}-{c.name}"))
                       for c in f.columns if first(form, f"{f.name}-{i}-{c.name}").strip()}
                if row:
                    rows.append(row)
            if rows or f.required:
                body[f.name] = rows
            continue
        text = first(form, f.name)
        if not text.strip():
            continue
        body[f.name] = _convert(f, text)
    return body


def field_errors(problem: Mapping[str, Any] | None, fields: tuple[Field, ...]) -> tuple[dict[str, str], str]:
    """(field name -> message, the message for the whole form) from a problem document.

    bb-erp names the field at the start of a 422's detail (`pay_date: expected a date ...`, or
    `lines.0.qty: ...`); the message goes beside that field. A refusal (409, 403) is about the
    whole action and goes at the top of the form.
    """
    if not problem:
        return {}, ""
    detail = str(problem.get("detail") or problem.get("title") or "")
    names = {f.name for f in fields}
    errors: dict[str, str] = {}
    for part in re.split(r";\s+(?=[a-z_][a-z0-9_.]*\s*:)", detail):
        m = _FIELD_OF_DETAIL.match(part.strip())
        if m and m.group(1) in names:
            sub = m.group(2).lstrip(".")
            errors[m.group(1)] = (f"row {int(sub.split('.')[0]) + 1}: " if sub[:1].isdigit() else "") + m.group(3).strip()
    return errors, ("" if errors and len(errors) == len(re.split(r";\s+(?=[a-z_][a-z0-9_.]*\s*:)", detail)) else detail)
