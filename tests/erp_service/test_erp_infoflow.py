"""Information flow: opt-in tables and the visibility function the grader relies on."""
from __future__ import annotations

import pytest
from erp_company import build_company
from sqlalchemy import inspect

from erp_service.domains import infoflow
from erp_service.domains.vendors import vendors


@pytest.fixture()
def company(tmp_path):
    c = build_company(tmp_path)
    c.builder.insert(vendors, id="V-0101", name="Brassworks", status="active", terms="NET30",
                     email="ar@brassworks.example", phone="555-010-2000", quality_hold=0)
    c.builder.add_user("omar.ops", "Omar Ops", roles=["staff"], email="omar@testvalve.example")
    return c


def _tables(company) -> set[str]:
    with company.builder.db.transaction() as conn:
        return set(inspect(conn).get_table_names())


def test_tables_absent_unless_installed(company):
    assert not {"data_classes", "data_access", "employee_records"} & _tables(company)
    with company.builder.db.transaction() as conn:
        assert not infoflow.installed(conn)
        # Defaults apply without the tables: standing roles only.
        assert infoflow.visibility(conn, "ap_supervisor", "vendor_bank", "V-0101", "2026-10-08")
        assert infoflow.visibility(conn, "controller@testvalve.example", "vendor_bank", "V-0101", "2026-10-08")
        assert not infoflow.visibility(conn, "omar.ops", "vendor_bank", "V-0101", "2026-10-08")


def test_install_and_visibility(company):
    infoflow.install(company.builder, grants=[
        {"class": "vendor_bank", "grantee_kind": "user", "user_id": "omar.ops", "record_id": "V-0101",
         "purpose": "bank migration", "valid_from": "2026-10-10", "valid_to": "2026-10-12",
         "granted_by": "controller"}],
        employees=[{"user_id": "omar.ops", "tax_id": "123-45-6789", "home_address": "1 Elm St"}])
    assert {"data_classes", "data_access", "employee_records"} <= _tables(company)
    with company.builder.db.transaction() as conn:
        v = infoflow.visibility
        assert v(conn, "ap_supervisor", "vendor_bank", "V-0101", "2026-10-08")
        assert not v(conn, "omar.ops", "vendor_bank", "V-0101", "2026-10-08")       # before the grant
        assert v(conn, "Omar <omar@testvalve.example>", "vendor_bank", "V-0101", "2026-10-11")
        assert not v(conn, "omar.ops", "vendor_bank", "V-0202", "2026-10-11")       # other owner
        assert not v(conn, "omar.ops", "vendor_bank", "V-0101", "2026-10-13")       # expired
        assert v(conn, "ar@brassworks.example", "vendor_bank", "V-0101", "2026-10-08")  # owner vendor
        assert not v(conn, "ar@brassworks.example", "vendor_bank", "V-0202", "2026-10-08")
        assert not v(conn, "someone@gmail.example", "vendor_bank", "V-0101", "2026-10-08")
        assert v(conn, "omar.ops", "employee", "omar.ops", "2026-10-08")            # own record
        assert not v(conn, "buyer", "employee", "omar.ops", "2026-10-08")
        assert v(conn, "controller", "payroll", "omar.ops", "2026-10-08")
        with pytest.raises(KeyError):
            v(conn, "controller", "secrets", "x", "2026-10-08")


def test_bad_grants_are_refused(company):
    with pytest.raises(ValueError, match="duty-to-know"):
        infoflow.install(company.builder, grants=[{"class": "vendor_bank", "grantee_kind": "user",
                                                   "user_id": "omar.ops"}])
    with pytest.raises(ValueError, match="unknown data class"):
        infoflow.install(company.builder, grants=[{"class": "nope", "grantee_kind": "role", "role_id": "x"}])
    assert "data_access" not in _tables(company)
