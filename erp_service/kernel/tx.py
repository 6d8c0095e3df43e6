"""`Tx`: the unit of work a service function receives — one actor, one business date, one
transaction — with the helpers every domain uses to read, write, number documents, change
status and record before/after images for the audit log.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Table, func, select, update
from sqlalchemy.engine import Connection

from .errors import not_found, refused
from .identity import Actor
from .schema import is_volatile_column, seq, status_history

# Object registry ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ObjectType:
    """How to snapshot one kind of object for the audit log: its head table and child tables."""

    name: str
    table: Table
    children: tuple[tuple[Table, str], ...] = ()   # (child table, column pointing at the head id)


OBJECTS: dict[str, ObjectType] = {}


def register_object(name: str, table: Table, children: Iterable[tuple[Table, str]] = ()) -> None:
    """Declare an object type so writes to it carry before/after images."""
    OBJECTS[name] = ObjectType(name, table, tuple(children))


def _row_dict(row: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(row).items() if not is_volatile_column(k)}


def snapshot(conn: Connection, object_type: str, object_id: Any) -> dict[str, Any] | None:
    """The current image of one object (head row plus child rows), or None if absent."""
    ot = OBJECTS.get(object_type)
    if ot is None:
        return None
    pk = list(ot.table.primary_key.columns)[0]
    row = conn.execute(select(ot.table).where(pk == object_id)).mappings().first()
    if row is None:
        return None
    image = _row_dict(row)
    for child, fk in ot.children:
        pkcols = list(child.primary_key.columns)
        rows = conn.execute(select(child).where(child.c[fk] == object_id).order_by(*pkcols)).mappings()
        image[child.name] = [_row_dict(r) for r in rows]
    return image


# Unit of work ---------------------------------------------------------------------------------

@dataclass
class Tx:
    """What a service function works with. Never commits: the pipeline owns the transaction."""

    conn: Connection
    actor: Actor
    business_date: str
    touched: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    primary: tuple[str, str] | None = None

    # --- reading
    def one(self, stmt) -> dict[str, Any] | None:
        """First row of `stmt` as a dict, or None."""
        row = self.conn.execute(stmt).mappings().first()
        return dict(row) if row is not None else None

    def all(self, stmt) -> list[dict[str, Any]]:
        """All rows of `stmt` as dicts."""
        return [dict(r) for r in self.conn.execute(stmt).mappings()]

    def scalar(self, stmt) -> Any:
        """The single value of `stmt`."""
        return self.conn.execute(stmt).scalar()

    def get(self, table: Table, ident: Any, what: str | None = None) -> dict[str, Any]:
        """The row with primary key `ident`, or a 404 problem naming `what`."""
        pk = list(table.primary_key.columns)[0]
        row = self.one(select(table).where(pk == ident))
        if row is None:
            raise not_found(what or table.name, ident)
        return row

    def find(self, table: Table, **where: Any) -> dict[str, Any] | None:
        """First row matching the equality filters, or None."""
        stmt = select(table)
        for k, v in where.items():
            stmt = stmt.where(table.c[k] == v)
        return self.one(stmt)

    def rows(self, table: Table, order_by: Any = None, **where: Any) -> list[dict[str, Any]]:
        """All rows matching the equality filters, in primary-key order unless told otherwise."""
        stmt = select(table)
        for k, v in where.items():
            stmt = stmt.where(table.c[k] == v)
        stmt = stmt.order_by(*(order_by if isinstance(order_by, (list, tuple)) else
                               [order_by] if order_by is not None else list(table.primary_key.columns)))
        return self.all(stmt)

    # --- writing
    def next_id(self, prefix: str) -> str:
        """The next document id for `prefix`, e.g. ``APINV-10001``."""
        n = self.scalar(select(seq.c.next).where(seq.c.prefix == prefix))
        if n is None:
            n = 10001
            self.conn.execute(seq.insert().values(prefix=prefix, next=n + 1))
        else:
            self.conn.execute(update(seq).where(seq.c.prefix == prefix).values(next=n + 1))
        return f"{prefix}-{n}"

    def insert(self, table: Table, **values: Any) -> dict[str, Any]:
        """Insert one row and return it as written (with its autoincrement key if any)."""
        result = self.conn.execute(table.insert().values(**values))
        pkcols = list(table.primary_key.columns)
        if len(pkcols) == 1 and pkcols[0].name not in values and result.inserted_primary_key:
            values = {**values, pkcols[0].name: result.inserted_primary_key[0]}
        return dict(values)

    def create_doc(self, object_type: str, table: Table, prefix: str, status: str, **values: Any) -> dict[str, Any]:
        """Create a numbered document in `status`, record its first history row, mark it created."""
        doc_id = values.pop("id", None) or self.next_id(prefix)
        row = self.insert(table, id=doc_id, status=status, created_by=self.actor.user_id,
                          created_on=self.business_date, created_wall=None, **values)
        self.conn.execute(status_history.insert().values(
            doc_type=object_type, doc_id=doc_id, from_status=None, to_status=status,
            on_date=self.business_date, by_user=self.actor.user_id, reason="created"))
        self.created(object_type, doc_id)
        return row

    def update(self, table: Table, ident: Any, **values: Any) -> None:
        """Update one row by primary key (call `touch` first for audited objects)."""
        pk = list(table.primary_key.columns)[0]
        self.conn.execute(update(table).where(pk == ident).values(**values))

    def set_status(self, object_type: str, table: Table, ident: Any, to: str,
                   reason: str | None = None, *, allowed_from: Iterable[str] | None = None,
                   **values: Any) -> dict[str, Any]:
        """Move a document to status `to` (refused with bad_status unless its status is in
        `allowed_from`), recording the change and its reason in status_history."""
        row = self.get(table, ident, object_type)
        if allowed_from is not None and row["status"] not in set(allowed_from):
            raise refused("bad_status",
                          f"{object_type} {ident} is {row['status']}; this action needs it to be "
                          f"{' or '.join(sorted(set(allowed_from)))}.",
                          status=row["status"])
        self.touch(object_type, ident)
        self.update(table, ident, status=to, **values)
        self.conn.execute(status_history.insert().values(
            doc_type=object_type, doc_id=ident, from_status=row["status"], to_status=to,
            on_date=self.business_date, by_user=self.actor.user_id, reason=reason))
        return {**row, **values, "status": to}

    # --- audit images
    def touch(self, object_type: str, ident: Any) -> None:
        """Remember the before-image of an object about to change (first touch wins)."""
        key = f"{object_type}:{ident}"
        if key not in self.touched:
            self.touched[key] = snapshot(self.conn, object_type, ident)
        if self.primary is None:
            self.primary = (object_type, str(ident))

    def created(self, object_type: str, ident: Any) -> None:
        """Mark an object as created by this unit of work (before-image: none)."""
        key = f"{object_type}:{ident}"
        self.touched.setdefault(key, None)
        if self.primary is None:
            self.primary = (object_type, str(ident))

    def after_images(self) -> dict[str, Any]:
        """After-images of everything touched, keyed like the before-images."""
        out: dict[str, Any] = {}
        for key in self.touched:
            otype, _, ident = key.partition(":")
            out[key] = snapshot(self.conn, otype, ident)
        return out

    def history(self, object_type: str, ident: Any) -> list[dict[str, Any]]:
        """The status history of a document, oldest first."""
        return self.all(select(status_history.c.from_status, status_history.c.to_status,
                               status_history.c.on_date, status_history.c.by_user, status_history.c.reason)
                        .where(status_history.c.doc_type == object_type, status_history.c.doc_id == str(ident))
                        .order_by(status_history.c.id))

    def count(self, table: Table, **where: Any) -> int:
        """Number of rows matching the equality filters."""
        stmt = select(func.count()).select_from(table)
        for k, v in where.items():
            stmt = stmt.where(table.c[k] == v)
        return int(self.scalar(stmt) or 0)

