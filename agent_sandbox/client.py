"""HTTP client for the bb-erp agent API (contracts §2), used by scripted policies and `erp`.

The client speaks the envelope convention: a success body is `{"business_date", "data"}` and
the helpers return `data`; an error body is `application/problem+json` and becomes `ErpError`.

Retries follow one rule: a request is re-sent only when re-sending cannot create a second
effect. Reads (GET) may be retried; a write is retried only if it carries an Idempotency-Key,
and the retry carries the same key and the same body, so the server replays the first result
instead of acting twice. A write without a key is never retried here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_sandbox.http_transport import Answer, Headers, HttpTransport, Request, Transport, TransportError

DEFAULT_TIMEOUT_S = 120.0
# Statuses that mean "the request may not have reached the application, or its answer was lost";
# only these (and transport errors) are worth a retry.
RETRYABLE_STATUSES = frozenset({502, 503, 504})
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
PAGE_LIMIT_MAX = 1000


class ErpError(Exception):
    """An HTTP error answer from the ERP, carrying its problem document.

    `status` is the HTTP status, `code` the machine code (`over_limit`, `not_found`, ...),
    `detail` the one-sentence explanation and `problem` the whole problem body.
    """

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        problem: dict[str, Any] | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.problem = problem if problem is not None else {}
        self.method = method
        self.path = path
        super().__init__(f"{method} {path}: HTTP {status} {code}: {detail}".strip())


class ErpUnreachable(Exception):
    """No HTTP answer at all: connection refused, DNS failure, timeout, dropped connection."""

    def __init__(self, url: str, reason: str, *, timed_out: bool = False) -> None:
        self.url = url
        self.reason = reason
        self.timed_out = timed_out
        super().__init__(f"ERP unreachable at {url}: {reason}")


@dataclass(frozen=True)
class ErpResponse:
    """One HTTP answer, decoded as far as its content type allows."""

    status: int
    headers: Headers
    content: bytes
    body: Any  # parsed JSON, or None for non-JSON content

    @property
    def ok(self) -> bool:
        """True for a 2xx/3xx answer."""
        return self.status < 400

    @property
    def data(self) -> Any:
        """The `data` member of the success envelope (the whole body if it is not an envelope)."""
        if isinstance(self.body, dict) and "data" in self.body:
            return self.body["data"]
        return self.body

    @property
    def business_date(self) -> str | None:
        """The business date the server answered on (header, else the envelope)."""
        value = self.headers.get("x-business-date")
        if value:
            return value
        if isinstance(self.body, dict):
            return self.body.get("business_date")
        return None

    @property
    def replay(self) -> bool:
        """True when the server replayed a stored first response for a reused Idempotency-Key."""
        return self.headers.get("idempotent-replay", "").lower() == "true"

    @property
    def content_type(self) -> str:
        """The media type without parameters (`application/pdf`, `application/json`, ...)."""
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def to_error(self, method: str, path: str) -> ErpError:
        """The `ErpError` for this (error) answer; tolerates non-problem bodies from proxies."""
        if isinstance(self.body, dict) and "status" in self.body:
            return ErpError(
                int(self.body.get("status") or self.status),
                str(self.body.get("code") or self.body.get("title") or "error"),
                str(self.body.get("detail") or ""),
                problem=self.body,
                method=method,
                path=path,
            )
        text = self.content.decode("utf-8", errors="replace").strip()
        problem = {"status": self.status, "code": "http_error", "detail": text[:2000]}
        return ErpError(self.status, "http_error", text[:200], problem=problem, method=method, path=path)


class IdempotencyKeys:
    """Deterministic Idempotency-Keys: `<prefix>-t<turn>-w<n>`, n counting from 1.

    A policy that runs the same decisions in the same order gets the same keys, so a rerun of
    a turn after a lost response replays instead of duplicating.
    """

    def __init__(self, prefix: str, turn: int) -> None:
        if not prefix or any(c.isspace() for c in prefix):
            raise ValueError(f"idempotency key prefix must be non-empty without spaces: {prefix!r}")
        self.prefix = prefix
        self.turn = int(turn)
        self.count = 0

    def next(self) -> str:
        """The next key in sequence."""
        self.count += 1
        return f"{self.prefix}-t{self.turn}-w{self.count}"


@dataclass
class RequestStats:
    """What the client sent: every HTTP request, retries included (for usage.json)."""

    requests: int = 0
    retries: int = 0
    by_method: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The figures as a plain dict."""
        return {"requests": self.requests, "retries": self.retries, "by_method": dict(sorted(self.by_method.items()))}


class ErpClient:
    """A client of the agent API with one user's token.

    `max_attempts` bounds the sends of one call (1 = no retry). Retries wait `backoff_s`,
    doubling each time. See the module docstring for which calls are retried. Requests go over
    HTTP (`HttpTransport`) unless another `transport` is given (MCP: mcp_client.py).
    """

    def __init__(
        self,
        url: str,
        token: str | None,
        timeout: float = DEFAULT_TIMEOUT_S,
        *,
        max_attempts: int = 4,
        backoff_s: float = 0.25,
        transport: Transport | None = None,
    ) -> None:
        if not url:
            raise ValueError("ERP url is empty")
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.stats = RequestStats()
        self._transport = transport if transport is not None else HttpTransport(self.url)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (or the transport's session)."""
        self._transport.close()

    def __enter__(self) -> ErpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def request_count(self) -> int:
        """Number of HTTP requests sent so far (retries included)."""
        return self.stats.requests

    # -- raw requests ----------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        key: str | None = None,
        retry: bool = True,
        auth: bool = True,
    ) -> ErpResponse:
        """Send one call and return the answer whatever its status (no ErpError raised).

        Raises `ErpUnreachable` when no answer came back after the allowed attempts.
        """
        method = method.upper()
        path = normalize_path(path)
        headers = {"Accept": "application/json", "User-Agent": "bb-erp-agent-client"}
        if key is not None:
            headers["Idempotency-Key"] = key
        if auth and self.token:
            # Per request rather than a client default, so /openapi.json goes out without it.
            headers["Authorization"] = f"Bearer {self.token}"
        content: bytes | None = None
        if json_body is not None or method in WRITE_METHODS and method != "DELETE":
            # Body bytes are fixed once, so a retry re-sends exactly the same body as the first try.
            content = json.dumps(json_body if json_body is not None else {}, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        sent = Request(method, path, clean_params(params), headers, content)
        attempts = self.max_attempts if retry and self._may_retry(method, key) else 1
        delay = self.backoff_s
        last_exc: ErpUnreachable | None = None
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                self.stats.retries += 1
                time.sleep(delay)
                delay *= 2
            self.stats.requests += 1
            self.stats.by_method[method] = self.stats.by_method.get(method, 0) + 1
            try:
                raw = self._transport.send(sent, self.timeout)
            except TransportError as exc:
                last_exc = ErpUnreachable(self.url, exc.reason, timed_out=exc.timed_out)
                continue
            answer = decode_response(raw)
            if answer.status in RETRYABLE_STATUSES and attempt < attempts:
                continue
            return answer
        assert last_exc is not None
        raise last_exc

    @staticmethod
    def _may_retry(method: str, key: str | None) -> bool:
        # The one rule: never re-send a write the server could apply twice.
        return method not in WRITE_METHODS or key is not None

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        key: str | None = None,
    ) -> Any:
        """Send one call and return its `data`; raise `ErpError` on an error answer."""
        answer = self.request(method, path, params=params, json_body=json_body, key=key)
        if not answer.ok:
            raise answer.to_error(method.upper(), normalize_path(path))
        return answer.data

    def get(self, path: str, params: Mapping[str, Any] | None = None, **query: Any) -> Any:
        """GET `path` with query parameters (from `params` and keyword arguments)."""
        return self.call("GET", path, params={**(params or {}), **query})

    def post(self, path: str, body: Any = None, *, key: str | None = None) -> Any:
        """POST a JSON body to `path`; `key` is sent as Idempotency-Key (and enables retries)."""
        return self.call("POST", path, json_body=body if body is not None else {}, key=key)

    def patch(self, path: str, body: Any = None, *, key: str | None = None) -> Any:
        """PATCH `path` with a JSON body."""
        return self.call("PATCH", path, json_body=body if body is not None else {}, key=key)

    def put(self, path: str, body: Any = None, *, key: str | None = None) -> Any:
        """PUT a JSON body to `path`."""
        return self.call("PUT", path, json_body=body if body is not None else {}, key=key)

    def delete(self, path: str, *, key: str | None = None) -> Any:
        """DELETE `path`."""
        return self.call("DELETE", path, key=key)

    # -- typed helpers ---------------------------------------------------------------------

    def whoami(self) -> dict[str, Any]:
        """The signed-in user: roles, permissions, approval limits, boxes, business date."""
        return self.get("/whoami")

    def list_page(self, path: str, params: Mapping[str, Any] | None = None, *, offset: int = 0, limit: int = 200) -> dict[str, Any]:
        """One page of a list endpoint: `{"items", "total", "offset", "limit"}`."""
        return self.get(path, {**(params or {}), "offset": offset, "limit": limit})

    def iter_list(self, path: str, params: Mapping[str, Any] | None = None, *, page_size: int = PAGE_LIMIT_MAX) -> Iterator[dict[str, Any]]:
        """Every item of a list endpoint, following offset/limit pagination to the end."""
        offset = 0
        while True:
            page = self.list_page(path, params, offset=offset, limit=page_size)
            items = page.get("items", []) if isinstance(page, dict) else []
            yield from items
            offset += len(items)
            total = page.get("total") if isinstance(page, dict) else None
            if not items or (isinstance(total, int) and offset >= total):
                return

    def list_all(self, path: str, params: Mapping[str, Any] | None = None, **query: Any) -> list[dict[str, Any]]:
        """All items of a list endpoint as a list (pagination followed)."""
        return list(self.iter_list(path, {**(params or {}), **query}))

    def inbox(self, box: str | None = None, *, unread: bool = False) -> list[dict[str, Any]]:
        """Messages in the user's boxes (one box if named), optionally only unread ones."""
        params: dict[str, Any] = {}
        if box:
            params["box"] = box
        if unread:
            params["unread"] = "true"
        return self.list_all("/inbox", params)

    def read_message(self, msg_id: str) -> dict[str, Any]:
        """One message with its attachment list (the server marks it read)."""
        return self.get(f"/inbox/{msg_id}")

    def attachment(self, msg_id: str, n: int) -> bytes:
        """The raw bytes of attachment `n` (1-based) of a message."""
        path = f"/inbox/{msg_id}/attachments/{int(n)}"
        answer = self.request("GET", path)
        if not answer.ok:
            raise answer.to_error("GET", path)
        return answer.content

    def report(self, name: str, **params: Any) -> Any:
        """A report by id (`trial-balance`, `grni`, ...) with its parameters."""
        return self.get(f"/reports/{name}", params)

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document (no token needed)."""
        answer = self.request("GET", "/openapi.json", auth=False)
        if not answer.ok:
            raise answer.to_error("GET", "/openapi.json")
        return answer.body

    def keys(self, prefix: str, turn: int) -> IdempotencyKeys:
        """A deterministic key sequence `<prefix>-t<turn>-w<n>` for this turn's writes."""
        return IdempotencyKeys(prefix, turn)


# -- helpers shared with the erp command ------------------------------------------------------


def normalize_path(path: str) -> str:
    """`purchase-orders` -> `/purchase-orders`; full URLs are refused (the base URL is fixed)."""
    path = path.strip()
    if "://" in path:
        raise ValueError(f"give a path such as /purchase-orders, not a URL: {path}")
    return path if path.startswith("/") else "/" + path


def clean_params(params: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """Query parameters as (name, text) pairs: None values dropped, booleans as `true`/`false`,
    a list or tuple as one pair per item."""
    out: list[tuple[str, str]] = []
    for k, v in (params or {}).items():
        if v is None:
            continue
        if isinstance(v, bool):
            out.append((k, "true" if v else "false"))
        elif isinstance(v, (list, tuple)):
            out += [(k, str(x)) for x in v]
        else:
            out.append((k, str(v)))
    return out


def decode_response(raw: Answer) -> ErpResponse:
    """Wrap an answer, parsing JSON bodies (problem+json included)."""
    ctype = raw.headers.get("content-type", "").split(";")[0].strip().lower()
    body: Any = None
    if ctype == "application/json" or ctype.endswith("+json"):
        try:
            body = json.loads(raw.content)
        except ValueError:
            body = None
    return ErpResponse(status=raw.status, headers=raw.headers, content=raw.content, body=body)
