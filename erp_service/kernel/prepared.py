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


# Statements built once ------------------------------------------------------------------------
# A module-level statement with bound parameters (``tx.all(STMT, {"ids": [...]})``) was still
# run through SQLAlchemy each time: its cache key generated, and for expanding parameters the
# ``IN (...)`` list re-rendered and every value re-bound (most of a list read's SQL time). Its
# SQL is rendered once per shape here — the statement object and, for each expanding
# parameter, the length of its list — by SQLAlchemy's own `construct_expanded_state`; a call
# only places the values and runs the SQL on the driver.

_Slot = tuple[str, int | None] | tuple[None, Any]   # (param name, index in its list or None) or (None, constant)


@dataclass(frozen=True)
class _Fixed:
    sql: str
    slots: tuple[_Slot, ...]
    keys: tuple[str, ...]
    result_processors: tuple[Callable[[Any], Any] | None, ...]


class _Probe:
    """Stands for one bound value while a shape is rendered (found again by identity)."""

    __slots__ = ("name", "index")

    def __init__(self, name: str, index: int | None) -> None:
        self.name, self.index = name, index


_FIXED: dict[tuple[Any, ...], tuple[Any, _Fixed | None]] = {}   # key -> (statement, shape)
FIXED_CACHE_MAX = 512


def _fixed_shape(conn: Connection, stmt: Select, params: dict[str, Any]) -> _Fixed | None:
    """The rendered shape of `stmt` for `params`' list lengths, or None when the driver cannot
    run it as SQLAlchemy would (a bind processor to apply, a literal rendered into the SQL, an
    unknown parameter, a list that is not a list or tuple)."""
    compiled = stmt.compile(dialect=conn.dialect)
    binds = compiled.binds
    if any(n not in binds for n in params) or compiled.positiontup is None:
        return None
    if any(b.literal_execute or b.type.dialect_impl(conn.dialect).bind_processor(conn.dialect) is not None
           for b in binds.values()):
        return None   # a value SQLAlchemy would convert, or render into the SQL text
    probes: dict[str, Any] = {}
    for name, value in params.items():
        if binds[name].expanding:
            if not isinstance(value, (list, tuple)):
                return None
            probes[name] = [_Probe(name, i) for i in range(len(value))]
        else:
            probes[name] = _Probe(name, None)
    state = compiled.construct_expanded_state(probes)
    if state.processors:
        return None
    slots: list[_Slot] = []
    for pos in state.positiontup or ():
        value = state.parameters[pos]
        slots.append((value.name, value.index) if isinstance(value, _Probe) else (None, value))
    entries = compiled._result_columns
    return _Fixed(state.statement, tuple(slots), tuple(e.keyname for e in entries),
                  tuple(e.type._cached_result_processor(conn.dialect, None) for e in entries))


def _fixed_run(conn: Connection, stmt: Any, params: dict[str, Any]) -> tuple[list[Any], _Fixed] | None:
    if not isinstance(stmt, Select):
        return None
    try:
        key = (id(stmt), tuple((k, len(v) if isinstance(v, (list, tuple)) else None) for k, v in params.items()))
    except TypeError:
        return None
    cached = _FIXED.get(key)
    if cached is not None and cached[0] is stmt:
        fixed = cached[1]
    elif cached is None and len(_FIXED) >= FIXED_CACHE_MAX:
        return None   # full: rendering every call would cost more than SQLAlchemy's own cache
    else:
        fixed = _fixed_shape(conn, stmt, params)
        _FIXED[key] = (stmt, fixed)   # the statement is kept alive: its id() is not reused
    if fixed is None:
        return None
    values: list[Any] = []
    for name, item in fixed.slots:
        if name is None:
            values.append(item)             # a constant of the statement
        elif item is None:
            values.append(params[name])
        else:
            values.append(params[name][item])
    return driver_of(conn).execute(fixed.sql, values).fetchall(), fixed


def fixed_rows(conn: Connection, stmt: Any, params: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The rows of a select built once, with `params` bound, as dicts (what `Tx.all` returns),
    run on the driver from its rendered shape; None when it has no shape (run it through
    SQLAlchemy then)."""
    run = _fixed_run(conn, stmt, params)
    return dict_rows(run[0], run[1].keys, run[1].result_processors) if run is not None else None


def fixed_tuples(conn: Connection, stmt: Any, params: dict[str, Any]) -> list[tuple[Any, ...]] | None:
    """`fixed_rows` as value tuples in the statement's column order (what iterating
    SQLAlchemy's result gives)."""
    run = _fixed_run(conn, stmt, params)
    if run is None:
        return None
    rows, procs = run[0], run[1].result_processors
    if any(procs):
        return [tuple(p(v) if p else v for p, v in zip(procs, r, strict=True)) for r in rows]
    return [tuple(r) for r in rows]


# Statements built per call --------------------------------------------------------------------
# A select built for one call (a page with its filters, a view's lookup) is found by SQLAlchemy's
# own cache key, as SQLAlchemy's compiled cache finds it; its values are the ones that key
# extracted, placed by the compiled form's own `construct_params`. What is left out is the rest of
# SQLAlchemy's execution (context, cursor result, a row object per row).

@dataclass(frozen=True)
class _Keyed:
    compiled: Any
    names: tuple[str, ...]
    keys: tuple[str, ...]
    result_processors: tuple[Callable[[Any], Any] | None, ...]


_KEYED: dict[Any, _Keyed | None] = {}
KEYED_CACHE_MAX = 2048


def _keyed_shape(conn: Connection, stmt: Select, cache_key: Any) -> _Keyed | None:
    dialect = conn.dialect
    compiled = dialect.statement_compiler(dialect, stmt, cache_key=cache_key)
    if compiled.positiontup is None or any(
            b.expanding or b.literal_execute or b.type.dialect_impl(dialect).bind_processor(dialect) is not None
            for b in compiled.binds.values()):
        return None   # a list to expand, a literal in the text or a value to convert: SQLAlchemy's job
    entries = compiled._result_columns
    return _Keyed(compiled, tuple(compiled.positiontup), tuple(e.keyname for e in entries),
                  tuple(e.type._cached_result_processor(dialect, None) for e in entries))


def keyed_cursor(conn: Connection, stmt: Any) -> tuple[sqlite3.Cursor, _Keyed] | None:
    """`stmt` (a select without separately bound parameters) run on the driver from the shape
    its cache key names, with the cursor and the shape (for `dict_rows`); None when it has no
    shape (run it through SQLAlchemy then)."""
    if not isinstance(stmt, Select):
        return None
    cache_key = stmt._generate_cache_key()
    if cache_key is None:
        return None
    shape = _KEYED.get(cache_key.key, _MISSING)
    if shape is _MISSING:
        if len(_KEYED) >= KEYED_CACHE_MAX:
            return None
        shape = _KEYED[cache_key.key] = _keyed_shape(conn, stmt, cache_key)
    if shape is None:
        return None
    assert isinstance(shape, _Keyed)
    params = shape.compiled.construct_params(extracted_parameters=cache_key.bindparams, escape_names=False)
    return driver_of(conn).execute(shape.compiled.string, [params[n] for n in shape.names]), shape


_MISSING: Any = object()


def dict_rows(rows: Sequence[Sequence[Any]], keys: tuple[str, ...],
              procs: tuple[Callable[[Any], Any] | None, ...]) -> list[dict[str, Any]]:
    """Driver rows as dicts keyed like SQLAlchemy's mappings, values through the result
    processors SQLAlchemy would apply."""
    if any(procs):
        return [dict(zip(keys, (p(v) if p else v for p, v in zip(procs, r, strict=True)), strict=True))
                for r in rows]
    return [dict(zip(keys, r, strict=True)) for r in rows]
