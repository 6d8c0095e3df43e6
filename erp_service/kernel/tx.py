"""`Tx`: the unit of work a service function receives — one actor, one business date, one
transaction — with the helpers every domain uses to read, write, number documents, change
status and record before/after images for the audit log.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Column, Table, func, select, update
from sqlalchemy.engine import Connection

from . import prepared
from .db import driver_of
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
    row = _first(conn, ot.table, {pk.name: object_id})
    if row is None:
        return None
    image = _row_dict(row)
    for child, fk in ot.children:
        rows = _rows(conn, child, {fk: object_id}, list(child.primary_key.columns))
        image[child.name] = [_row_dict(r) for r in rows]
    return image


def _dicts(result: Any) -> list[dict[str, Any]]:
    # zip with the result's keys: the same dicts as dict(RowMapping), without a mapping per row.
    keys = tuple(result.keys())
    return [dict(zip(keys, r, strict=True)) for r in result.all()]   # all(): one fetchall, not a fetch per row


def _first(conn: Connection, table: Table, where: dict[str, Any]) -> dict[str, Any] | None:
    """First row of `table` matching the equality filters (prepared when it can be)."""
    if prepared.plain(where, filters=True):
        p = prepared.select_rows(conn, table, where, None)
        row = p.run(conn, {f"w_{k}": v for k, v in where.items()}).fetchone()
        return dict(zip(p.keys, row, strict=True)) if row is not None else None
    stmt = select(table)
    for k, v in where.items():
        stmt = stmt.where(table.c[k] == v)
    found = conn.execute(stmt).first()
    return dict(found._mapping) if found is not None else None


def _rows(conn: Connection, table: Table, where: dict[str, Any], order_by: list[Any]) -> list[dict[str, Any]]:
    """All rows of `table` matching the equality filters in `order_by` order (columns of `table`)."""
    if prepared.plain(where, filters=True):
        p = prepared.select_rows(conn, table, where, order_by)
        keys = p.keys
        return [dict(zip(keys, r, strict=True)) for r in p.run(conn, {f"w_{k}": v for k, v in where.items()})]
    stmt = select(table)
    for k, v in where.items():
        stmt = stmt.where(table.c[k] == v)
    return _dicts(conn.execute(stmt.order_by(*order_by)))


# Unit of work ---------------------------------------------------------------------------------

# Statements on the kernel's own tables (TEXT and INTEGER columns: nothing for SQLAlchemy to
# convert) go to the driver as fixed SQL, kept prepared by sqlite3, instead of a SQLAlchemy
# statement built, keyed and looked up for every document a request numbers or moves.
_SEQ_SELECT = f"SELECT next FROM {seq.name} WHERE prefix = ?"
_SEQ_INSERT = f"INSERT INTO {seq.name} (prefix, next) VALUES (?, ?)"
_SEQ_UPDATE = f"UPDATE {seq.name} SET next = ? WHERE prefix = ?"
_HISTORY_INSERT = (f"INSERT INTO {status_history.name} (doc_type, doc_id, from_status, to_status, on_date, "
                   f"by_user, reason) VALUES (?, ?, ?, ?, ?, ?, ?)")

@dataclass
class Tx:
    """What a service function works with. Never commits: the pipeline owns the transaction."""

    conn: Connection
    actor: Actor
    business_date: str
    touched: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    primary: tuple[str, str] | None = None

    # --- reading
    def one(self, stmt, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """First row of `stmt` (with bound `params`, for a statement built once) as a dict, or None."""
        if params:
            rows = prepared.fixed_rows(self.conn, stmt, params)
            if rows is not None:
                return rows[0] if rows else None
        else:
            run = prepared.keyed_cursor(self.conn, stmt)
            if run is not None:
                cursor, shape = run
                found = cursor.fetchone()
                cursor.close()
                return prepared.dict_rows([found], shape.keys, shape.result_processors)[0] if found else None
        row = self.conn.execute(stmt, params).first()
        return dict(row._mapping) if row is not None else None

    def all(self, stmt, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """All rows of `stmt` (with bound `params`, for a statement built once) as dicts. A
        statement built once runs on the driver from its rendered shape (`prepared.fixed_rows`), one
        built for this call from the shape its cache key names (`prepared.keyed_cursor`)."""
        if params:
            rows = prepared.fixed_rows(self.conn, stmt, params)
            if rows is not None:
                return rows
        else:
            run = prepared.keyed_cursor(self.conn, stmt)
            if run is not None:
                cursor, shape = run
                return prepared.dict_rows(cursor.fetchall(), shape.keys, shape.result_processors)
        return _dicts(self.conn.execute(stmt, params))

    def scalar(self, stmt) -> Any:
        """The single value of `stmt`."""
        run = prepared.keyed_cursor(self.conn, stmt)
        if run is not None:
            cursor, shape = run
            found = cursor.fetchone()
            cursor.close()
            if found is None:
                return None
            proc = shape.result_processors[0] if shape.result_processors else None
            return proc(found[0]) if proc else found[0]
        return self.conn.execute(stmt).scalar()

    def get(self, table: Table, ident: Any, what: str | None = None) -> dict[str, Any]:
        """The row with primary key `ident`, or a 404 problem naming `what`."""
        pk = list(table.primary_key.columns)[0]
        row = _first(self.conn, table, {pk.name: ident})
        if row is None:
            raise not_found(what or table.name, ident)
        return row

    def find(self, table: Table, **where: Any) -> dict[str, Any] | None:
        """First row matching the equality filters, or None."""
        return _first(self.conn, table, where)

    def rows(self, table: Table, order_by: Any = None, **where: Any) -> list[dict[str, Any]]:
        """All rows matching the equality filters, in primary-key order unless told otherwise."""
        order = list(order_by) if isinstance(order_by, (list, tuple)) else \
            [order_by] if order_by is not None else list(table.primary_key.columns)
        if all(isinstance(c, Column) and c.table is table for c in order):
            return _rows(self.conn, table, where, order)
        stmt = select(table)
        for k, v in where.items():
            stmt = stmt.where(table.c[k] == v)
        return self.all(stmt.order_by(*order))

    # --- writing
    def next_id(self, prefix: str) -> str:
        """The next document id for `prefix`, e.g. ``APINV-10001``."""
        driver = driver_of(self.conn)
        row = driver.execute(_SEQ_SELECT, (prefix,)).fetchone()
        if row is None:
            n = 10001
            driver.execute(_SEQ_INSERT, (prefix, n + 1))
        else:
            n = row[0]
            driver.execute(_SEQ_UPDATE, (n + 1, prefix))
        return f"{prefix}-{n}"

    def insert(self, table: Table, **values: Any) -> dict[str, Any]:
        """Insert one row and return it as written (with its autoincrement key if any)."""
        pkcols = list(table.primary_key.columns)
        if prepared.plain(values, filters=False) and prepared.has_only_scalar_defaults(table):
            p, params = prepared.insert_row(self.conn, table, values)
            cur = p.run(self.conn, params)
            if len(pkcols) == 1 and pkcols[0].name not in values:
                # What SQLAlchemy's inserted_primary_key holds: the rowid for the autoincrement key.
                key = cur.lastrowid if table.autoincrement_column is pkcols[0] else None
                values = {**values, pkcols[0].name: key}
            return dict(values)
        result = self.conn.execute(table.insert().values(**values))
        if len(pkcols) == 1 and pkcols[0].name not in values and result.inserted_primary_key:
            values = {**values, pkcols[0].name: result.inserted_primary_key[0]}
        return dict(values)

    def create_doc(self, object_type: str, table: Table, prefix: str, status: str, **values: Any) -> dict[str, Any]:
        """Create a numbered document in `status`, record its first history row, mark it created."""
        doc_id = values.pop("id", None) or self.next_id(prefix)
        row = self.insert(table, id=doc_id, status=status, created_by=self.actor.user_id,
                          created_on=self.business_date, created_wall=None, **values)
        driver_of(self.conn).execute(_HISTORY_INSERT, (object_type, doc_id, None, status, self.business_date,
                                                      self.actor.user_id, "created"))
        self.created(object_type, doc_id)
        return row

    def update(self, table: Table, ident: Any, **values: Any) -> None:
        """Update one row by primary key (call `touch` first for audited objects)."""
        if values and ident is not None and prepared.plain(values, filters=False) \
                and prepared.has_only_scalar_defaults(table):
            params = {f"v_{k}": v for k, v in values.items()}
            params["w_pk"] = ident
            prepared.update_by_key(self.conn, table, values).run(self.conn, params)
            return
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
        driver_of(self.conn).execute(_HISTORY_INSERT, (object_type, ident, row["status"], to, self.business_date,
                                                      self.actor.user_id, reason))
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
        if prepared.plain(where, filters=True):
            p = prepared.count_rows(self.conn, table, where)
            return int(p.run(self.conn, {f"w_{k}": v for k, v in where.items()}).fetchone()[0] or 0)
        stmt = select(func.count()).select_from(table)
        for k, v in where.items():
            stmt = stmt.where(table.c[k] == v)
        return int(self.scalar(stmt) or 0)

