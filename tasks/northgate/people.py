"""The twenty named users of Northgate, their departments, managers, limits and leave."""
from __future__ import annotations

from dataclasses import dataclass, field

COMPANY_NAME = "Northgate Valve Co."
EMAIL_DOMAIN = "northgatevalve.com"
CONTROLLER = "priya.raman"


@dataclass(frozen=True)
class Person:
    """One staff user."""

    id: str
    name: str
    title: str
    department: str
    roles: tuple[str, ...]
    manager: str | None
    limits: dict[str, int] = field(default_factory=dict)   # doc type -> dollars
    phone: str = ""

    @property
    def email(self) -> str:
        """Work address."""
        return f"{self.id}@{EMAIL_DOMAIN}"


DEPARTMENTS: list[tuple[str, str, str]] = [
    # id, name, head
    ("EXEC", "Executive", "daniel.okafor"),
    ("PUR", "Purchasing", "maya.chen"),
    ("RCV", "Receiving and warehouse", "luis.ortega"),
    ("FIN", "Finance and accounting", "priya.raman"),
    ("SAL", "Sales", "grace.liu"),
    ("PRD", "Production", "tomas.novak"),
    ("OPS", "Operations", "ben.carter"),
]

PEOPLE: list[Person] = [
    Person("daniel.okafor", "Daniel Okafor", "President", "EXEC", ("dept_head",), None,
           {"requisition": 250_000, "purchase_order": 250_000, "payment_run": 1_000_000, "journal_entry": 500_000}),
    Person("priya.raman", "Priya Raman", "Controller", "FIN", ("controller",), "daniel.okafor",
           {"payment_run": 250_000, "journal_entry": 100_000, "ap_invoice": 100_000}),
    Person("hannah.brooks", "Hannah Brooks", "AP Supervisor", "FIN", ("ap_supervisor",), "priya.raman",
           {"ap_invoice": 25_000}),
    Person("riley.park", "Riley Park", "AP Clerk", "FIN", ("ap_clerk",), "hannah.brooks", {"ap_invoice": 0}),
    Person("omar.haddad", "Omar Haddad", "Staff Accountant", "FIN", ("staff_accountant",), "priya.raman",
           {"journal_entry": 5_000}),
    Person("noah.kim", "Noah Kim", "Financial Analyst", "FIN", ("analyst",), "priya.raman"),
    Person("sara.lindqvist", "Sara Lindqvist", "AR Clerk", "FIN", ("ar_clerk",), "priya.raman"),
    Person("maya.chen", "Maya Chen", "Purchasing Manager", "PUR", ("purchasing_manager", "dept_head"),
           "ben.carter", {"requisition": 10_000, "purchase_order": 100_000}),
    Person("ethan.wright", "Ethan Wright", "Buyer", "PUR", ("buyer",), "maya.chen",
           {"purchase_order": 10_000}),
    Person("luis.ortega", "Luis Ortega", "Receiving Lead", "RCV", ("receiver", "dept_head"), "ben.carter",
           {"requisition": 2_500}),
    Person("kim.ng", "Kim Ng", "Inventory Controller", "RCV", ("inventory_controller",), "luis.ortega"),
    Person("grace.liu", "Grace Liu", "Sales Manager", "SAL", ("order_entry", "dept_head"), "daniel.okafor",
           {"requisition": 5_000}),
    Person("marco.rossi", "Marco Rossi", "Order Entry", "SAL", ("order_entry",), "grace.liu"),
    Person("aisha.bello", "Aisha Bello", "Shipping and Billing", "SAL", ("shipping",), "grace.liu"),
    Person("victor.hale", "Victor Hale", "Credit Manager", "FIN", ("credit_manager",), "priya.raman"),
    Person("tomas.novak", "Tomas Novak", "Production Manager", "PRD", ("production_supervisor", "dept_head"),
           "ben.carter", {"requisition": 10_000}),
    Person("jordan.lee", "Jordan Lee", "Production Planner", "PRD", ("planner",), "tomas.novak"),
    Person("ines.costa", "Ines Costa", "Production Supervisor", "PRD", ("production_supervisor",), "tomas.novak"),
    Person("ben.carter", "Ben Carter", "Operations Manager", "OPS", ("staff", "dept_head"), "daniel.okafor",
           {"requisition": 25_000, "purchase_order": 100_000}),
    Person("alex.morgan", "Alex Morgan", "IT Administrator", "OPS", ("admin",), "ben.carter"),
]

BY_ID = {p.id: p for p in PEOPLE}


def phone_for(index: int) -> str:
    """Deterministic internal extension numbers."""
    return f"(614) 555-{2100 + index:04d}"
