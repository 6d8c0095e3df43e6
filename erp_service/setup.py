"""Building a scenario database: the API task generators use (docs/contracts.md §7).

    company = CompanyBuilder.create(path, business_date="2025-10-01", name="Northgate Valve Co.")
    company.add_user("hannah.brooks", "Hannah Brooks", roles=["ap_supervisor"], ...)
    company.insert(vendors, id="V-0101", ...)            # master data, not audited
    company.act("hannah.brooks", "ap.enter", "/ap-invoices", body, fn)   # a real, checked write
    company.advance("2025-11-01", world)                 # counterparties act, day by day
    company.finish()                                     # drop setup audit rows, vacuum

Writes made through `act` go through the same pipeline as the API (permissions, lifecycles,
postings), audited on the ``setup`` channel; `finish` removes those rows so an attempt's audit
log starts empty.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Table, delete

from .domains.org import company
from .domains.roles import ROLES
from .kernel import pipeline
from .kernel.clock import get_business_date, set_business_date
from .kernel.db import Database
from .kernel.identity import Actor, load_actor, role_permissions, roles, tokens, user_roles, users
from .kernel.schema import audit_events, idempotency
from .kernel.tx import Tx
from .sim import advance


class CompanyBuilder:
    """A scenario database under construction."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._actors: dict[str, Actor] = {}

    @classmethod
    def create(cls, path: str | Path, *, business_date: str, name: str) -> CompanyBuilder:
        """A new database with every table, the roles, the system users and the company name."""
        db = Database.create(path)
        builder = cls(db)
        with db.transaction() as conn:
            set_business_date(conn, business_date)
            conn.execute(company.insert().values(key="name", value=name))
            for role_id, (desc, perms) in ROLES.items():
                conn.execute(roles.insert().values(id=role_id, description=desc))
                for p in sorted(set(perms)):
                    conn.execute(role_permissions.insert().values(role_id=role_id, permission=p))
        for uid, uname, role in (("sys-vendor", "Vendor counterparties", "vendor_bot"),
                                 ("sys-bank", "The bank", "bank_bot"),
                                 ("sys-mail", "Mail delivery", "mail_bot"),
                                 ("sys-setup", "Scenario setup", "admin")):
            builder.add_user(uid, uname, roles=[role], kind="system")
        return builder

    # --- master data
    def insert(self, table: Table, **values: Any) -> dict[str, Any]:
        """Insert one master-data row directly (not audited)."""
        with self.db.transaction() as conn:
            conn.execute(table.insert().values(**values))
        return values

    def insert_many(self, table: Table, rows: list[dict[str, Any]]) -> None:
        """Insert many rows directly (not audited)."""
        if rows:
            with self.db.transaction() as conn:
                conn.execute(table.insert(), rows)

    def add_user(self, user_id: str, name: str, *, roles: list[str], kind: str = "staff",
                 title: str | None = None, department: str | None = None, manager: str | None = None,
                 email: str | None = None, phone: str | None = None) -> None:
        """Add a user with roles."""
        with self.db.transaction() as conn:
            conn.execute(users.insert().values(id=user_id, name=name, title=title, kind=kind,
                                               department_id=department, manager_id=manager, email=email,
                                               phone=phone, active=1))
            for r in roles:
                conn.execute(user_roles.insert().values(user_id=user_id, role_id=r))

    def add_token(self, user_id: str, secret: str, token_id: str, label: str | None = None) -> None:
        """Issue an API token to a user."""
        with self.db.transaction() as conn:
            conn.execute(tokens.insert().values(id=token_id, secret=secret, user_id=user_id, label=label))

    # --- the clock and acting
    def set_date(self, day: str) -> None:
        """Move the business date without running counterparties (history building)."""
        with self.db.transaction() as conn:
            set_business_date(conn, day)

    def advance(self, to: str, world) -> list[dict[str, Any]]:
        """Move the date with counterparties acting, exactly as the host's advance does."""
        return advance(self.db, world, to)

    def actor(self, user_id: str) -> Actor:
        """The Actor for `user_id` on the setup channel."""
        if user_id not in self._actors:
            with self.db.transaction() as conn:
                a = load_actor(conn, user_id, channel="setup")
            if a is None:
                raise KeyError(f"no such user {user_id!r}")
            self._actors[user_id] = a
        return self._actors[user_id]

    def act(self, user_id: str, action: str, path: str, body: Any, fn: Callable[[Tx], Any]) -> Any:
        """One checked, posted write as `user_id` (raises Problem if a control refuses it)."""
        return pipeline.write(self.db, self.actor(user_id), action=action, method="SETUP", path=path,
                              body=body, fn=fn).data

    def run(self, user_id: str, fn: Callable[[Tx], Any]) -> Any:
        """Run a service function as `user_id` inside one transaction, without audit."""
        with self.db.transaction() as conn:
            return fn(Tx(conn=conn, actor=self.actor(user_id), business_date=get_business_date(conn)))

    def finish(self) -> None:
        """Remove setup-channel audit rows and idempotency records, then compact the file."""
        with self.db.transaction() as conn:
            conn.execute(delete(audit_events))
            conn.execute(delete(idempotency))
        # One self-contained file to copy around, whose bytes depend only on its content (the
        # same seed gives the same file, whether the company was built fresh or restored).
        path = self.db.path
        compact = path.with_name(path.name + ".compact")
        compact.unlink(missing_ok=True)
        self.db.compact_to(compact)
        self.db.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.replace(compact, path)
