"""The request path's fast paths keep what they replace (erp_service/kernel/prepared.py,
erp_service/http/inline_routes.py):

- a select run on the driver from its rendered shape (by SQLAlchemy's cache key, or built once
  with expanding parameters) gives exactly SQLAlchemy's rows: keys, values, converted types;
- a plain-``def`` domain endpoint runs on the event loop (no thread-pool hop) when the database
  is free, and in the thread pool when another thread holds the database lock;
- the typical read and write take no thread-pool hop at all (a count, not a timing).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from scenario_copy import scenario_copy
from sqlalchemy import Boolean, Column, Integer, MetaData, Numeric, String, Table, bindparam, func, select

from erp_service.domains.payables import ap_invoices
from erp_service.http import inline_routes
from erp_service.http.app import create_app
from erp_service.kernel import prepared
from erp_service.kernel.db import Database, create_schema
from erp_service.kernel.identity import Actor
from erp_service.kernel.tx import Tx, _dicts


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Iterator[tuple[Database, dict[str, Any]]]:
    """A copy of the payment-run scenario (seed 0) and its metadata."""
    with scenario_copy(Path(tmp_path_factory.mktemp("fast-paths"))) as opened:
        yield opened


_md = MetaData()
_typed = Table("fast_typed", _md, Column("id", Integer, primary_key=True), Column("name", String),
               Column("amount", Numeric(12, 2)), Column("flag", Boolean))


def _sqlalchemy_rows(conn, stmt, params=None) -> list[dict[str, Any]]:
    return _dicts(conn.execute(stmt, params))


def test_keyed_and_fixed_selects_give_sqlalchemys_rows(tmp_path: Path) -> None:
    db = Database.create(tmp_path / "typed.db")
    with db.transaction() as conn:
        create_schema(conn, _md)
        conn.execute(_typed.insert(), [{"id": i, "name": f"n{i % 3}", "amount": i * 1.25, "flag": i % 2 == 0}
                                       for i in range(1, 8)])
    other = _typed.alias("other")
    per_call = [
        select(_typed).where(_typed.c.name == "n1").order_by(_typed.c.id),
        select(_typed.c.name, func.sum(_typed.c.id)).group_by(_typed.c.name).order_by(_typed.c.name),
        select(_typed.c.id, other.c.id).join(other, other.c.id == _typed.c.id + 1).order_by(_typed.c.id),
        select(_typed).where(_typed.c.flag.is_(True)).offset(1).limit(2),
        select(func.count()).select_from(select(_typed).where(_typed.c.id > 2).subquery()),
    ]
    built_once = select(_typed.c.id, _typed.c.amount, _typed.c.flag).where(
        _typed.c.id.in_(bindparam("ids", expanding=True)), _typed.c.name != "zz").order_by(_typed.c.id)
    with db.transaction() as conn:
        tx = Tx(conn=conn, actor=Actor("u"), business_date="2026-01-05")
        for stmt in per_call:
            expected = _sqlalchemy_rows(conn, stmt)
            assert prepared.keyed_cursor(conn, stmt) is not None        # it did take the fast path
            assert tx.all(stmt) == expected
            assert tx.one(stmt) == (expected[0] if expected else None)
            assert tx.scalar(stmt) == (next(iter(expected[0].values())) if expected else None)
        for ids in ([1, 3, 5], [2], [], [1, 3, 5]):
            expected = _sqlalchemy_rows(conn, built_once, {"ids": ids})
            assert prepared.fixed_rows(conn, built_once, {"ids": ids}) == expected
            assert tx.all(built_once, {"ids": ids}) == expected
            assert prepared.fixed_tuples(conn, built_once, {"ids": ids}) == [tuple(r.values()) for r in expected]
        typed = tx.all(select(_typed).order_by(_typed.c.id))
        assert type(typed[0]["flag"]) is bool and str(typed[0]["amount"]) == "1.25"   # types converted
    db.close()


def test_invoice_page_statements_match_sqlalchemy(scenario) -> None:
    db, _ = scenario
    stmt = select(ap_invoices).where(ap_invoices.c.status != "void").order_by(ap_invoices.c.id).limit(50)
    with db.transaction() as conn:
        tx = Tx(conn=conn, actor=Actor("u"), business_date="2026-01-05")
        assert tx.all(stmt) == _sqlalchemy_rows(conn, stmt)


def _count_hops(monkeypatch) -> list[str]:
    hops: list[str] = []
    real = inline_routes.run_in_threadpool

    async def counting(fn, *args, **kwargs):
        hops.append(fn.__name__)
        return await real(fn, *args, **kwargs)
    monkeypatch.setattr(inline_routes, "run_in_threadpool", counting)
    return hops


def test_typical_read_and_write_take_no_thread_hop(scenario, monkeypatch) -> None:
    db, meta = scenario
    hops = _count_hops(monkeypatch)
    client = TestClient(create_app(db))
    auth = {"Authorization": f"Bearer {meta['agent_token']}"}
    assert client.get("/ap-invoices", params={"limit": 50}, headers=auth).status_code == 200
    hops.clear()   # the first request resolved the token (in the pool, by design)
    assert client.get("/ap-invoices", params={"limit": 50}, headers=auth).status_code == 200
    r = client.post("/outbox", json={"to": "priya.raman", "subject": "Hop", "body": "None."},
                    headers={**auth, "Idempotency-Key": "hop-1"})
    assert r.status_code == 201, r.text
    assert hops == []


def test_a_busy_database_sends_the_endpoint_to_the_thread_pool(scenario, monkeypatch) -> None:
    db, meta = scenario
    hops = _count_hops(monkeypatch)
    client = TestClient(create_app(db))
    auth = {"Authorization": f"Bearer {meta['agent_token']}"}
    assert client.get("/ap-invoices", params={"limit": 5}, headers=auth).status_code == 200
    hops.clear()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.lock:
            held.set()
            release.wait(10)
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    threading.Timer(0.3, release.set).start()
    t0 = time.monotonic()
    r = client.get("/ap-invoices", params={"limit": 5}, headers=auth)
    holder.join()
    assert r.status_code == 200 and len(r.json()["data"]["items"]) == 5
    assert hops == ["list_invoices"]           # it waited for the lock in a worker, not on the loop
    assert time.monotonic() - t0 >= 0.25       # and only got the database once the holder let go


def test_the_literal_prefix_turns_away_no_path_the_route_matches(tmp_path: Path) -> None:
    import re

    from starlette.routing import Match

    from erp_service.http.lazy_routes import lazy_routes
    from erp_service.setup import CompanyBuilder
    app = create_app(CompanyBuilder.create(tmp_path / "erp.db", business_date="2026-01-05", name="Prefix Co.").db)
    lazy = lazy_routes(app.router.routes)
    assert len(lazy) > 100
    for route in lazy:
        path = re.sub(r"\{[^}]+\}", "7", route.path)   # every parameter filled in (ints fit any convertor)
        method = sorted(route.spec.methods)[0]
        scope = {"type": "http", "path": path, "root_path": "", "method": method}
        assert route.matches(scope)[0] == Match.FULL, route.path
        assert route.matches({**scope, "path": "/zz" + path})[0] == Match.NONE


def test_the_route_group_picks_what_a_scan_of_every_route_picks(tmp_path: Path) -> None:
    """`LazyRouteGroup` tries only the routes under the path's first segment: for every route's
    path (each method, also unknown ones), one with a slash added and paths no route has, it
    chooses the route a one-by-one scan of all routes chooses (first full match, else the first
    partial one), with the same match."""
    import re

    from starlette.routing import Match

    from erp_service.http.lazy_routes import LazyRouteGroup
    from erp_service.setup import CompanyBuilder
    app = create_app(CompanyBuilder.create(tmp_path / "erp.db", business_date="2026-01-05", name="Group Co.").db)
    (group,) = [r for r in app.router.routes if isinstance(r, LazyRouteGroup)]

    def scan(scope: dict) -> tuple[Match, object]:
        partial = None
        for route in group.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return match, route
            if match == Match.PARTIAL and partial is None:
                partial = (match, route)
        return partial or (Match.NONE, None)

    paths = {re.sub(r"\{[^}]+\}", "7", r.path) for r in group.routes}
    paths |= {p + "/" for p in paths} | {"/", "/nope", "/nope/7", "/ap-invoices/7/nope", "//x", ""}
    seen = {Match.FULL: 0, Match.PARTIAL: 0, Match.NONE: 0}
    for path in sorted(paths):
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            scope = {"type": "http", "path": path, "root_path": "", "method": method}
            match, child = group.matches(scope)
            expected = scan(scope)
            assert (match, child.get("pb.lazy_route")) == expected, (method, path)
            seen[match] += 1
    assert all(seen.values()), seen   # each kind of answer was met
