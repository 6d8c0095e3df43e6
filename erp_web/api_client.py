"""The web UI's client of the agent API: plain HTTP with the signed-in user's token.

Standard library only (the ERP image carries no HTTP client library). Proxy variables are
ignored: the UI talks to the ERP it was given and nothing else.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class ApiResult:
    """One answer of the agent API: the status, the envelope's data or the problem document."""

    status: int
    data: Any = None
    business_date: str | None = None
    problem: dict[str, Any] | None = None
    content_type: str = ""
    raw: bytes = field(default=b"", repr=False)
    replay: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        """What a person reads when it failed: the problem's detail, else a plain status line."""
        if self.problem:
            return str(self.problem.get("detail") or self.problem.get("title") or f"HTTP {self.status}")
        return f"The ERP answered HTTP {self.status}."

    @property
    def code(self) -> str:
        return str((self.problem or {}).get("code") or "")


class ApiClient:
    """Requests to one ERP's agent API as one user (the bearer token)."""

    def __init__(self, base_url: str, token: str, *, timeout_s: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
                key: str | None = None, auth: bool = True) -> ApiResult:
        """Send one request; never raises for an HTTP error (the problem is in the result)."""
        url = self.base_url + path
        q = {k: v for k, v in (query or {}).items() if v not in (None, "")}
        if q:
            url += "?" + urllib.parse.urlencode(q)
        headers = {"Accept": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if method != "GET" and body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if key:
            headers["Idempotency-Key"] = key
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with _NO_PROXY.open(req, timeout=self.timeout_s) as resp:
                return _decode(resp.status, resp.headers, resp.read())
        except urllib.error.HTTPError as exc:
            return _decode(exc.code, exc.headers, exc.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            return ApiResult(503, problem={"code": "unreachable", "detail": f"The ERP could not be reached ({reason})."})

    def get(self, path: str, **query: Any) -> ApiResult:
        """GET `path` with `query` (None and '' values left out)."""
        return self.request("GET", path, query=query)


def _decode(status: int, headers: Any, raw: bytes) -> ApiResult:
    ctype = str(headers.get("Content-Type") or "")
    result = ApiResult(status, content_type=ctype, raw=raw, replay=headers.get("Idempotent-Replay") == "true")
    if "json" not in ctype:
        return result
    try:
        doc = json.loads(raw)
    except ValueError:
        return result
    if not isinstance(doc, dict):
        result.data = doc
        return result
    result.business_date = doc.get("business_date")
    if status >= 400 or "problem" in ctype:
        result.problem = doc
    else:
        result.data = doc.get("data", doc)
    return result
