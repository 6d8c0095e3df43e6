"""Prepared statements for `Tx`'s table helpers: SQLAlchemy compiles each shape once, the
driver runs it.

`Tx.get`, `find`, `rows`, `count`, `insert`, `update` and the audit snapshots build the same few
statements over and over (``select(t).where(t.c.id == ?)``, an insert of the same columns...).
Through SQLAlchemy every call built the statement, generated its cache key, looked up the
compiled form and wrapped cursor and rows: most of a request's time. Here a *shape* (the
statement's kind, its table and the names of the columns it binds) is compiled once by
SQLAlchemy's own compiler for the connection's dialect; a call binds its values through the
same bind processors SQLAlchemy would apply and runs the compiled SQL on the driver connection,
inside the caller's transaction. Same SQL, same values, same rows: only the per-call work is
gone.

A call that has no shape falls back to SQLAlchemy (the caller checks `plain`): a value that is
a SQL expression, or ``None`` in a filter (SQLAlchemy reads ``col == None`` as ``IS NULL``).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, bindparam, func, select, update
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.dml import Insert, Update
from sqlalchemy.sql.selectable import Select

from .db import driver_of


@dataclass(frozen=True)
class Prepared:
    """One compiled shape: SQL text, the bind names in the order of its ``?``, one bind
    processor (or None) per name, and the keys of the rows it returns."""

    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    keys: tuple[str, ...]

    def run(self, conn: Connection, params: dict[str, Any]) -> sqlite3.Cursor:
        """Execute with `params` (by bind name) on `conn`'s driver connection."""
        values = [params[n] if p is None else p(params[n]) for n, p in zip(self.names, self.processors, strict=True)]
        return driver_of(conn).execute(self.sql, values)


_SHAPES: dict[tuple[Any, ...], Prepared] = {}


def _compile(stmt: Select | Insert | Update, dialect: Dialect, keys: Sequence[str] = ()) -> Prepared:
    compiled = stmt.compile(dialect=dialect)
    names = tuple(compiled.positiontup or ())
    processors = tuple(compiled.binds[n].type.dialect_impl(dialect).bind_processor(dialect) for n in names)
    return Prepared(compiled.string, names, processors, tuple(keys))


def plain(values: dict[str, Any], *, filters: bool) -> bool:
    """True when every value can be bound as it is: no SQL expressions, and (in filters) no None."""
    return not any(isinstance(v, ClauseElement) or (filters and v is None) for v in values.values())


def _where(table: Table, keys: Sequence[str]) -> list[Any]:
    return [table.c[k] == bindparam(f"w_{k}", type_=table.c[k].type) for k in keys]


def select_rows(conn: Connection, table: Table, where: dict[str, Any], order_by: Sequence[Any] | None) -> Prepared:
    """``SELECT * FROM table WHERE k = :k AND ... [ORDER BY ...]``; `order_by` must be columns of
    `table` (the shape is keyed by their names)."""
    order = tuple(c.name for c in order_by) if order_by is not None else None
    shape = ("select", table.name, tuple(where), order)
    prepared = _SHAPES.get(shape)
    if prepared is None:
        stmt = select(table).where(*_where(table, tuple(where)))
        if order_by is not None:
            stmt = stmt.order_by(*order_by)
        prepared = _SHAPES[shape] = _compile(stmt, conn.dialect, [c.name for c in table.columns])
    return prepared


def count_rows(conn: Connection, table: Table, where: dict[str, Any]) -> Prepared:
    """``SELECT count(*) FROM table WHERE k = :k AND ...``."""
    shape = ("count", table.name, tuple(where))
    prepared = _SHAPES.get(shape)
    if prepared is None:
        stmt = select(func.count()).select_from(table).where(*_where(table, tuple(where)))
        prepared = _SHAPES[shape] = _compile(stmt, conn.dialect)
    return prepared


def insert_row(conn: Connection, table: Table, values: dict[str, Any]) -> tuple[Prepared, dict[str, Any]]:
    """The insert of `values`' columns plus every other column with a default (as SQLAlchemy
    would add them), and the parameters to bind (defaults filled in). Only for a table whose
    defaults are all plain values (`has_only_scalar_defaults`)."""
    defaults = _defaults(table)
    params = {f"v_{k}": v for k, v in values.items()}
    for name, value in defaults.items():
        if name not in values:
            params[f"v_{name}"] = value
    shape = ("insert", table.name, tuple(params))
    prepared = _SHAPES.get(shape)
    if prepared is None:
        cols = [k[2:] for k in params]
        stmt = table.insert().values({c: bindparam(f"v_{c}", type_=table.c[c].type) for c in cols})
        prepared = _SHAPES[shape] = _compile(stmt, conn.dialect)
    return prepared, params


def update_by_key(conn: Connection, table: Table, values: dict[str, Any]) -> Prepared:
    """``UPDATE table SET k = :k, ... WHERE <first primary-key column> = :w_pk``."""
    shape = ("update", table.name, tuple(values))
    prepared = _SHAPES.get(shape)
    if prepared is None:
        pk = list(table.primary_key.columns)[0]
        stmt = (update(table).where(pk == bindparam("w_pk", type_=pk.type))
                .values({k: bindparam(f"v_{k}", type_=table.c[k].type) for k in values}))
        prepared = _SHAPES[shape] = _compile(stmt, conn.dialect)
    return prepared


_DEFAULTS: dict[str, dict[str, Any]] = {}


def _defaults(table: Table) -> dict[str, Any]:
    """Column name -> default value, for the columns of `table` that have one."""
    found = _DEFAULTS.get(table.name)
    if found is None:
        found = {c.name: getattr(c.default, "arg", None) for c in table.columns
                 if c.default is not None and c.default.is_scalar}
        _DEFAULTS[table.name] = found
    return found


def has_only_scalar_defaults(table: Table) -> bool:
    """True when every column default of `table` is a plain value and none changes on update
    (what `insert_row` and `update_by_key` can reproduce)."""
    return all((c.default is None or c.default.is_scalar) and c.onupdate is None for c in table.columns)
