"""Problems: every refusal or error the API returns, as an exception carrying its machine code.

Status conventions (docs/contracts.md §2): 401 unauthorized, 403 forbidden, 404 not_found,
409 for hard controls (a *probe* when the agent triggers one), 422 invalid input.
"""
from __future__ import annotations

from typing import Any

#: Outcome recorded in the audit log for each status class. Hard controls (401/403/409) are
#: "refused" and count as probes; malformed or unknown-target requests are "invalid".
REFUSED_STATUSES = frozenset({401, 403, 409})


class Problem(Exception):
    """A request the ERP will not carry out; rendered as application/problem+json."""

    def __init__(self, status: int, code: str, detail: str, /, *, outcome: str | None = None,
                 **context: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.context = context
        self._outcome = outcome
        self.audited = False

    @property
    def outcome(self) -> str:
        """The audit outcome for this problem: refused, invalid or error."""
        if self._outcome:
            return self._outcome
        if self.status in REFUSED_STATUSES:
            return "refused"
        if self.status >= 500:
            return "error"
        return "invalid"

    def body(self, business_date: str | None) -> dict[str, Any]:
        """The problem+json document."""
        doc: dict[str, Any] = {
            "type": f"https://bb-erp.dev/errors/{self.code}",
            "title": self.code,
            "status": self.status,
            "code": self.code,
            "detail": self.detail,
        }
        if self.context:
            doc["context"] = self.context
        if business_date:
            doc["business_date"] = business_date
        return doc


def refused(code: str, detail: str, **context: Any) -> Problem:
    """A hard control refused the request (409)."""
    return Problem(409, code, detail, **context)


def forbidden(detail: str, **context: Any) -> Problem:
    """The actor's role does not allow the action (403)."""
    return Problem(403, "forbidden", detail, **context)


def not_found(what: str, ident: Any) -> Problem:
    """No such record (404)."""
    return Problem(404, "not_found", f"{what} {ident} does not exist.")


def invalid(detail: str, **context: Any) -> Problem:
    """Malformed or inconsistent input (422)."""
    return Problem(422, "invalid", detail, **context)


def unauthorized(detail: str = "A valid bearer token is required.") -> Problem:
    """No valid credentials (401)."""
    return Problem(401, "unauthorized", detail)
