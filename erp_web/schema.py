"""What the UI knows of the ERP: its OpenAPI document, indexed into lists, documents and actions.

Nothing here is written per route: the list pages, the document pages' action buttons and every
write form are derived from the schema the ERP publishes at `/openapi.json`, so a new route of
the ERP shows up in the UI without a change here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_PARAM = re.compile(r"\{([a-z_]+)\}")
# Words the schema spells in lower case that a clerk reads in capitals.
_UPPER = {"ap": "AP", "ar": "AR", "po": "PO", "mrp": "MRP", "id": "ID", "grni": "GRNI", "bom": "BOM", "so": "SO", "je": "JE"}


def humanize(name: str) -> str:
    """`ap-invoices` / `due_before` -> `AP invoices` / `Due before`."""
    words = [w for w in re.split(r"[-_/ ]+", name) if w]
    out = [_UPPER.get(w.lower(), w) for w in words]
    if out and out[0] == out[0].lower():
        out[0] = out[0].capitalize()
    return " ".join(out)


@dataclass(frozen=True)
class Field:
    """One input of a write form, from one property of the request body's schema."""

    name: str
    label: str
    kind: str  # string | text | number | integer | boolean | enum | date | list | rows | json
    required: bool
    help: str = ""
    default: Any = None
    options: tuple[str, ...] = ()
    columns: tuple[Field, ...] = ()  # for `rows`: the fields of one row (an array of objects)


@dataclass(frozen=True)
class Operation:
    """One route of the agent API."""

    method: str
    path: str  # the template, e.g. /payment-runs/{run_id}/submit
    op_id: str  # the action code the audit records, e.g. pay.submit
    summary: str
    tag: str
    query: tuple[Field, ...] = ()
    body: tuple[Field, ...] = ()
    has_body: bool = False
    body_required: bool = False

    @property
    def path_params(self) -> list[str]:
        return _PARAM.findall(self.path)

    @property
    def verb(self) -> str:
        """The last word of the action code (`pay.submit` -> `submit`)."""
        return self.op_id.rsplit(".", 1)[-1]

    @property
    def title(self) -> str:
        if self.summary:
            return self.summary
        return humanize(self.op_id.replace(".", " "))

    def fill(self, values: dict[str, str]) -> str:
        """The concrete path with `values` for its parameters (URL-quoted)."""
        from urllib.parse import quote

        return _PARAM.sub(lambda m: quote(str(values.get(m.group(1), "")), safe=""), self.path)


@dataclass
class ApiIndex:
    """The operations of the agent API, found by what the UI needs."""

    ops: dict[str, Operation] = field(default_factory=dict)  # by op_id

    @classmethod
    def from_openapi(cls, doc: dict[str, Any]) -> ApiIndex:
        """Index an OpenAPI 3.1 document (bb-erp's `/openapi.json`)."""
        schemas = (doc.get("components") or {}).get("schemas") or {}
        index = cls()
        for path, item in sorted((doc.get("paths") or {}).items()):
            for method, op in item.items():
                if method.upper() not in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                    continue
                op_id = str(op.get("operationId") or f"{method}:{path}")
                query = tuple(
                    _field(p["name"], p.get("schema") or {}, bool(p.get("required")), schemas, p.get("description", ""))
                    for p in op.get("parameters") or [] if p.get("in") == "query" and p["name"] not in ("offset", "limit")
                )
                body_fields: tuple[Field, ...] = ()
                has_body, body_required = False, False
                rb = op.get("requestBody")
                if rb:
                    has_body, body_required = True, bool(rb.get("required"))
                    schema = _resolve(((rb.get("content") or {}).get("application/json") or {}).get("schema") or {}, schemas)
                    body_fields = _object_fields(schema, schemas)
                index.ops[op_id] = Operation(
                    method=method.upper(), path=path, op_id=op_id, summary=str(op.get("summary") or ""),
                    tag=str((op.get("tags") or ["other"])[0]), query=query, body=body_fields,
                    has_body=has_body, body_required=body_required,
                )
        return index

    def get(self, op_id: str) -> Operation | None:
        return self.ops.get(op_id)

    def find(self, method: str, path: str) -> Operation | None:
        """The operation of a route template."""
        for op in self.ops.values():
            if op.method == method and op.path == path:
                return op
        return None

    def lists(self) -> list[Operation]:
        """GET routes answering a page of items (no parameter in the path)."""
        return [op for op in self.ops.values() if op.method == "GET" and "{" not in op.path and op.path not in ("/whoami", "/openapi.json")]

    def detail_of(self, collection: str) -> Operation | None:
        """`GET /things/{id}` for the collection `/things`."""
        for op in self.ops.values():
            if op.method == "GET" and op.path.startswith(collection + "/{") and op.path.count("/") == collection.count("/") + 1:
                return op
        return None

    def actions_on(self, doc_path: str) -> list[Operation]:
        """Write routes on one document (`/payment-runs/{run_id}` -> submit, cancel, add, ...)."""
        out = [op for op in self.ops.values() if op.method != "GET" and (op.path == doc_path or op.path.startswith(doc_path + "/"))]
        return sorted(out, key=lambda o: (o.path.count("{"), o.path))

    def creates_in(self, collection: str) -> Operation | None:
        """`POST /things`: the form that makes a new document of the collection."""
        return self.find("POST", collection)


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """Follow `$ref`, and unwrap `anyOf: [X, null]` to X."""
    seen = 0
    while seen < 10:
        seen += 1
        if "$ref" in schema:
            schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
            continue
        alts = [a for a in schema.get("anyOf") or [] if a.get("type") != "null"]
        if "anyOf" in schema and len(alts) >= 1:
            extra = {k: v for k, v in schema.items() if k != "anyOf"}
            schema = {**alts[0], **extra}
            continue
        break
    return schema


def _nullable(schema: dict[str, Any]) -> bool:
    return any(a.get("type") == "null" for a in schema.get("anyOf") or [])


def _object_fields(schema: dict[str, Any], schemas: dict[str, Any]) -> tuple[Field, ...]:
    required = set(schema.get("required") or [])
    return tuple(
        _field(name, prop, name in required, schemas, prop.get("description", ""))
        for name, prop in (schema.get("properties") or {}).items()
    )


def _field(name: str, raw: dict[str, Any], required: bool, schemas: dict[str, Any], help_text: str = "") -> Field:
    schema = _resolve(raw, schemas)
    label = str(raw.get("title") or schema.get("title") or humanize(name))
    default = raw.get("default", schema.get("default"))
    help_text = help_text or str(raw.get("description") or schema.get("description") or "")
    typ = schema.get("type")
    if "enum" in schema:
        return Field(name, label, "enum", required, help_text, default, tuple(str(v) for v in schema["enum"]))
    if typ == "boolean":
        return Field(name, label, "boolean", required, help_text, default)
    if typ in ("number", "integer"):
        return Field(name, label, typ, required, help_text, default)
    if typ == "string" and schema.get("format") == "date":
        return Field(name, label, "date", required, help_text, default)
    if typ == "string":
        long = int(schema.get("maxLength") or 0) > 200 or name in ("note", "body", "reason", "memo", "purpose", "text", "answer")
        return Field(name, label, "text" if long else "string", required, help_text, default)
    if typ == "array":
        items = _resolve(schema.get("items") or {}, schemas)
        if items.get("type") == "object" or "properties" in items:
            return Field(name, label, "rows", required, help_text, default, columns=_object_fields(items, schemas))
        return Field(name, label, "list", required, help_text, default)
    return Field(name, label, "json", required, help_text, default)
