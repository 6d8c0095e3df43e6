"""A small test company for ERP tests: one user per role, the standard chart and periods.

Domain tests add their own parties and items on top (through `builder.insert`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from erp_service.domains.roles import ROLES
from erp_service.http.app import create_app
from erp_service.setup import CompanyBuilder
from erp_service.standard import install_standard

START = "2026-10-08"


@dataclass
class TestCompany:
    """A built company: its database path, the builder, and one token per staff role."""

    path: Path
    builder: CompanyBuilder
    tokens: dict[str, str]          # user id -> secret

    def headers(self, user: str, key: str | None = None) -> dict[str, str]:
        """Authorization (and optional Idempotency-Key) headers for `user`."""
        h = {"Authorization": f"Bearer {self.tokens[user]}"}
        if key:
            h["Idempotency-Key"] = key
        return h


def build_company(tmp: Path, *, business_date: str = START) -> TestCompany:
    """Create the database with a user `<role>` (e.g. `ap_supervisor`) for every staff role."""
    path = tmp / "company.db"
    b = CompanyBuilder.create(path, business_date=business_date, name="Test Valve Co.")
    install_standard(b, first_period="2025-10-01", last_period="2027-03-31")
    tokens = {}
    for role in ROLES:
        if role.endswith("_bot"):
            continue
        b.add_user(role, role.replace("_", " ").title(), roles=[role], title=role,
                   email=f"{role}@testvalve.example")
        secret = f"tok-secret-{role}-0000"
        b.add_token(role, secret, f"tok-{role}")
        tokens[role] = secret
    return TestCompany(path=path, builder=b, tokens=tokens)


def client_for(company: TestCompany):
    """A TestClient on the agent API over the company's open database."""
    from fastapi.testclient import TestClient
    return TestClient(create_app(company.builder.db))
