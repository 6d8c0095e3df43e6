"""An attempt's final database re-derived from its audit log (issue 39, item 3).

The audit log holds every request that reached the ERP (agent API: reads, writes, refusals; the
counterparties' actions under channel `sim`), in commit order. On a fresh copy of the scenario the
replay moves the clock as the log's business dates say (one day at a time, the counterparties
acting each day, as `/control/advance` does), sends every agent request again through the ERP's
own pipeline in this process, and advances to the grading date. A transport fault leaves nothing
to replay: a `fail_before` request never reached the ERP (no audit row), a `lost_response` one
committed (its row is replayed like any other) — so no fault layer is needed.

Tokens: a request is sent with the secret its token id has in the fresh copy (the attempt's copy
may have re-keyed every secret; the canonical dump leaves secrets out), or with a secret no user
holds when the row has no token id. The replayed audit rows are compared with the recorded ones
field by field (wall_time aside): the first difference names the diverging request.
"""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

# Columns of an audit row compared between the recorded log and the replay (wall_time is volatile).
COMPARED = ("id", "business_date", "channel", "actor", "token_id", "method", "path", "action",
            "object_type", "object_id", "before", "after", "outcome", "status", "error_code",
            "idem_key", "replay", "request")
# What publication's redactor (orchestrator/publish/redaction.py) puts where a credential or a
# restricted value was: a bundle's audit log is compared with the replay taking each for "some text".
REDACTION_MARK = re.compile(r"\[restricted [a-z_]+ [^\[\]\s]+\]|\[restricted\]|\[redacted: restricted value\]"
                            r"|\[credential(?: \d+)?\]|\[\(as written\) |•+")
# In what the agent sent, a bullet is text: only a run of masks before digits is the redactor's.
SENT_MARK = re.compile(REDACTION_MARK.pattern.replace("|•+", "|•+(?=[\\d\\s.-]*\\d)"))
NO_SUCH_TOKEN = "replay-no-such-token-0000000000000000"  # holds no user: a 401 like the recorded one
TRUNCATED_MARK = "…"  # erp_service.kernel.pipeline appends it to a request text cut at its limit


@dataclass
class Divergence:
    """The first audit row where the replay and the recorded log part."""

    audit_id: int | None
    request: str  # "METHOD /path" of the recorded row (or of the replayed one when the log ended)
    fields: list[str] = field(default_factory=list)
    detail: str = ""

    def text(self) -> str:
        """One line for a person."""
        where = f"audit id {self.audit_id}" if self.audit_id is not None else "after the log's end"
        what = f" (fields differ: {', '.join(self.fields)})" if self.fields else ""
        return f"{where}: {self.request}{what}{': ' + self.detail if self.detail else ''}"

    def as_dict(self) -> dict[str, Any]:
        """The record's form."""
        return {"audit_id": self.audit_id, "request": self.request, "fields": self.fields, "detail": self.detail}


@dataclass
class ReplayResult:
    """What the replay gave: the canonical hash of the re-derived database and any divergence, or
    why the log cannot be replayed exactly (`unreplayable`: a request longer than the log keeps)."""

    canonical_sha256: str | None
    requests: int
    divergence: Divergence | None = None
    unreplayable: str | None = None


class Unreplayable(ValueError):
    """A row the ERP recorded only in part (its request cut at the audit log's size limit)."""


def read_audit_log(path: Path) -> list[dict[str, Any]]:
    """The rows of an attempt's `audit.jsonl` (a line that is not a JSON object is an error)."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{n}: not a JSON object")
        rows.append(row)
    return rows


def _norm(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: row.get(k) for k in COMPARED}
    out["replay"] = bool(out["replay"])
    return out


def _db_rows(db: Path, after: int) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM audit_events WHERE id > ? ORDER BY id", (after,))]
    finally:
        conn.close()


def _start_state(db: Path) -> tuple[int, dict[str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        last = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM audit_events").fetchone()[0])
        tokens = {str(i): str(s) for i, s in conn.execute("SELECT id, secret FROM tokens")}
        return last, tokens
    finally:
        conn.close()


def _refused_body(text: str) -> bytes:
    """The bytes of a body the ERP kept as text only (`{"unparsed": ...}`): a replacement character
    stands for bytes that were not UTF-8 (sent as one such byte: the same text comes back). An
    excerpt the size limits layer cut (its first AUDIT_EXCERPT_CHARS bytes of a refused body) gets
    a non-UTF-8 byte after it, so it is refused again with the same excerpt."""
    from erp_service.http.limits import AUDIT_EXCERPT_CHARS, MAX_JSON_DEPTH, json_depth

    raw = b"\xff".join(part.encode("utf-8") for part in text.split("\ufffd"))
    if "\ufffd" in text or json_depth(raw, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return raw  # refused by the limits layer as it is
    if AUDIT_EXCERPT_CHARS - 3 <= len(raw) <= AUDIT_EXCERPT_CHARS:
        try:
            json.loads(raw)
        except ValueError:
            return raw + b"\xff"
    return raw


def _request_args(row: dict[str, Any], redacted: bool = False) -> dict[str, Any]:
    """The HTTP request a recorded row stands for (ValueError when it cannot be rebuilt)."""
    from erp_service.http.limits import MAX_BODY_BYTES
    from erp_service.kernel.pipeline import REQUEST_TEXT_LIMIT

    text = row.get("request")
    for key in ("path", "request", "idem_key") if redacted else ():
        if isinstance(row.get(key), str) and SENT_MARK.search(str(row[key])):
            raise Unreplayable(f"audit id {row.get('id')}: its {key} was redacted for publication")
    if isinstance(text, str) and text.endswith(TRUNCATED_MARK) and len(text) == REQUEST_TEXT_LIMIT + 1:
        try:
            json.loads(text)
        except ValueError:
            raise Unreplayable(f"audit id {row.get('id')}: its request was cut at the audit log's size limit") from None
    value = json.loads(text) if isinstance(text, str) else None
    if row["method"] == "GET":
        return {"params": value} if isinstance(value, dict) and value else {}
    if row.get("status") == 413 and value is None:  # too large to keep: any body over the limit
        return {"content": b" " * (MAX_BODY_BYTES + 1)}
    if value is None:
        return {}
    if isinstance(value, dict) and set(value) == {"unparsed"} and isinstance(value["unparsed"], str):
        return {"content": _refused_body(value["unparsed"])}  # a body that was not JSON, as it came
    content = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    if row.get("status") == 422 and row.get("error_code") == "invalid":
        # Refused as invalid: perhaps only for want of a JSON content type (the log does not keep
        # headers); sent without one, a body model refuses it the same way, and so does any check.
        return {"content": content}
    return {"content": content, "headers": {"content-type": "application/json"}}


def _same(recorded: Any, replayed: Any, redacted: bool) -> bool:
    """Equal, or (a bundle's redacted text) equal wherever the redactor left the text as it was."""
    if recorded == replayed:
        return True
    if not redacted or not isinstance(recorded, str) or not isinstance(replayed, str) or not REDACTION_MARK.search(recorded):
        return False
    pattern = ".*?".join(re.escape(piece) for piece in REDACTION_MARK.split(recorded))
    return re.fullmatch(pattern, replayed, re.S) is not None


def _first_difference(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]],
                      redacted: bool = False) -> Divergence | None:
    for rec, rep in zip(recorded, replayed, strict=False):
        a, b = _norm(rec), _norm(rep)
        diff = [k for k in COMPARED if not _same(a[k], b[k], redacted)]
        if diff:
            return Divergence(rec.get("id"), f"{rec.get('method')} {rec.get('path')}", diff)
    if len(recorded) > len(replayed):
        rec = recorded[len(replayed)]
        return Divergence(rec.get("id"), f"{rec.get('method')} {rec.get('path')}", [],
                          "recorded, but the replay produced no such row")
    if len(replayed) > len(recorded):
        rep = replayed[len(recorded)]
        return Divergence(None, f"{rep.get('method')} {rep.get('path')}", [],
                          "the replay produced a row the log does not hold")
    return None


def replay_attempt(scenario_db: Path, world_json: Path, audit_rows: Iterable[dict[str, Any]],
                   grading_date: str, *, shipped_db: Path | None = None, expected_sha256: str | None = None,
                   redacted: bool = False, scratch: Path | None = None) -> ReplayResult:
    """Replay an attempt's audit rows on a fresh copy of `scenario_db`; see the module docstring.

    `shipped_db`: the attempt's own final database, if there is one; when the replay agrees with
    the log row by row (a log altered consistently) but not with `expected_sha256`, the first row
    where it differs from the shipped database's audit trail names the diverging request.
    `redacted`: the log and database are a publication bundle's (orchestrator/publish/redaction.py):
    a request the redactor changed cannot be sent (`unreplayable`), and the ERP's own texts are
    compared around its marks."""
    from fastapi.testclient import TestClient

    import erp_service.domains  # noqa: F401 — registers the tables, actors and workday calendar
    from erp_service.canonical import canonical_hash
    from erp_service.http.app import create_app
    from erp_service.kernel.db import Database
    from erp_service.sim import advance
    from erp_service.world import load_world

    tmp = Path(tempfile.mkdtemp(prefix="pb-replay-", dir=scratch))
    try:
        db_path = tmp / "replay.db"
        shutil.copyfile(scenario_db, db_path)
        start_id, tokens = _start_state(db_path)
        recorded = sorted((r for r in audit_rows if int(r.get("id") or 0) > start_id), key=lambda r: int(r["id"]))
        db = Database(db_path)
        world = load_world(world_json)
        sent = 0
        with TestClient(create_app(db, world), raise_server_exceptions=False) as client:
            for row in recorded:
                date = str(row.get("business_date"))
                if date > db.business_date():
                    advance(db, world, date)  # the counterparties' rows of the days between come back
                if row.get("channel") != "api":
                    continue  # a counterparty's action: made again by the advance
                try:
                    args = _request_args(row, redacted)
                except Unreplayable as exc:
                    db.close()
                    return ReplayResult(None, sent, unreplayable=str(exc))
                except ValueError as exc:  # a request text that is not what the ERP writes
                    db.close()
                    return ReplayResult(None, sent, Divergence(row.get("id"), f"{row['method']} {row['path']}",
                                                               [], f"cannot be replayed: {exc}"))
                headers = dict(args.pop("headers", {}))
                token_id = row.get("token_id")
                headers["authorization"] = f"Bearer {tokens.get(str(token_id), NO_SUCH_TOKEN) if token_id else NO_SUCH_TOKEN}"
                if row.get("idem_key"):
                    headers["idempotency-key"] = str(row["idem_key"])
                # The log holds the decoded path (what routing saw): quoted, it decodes to the same.
                client.request(str(row["method"]), quote(str(row["path"]), safe="/"), headers=headers, **args)
                sent += 1
            if grading_date > db.business_date():
                advance(db, world, grading_date)
        db.close()
        replayed = _db_rows(db_path, start_id)
        divergence = _first_difference(recorded, replayed, redacted)
        digest = canonical_hash(db_path)
        if divergence is None and digest != expected_sha256 and shipped_db is not None and shipped_db.is_file():
            divergence = _first_difference(_db_rows(shipped_db, start_id), replayed, redacted)
            if divergence is not None:
                divergence.detail = ("the replay agrees with the log but not with the shipped final database "
                                     + (divergence.detail or "")).strip()
        return ReplayResult(digest, sent, divergence)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
