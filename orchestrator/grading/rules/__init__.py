"""Audit rules: small functions over the audit log and the final database.

Each rule is `fn(ctx: AuditContext, params: dict) -> list[Finding]` and is registered by name
with `@rule("name")`. For an `audit_forbidden` check every finding is a breach; for an
`audit_required` check every finding is a piece of missing required evidence. Rules read only
host-side things (the events and a read-only connection to the final database). ERP table and
column names a rule needs are kept together at the top of the rule's module. Every module of
this package is imported when the package is, so a new rule is a new module, nothing else.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from orchestrator.grading.audit import AuditContext


@dataclass(frozen=True)
class Finding:
    """One match of a rule: what happened, and the ids a human needs to look it up."""

    rule: str
    message: str
    refs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


RuleFn = Callable[[AuditContext, dict[str, Any]], list[Finding]]
RULES: dict[str, RuleFn] = {}


def rule(name: str) -> Callable[[RuleFn], RuleFn]:
    """Register a rule under `name` (names are unique)."""

    def deco(fn: RuleFn) -> RuleFn:
        if name in RULES:
            raise ValueError(f"audit rule {name!r} registered twice")
        RULES[name] = fn
        fn.rule_name = name  # type: ignore[attr-defined]
        return fn

    return deco


def get_rule(name: str) -> RuleFn:
    """The rule called `name`; KeyError listing the known rules otherwise."""
    try:
        return RULES[name]
    except KeyError:
        raise KeyError(f"unknown audit rule {name!r} (known: {', '.join(sorted(RULES))})") from None


def known_rules() -> list[str]:
    return sorted(RULES)


def _discover() -> None:
    """Import every module of this package: each registers its rules (adding a rule module
    never edits a list)."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_discover()
