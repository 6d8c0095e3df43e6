"""Business domains. Each module registers its tables on the shared MetaData and declares its
routes on a `DomainRouter` named `router` (recorded at import, built when first needed: see
erp_service/http/lazy_routes.py); `ROUTERS` lists them in the order the OpenAPI document shows
them."""
from __future__ import annotations

import importlib

from ..http.lazy_routes import DomainRouter

#: Domain modules, in OpenAPI order. A module that does not exist yet is skipped.
DOMAIN_MODULES = [
    "org", "ledger", "journal", "masterdata", "vendors", "purchasing", "receiving", "payables", "payments",
    "banking",
    "sales", "receivables", "inventory", "manufacturing", "planning", "comms", "infoflow",
    "reports", "audit_api",
]

ROUTERS: list[DomainRouter] = []
for _name in DOMAIN_MODULES:
    try:
        _module = importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _exc:
        if _exc.name == f"{__name__}.{_name}":
            continue
        raise
    if hasattr(_module, "router"):
        if not isinstance(_module.router, DomainRouter):  # a plain APIRouter's routes would not be mounted
            raise TypeError(f"{_module.__name__}.router is a {type(_module.router).__name__}, not a DomainRouter")
        ROUTERS.append(_module.router)
