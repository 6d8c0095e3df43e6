"""Business domains. Each module registers its tables on the shared MetaData and exposes a
FastAPI `router`; `ROUTERS` lists them in the order the OpenAPI document shows them."""
from __future__ import annotations

import importlib

#: Domain modules, in OpenAPI order. A module that does not exist yet is skipped.
DOMAIN_MODULES = [
    "org", "ledger", "journal", "journal_review", "masterdata", "vendors", "purchasing", "receiving", "payables", "payments",
    "banking",
    "sales", "receivables", "inventory", "manufacturing", "planning", "comms", "infoflow",
    "reports", "audit_api",
]

ROUTERS = []
for _name in DOMAIN_MODULES:
    try:
        _module = importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _exc:
        if _exc.name == f"{__name__}.{_name}":
            continue
        raise
    if hasattr(_module, "router"):
        ROUTERS.append(_module.router)
