"""How values look on a page: money, dates, statuses, and links between documents.

Links are found from the schema's collections: a field named `vendor` or `purchase_order` links
to `/vendors/<id>` or `/purchase-orders/<id>` when the ERP has such a document route, and a value
like `MSG-10085` links to the message. No per-document template is needed.
"""
from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape

from erp_web.schema import ApiIndex, humanize

#: Rows per page of a list or the inbox.
PAGE = 50
MONEY_FIELDS = re.compile(r"(amount|total|open|discount|balance|price|cost|value|paid|limit|floor|debit|credit|net|gross|cash)", re.I)
STATUS_TONES = {
    "approved": "good", "verified": "good", "paid": "good", "posted": "good", "processed": "good", "released": "good",
    "closed": "muted", "cancelled": "muted", "void": "muted", "withdrawn": "muted", "no_action": "muted",
    "pending": "warn", "draft": "warn", "submitted": "warn", "entered": "warn", "matched": "warn", "received": "warn",
    "rejected": "bad", "on_hold": "bad", "suspicious": "bad", "disputed": "bad", "escalated": "bad", "open": "info",
}
# ID prefixes whose documents are not under a collection named after the field holding them.
_PREFIX_LINKS = {"MSG": "/inbox/{}", "APINV": "/r/ap-invoices/{}", "VBA": "/r/vendor-bank-accounts/{}", "JE": "/r/journal-entries/{}",
                 "PR": "/r/payment-runs/{}", "PO": "/r/purchase-orders/{}", "ESC": "/r/escalations/{}"}
_ID_LIKE = re.compile(r"^([A-Z]{1,6})-[A-Z0-9-]+$")


class Linker:
    """Turns an (field name, value) pair into a link to the document it names, where there is one."""

    def __init__(self, index: ApiIndex) -> None:
        self.docs: dict[str, str] = {}  # singular field name -> collection path
        for op in index.lists():
            if index.detail_of(op.path) is None:
                continue
            base = op.path.strip("/")
            if "/" in base:
                continue
            singular = base[:-3] + "y" if base.endswith("ies") else base[:-1] if base.endswith("s") else base
            self.docs[singular.replace("-", "_")] = op.path
        self.docs.setdefault("invoice", "/ap-invoices")
        self.docs.setdefault("po", "/purchase-orders")
        self.docs.setdefault("run", "/payment-runs")
        self.docs.setdefault("bank_account", "/bank-accounts")

    def href(self, name: str, value: Any) -> str | None:
        if not isinstance(value, str) or not value or " " in value:
            return None
        key = name.lower()
        if key in ("id",):
            return None
        m = _ID_LIKE.match(value)
        if m and m.group(1) in _PREFIX_LINKS:
            return _PREFIX_LINKS[m.group(1)].format(value)
        for candidate in (key, key.removesuffix("_id"), key.removesuffix("_ref")):
            if candidate in self.docs and candidate != "bank_account":
                return f"/r{self.docs[candidate]}/{value}"
        return None


def money(value: Any) -> str:
    """12345.6 -> 12,345.60"""
    try:
        return f"{float(value):,.2f}"
    except (TypeError, ValueError):
        return str(value)


def is_money(name: str, value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bool(MONEY_FIELDS.search(name)) and "days" not in name


def cell(name: str, value: Any, linker: Linker | None = None) -> Markup:
    """One value as HTML: a status badge, a formatted amount, a link, yes/no, or plain text."""
    if value is None or value == "":
        return Markup('<span class="none">—</span>')
    if isinstance(value, bool):
        return Markup('<span class="flag yes">yes</span>') if value else Markup('<span class="flag">no</span>')
    if name in ("status", "disposition", "bucket", "outcome") and isinstance(value, str):
        tone = STATUS_TONES.get(value, "info")
        return Markup(f'<span class="badge {tone}">{escape(value.replace("_", " "))}</span>')
    if is_money(name, value):
        return Markup(f'<span class="num">{escape(money(value))}</span>')
    if isinstance(value, (int, float)):
        return Markup(f'<span class="num">{escape(str(value))}</span>')
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return Markup(", ").join(cell(name, v, linker) for v in value) if value else Markup('<span class="none">—</span>')
        return Markup(f'<span class="muted">{len(value)} rows</span>')
    if isinstance(value, dict):
        return Markup(", ").join(Markup(f"{escape(humanize(k))}: ") + cell(k, v, linker) for k, v in value.items())
    text = str(value)
    href = linker.href(name, text) if linker else None
    if href:
        return Markup(f'<a href="{escape(href)}">{escape(text)}</a>')
    if "\n" in text:
        return Markup(f'<span class="pre">{escape(text)}</span>')
    return Markup(escape(text))


def columns_of(items: list[dict[str, Any]], limit: int = 10) -> list[str]:
    """The scalar columns worth a table: in the ERP's order, long free text and bulky ones last/out."""
    seen: list[str] = []
    for item in items[:50]:
        for k, v in item.items():
            if k not in seen and not isinstance(v, (dict, list)):
                seen.append(k)
    noisy = {"thread_id", "to", "cc", "created_by", "in_reply_to", "related_type", "related_id", "disposition_ref", "note",
             "decision_note", "body", "description", "requested_by", "decided_by", "entered_by", "validated_on"}
    keep = [k for k in seen if k not in noisy]
    return (keep + [k for k in seen if k in noisy])[:limit]


def right_aligned(name: str, items: list[dict[str, Any]]) -> bool:
    """A numeric column (money or counts) is right-aligned in a table."""
    values = [i.get(name) for i in items if i.get(name) is not None]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def doc_template(idx: ApiIndex, collection: str) -> str | None:
    """The path template of one document of `collection`: its GET route, else its actions' prefix."""
    detail = idx.detail_of(collection)
    if detail is not None:
        return detail.path
    for op in idx.ops.values():
        rest = op.path[len(collection):]
        if op.method != "GET" and op.path.startswith(collection + "/{") and rest.count("/") >= 1:
            return collection + "/" + rest.split("/")[1]
    return None
