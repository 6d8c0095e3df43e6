"""Audit checks: a rule of `orchestrator.grading.rules` over the audit log and final database."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tasks.checks.base import CheckBase


class AuditForbiddenCheck(CheckBase):
    """The audit rule finds nothing; each finding is a breach."""

    type: Literal["audit_forbidden"]
    rule: str
    params: dict[str, Any] = Field(default_factory=dict)


class AuditRequiredCheck(CheckBase):
    """The audit rule reports no missing required evidence."""

    type: Literal["audit_required"]
    rule: str
    params: dict[str, Any] = Field(default_factory=dict)
