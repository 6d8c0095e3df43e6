"""A scenario as JSON Lines, and back (issue 39, item 4; format: docs/scenario-jsonl.md).

A backend-neutral form of a generated scenario: the company's tables by section (master data,
open documents, history), the inbox (the turns' requests), the schedules (world.json: what the
counterparties will do), the handbook and the scenario's facts — one JSON object per line, each
with a `kind`. The truth (what the grader knows) is kept in a separate file, never in the
scenario's lines. Importing the lines into bb-erp rebuilds a scenario directory whose database
has the same canonical hash (erp_service/canonical.py) as the exported one.
"""
from __future__ import annotations

import base64
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

FORMAT = "pb-scenario-jsonl/1"
TRUTH_FORMAT = "pb-scenario-truth/1"
# Tables that record what happened (the audit trail, the ledger's postings, status changes,
# idempotency keys) rather than what exists now; the rest are split by `_section`.
HISTORY_TABLES = frozenset({"audit_events", "idempotency", "status_history", "journal_entries", "journal_lines",
                            "gl_entries", "gl_lines", "ledger_entries", "ledger_lines", "bank_statement_lines"})
MASTER_HINTS = ("users", "roles", "role_permissions", "user_roles", "tokens", "departments", "accounts", "periods",
                "items", "warehouses", "vendors", "vendor_bank_accounts", "customers", "boms", "routings",
                "price_agreements", "approval_limits", "delegations", "calendar", "budgets", "meta", "bank_accounts")


class ScenarioJsonlError(ValueError):
    """A JSON Lines file that is not a scenario of this format (the message says which line)."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure


def _section(table: str) -> str:
    if table in HISTORY_TABLES or table.endswith(("_history", "_log", "_events")):
        return "history"
    if table in MASTER_HINTS or table.startswith(("bom_", "routing_", "user_", "role_", "vendor_bank")):
        return "master"
    return "documents"


def _value_out(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode()}
    return value


def _value_in(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$bytes"}:
        return base64.b64decode(value["$bytes"])
    return value


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _db_lines(db: Path) -> Iterator[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db.resolve()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        for table in tables:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            yield {"kind": "table", "name": table, "section": _section(table), "columns": cols}
            select = ", ".join(f'"{c}"' for c in cols)
            for row in conn.execute(f'SELECT {select} FROM "{table}" ORDER BY rowid'):
                yield {"kind": "row", "table": table, "values": [_value_out(v) for v in row]}
        has_seq = conn.execute("SELECT 1 FROM sqlite_master WHERE name='sqlite_sequence'").fetchone()
        if has_seq:
            for name, seq in conn.execute("SELECT name, seq FROM sqlite_sequence ORDER BY name"):
                yield {"kind": "sequence", "table": name, "seq": seq}
    finally:
        conn.close()


def export_lines(scenario_dir: Path) -> Iterator[str]:
    """The scenario's JSON lines (without the truth: `export_truth`)."""
    meta = json.loads((scenario_dir / "scenario.json").read_text(encoding="utf-8"))
    yield _line({"kind": "header", "format": FORMAT, "task": meta.get("task"), "seed": meta.get("seed"),
                 "scenario": meta})
    for obj in _db_lines(scenario_dir / "scenario.db"):
        yield _line(obj)
    world = json.loads((scenario_dir / "world.json").read_text(encoding="utf-8"))
    yield _line({"kind": "schedules", "world": world})
    for turn in yaml.safe_load((scenario_dir / "turns.yaml").read_text(encoding="utf-8")) or []:
        yield _line({"kind": "inbox", "turn": turn})
    handbook = scenario_dir / "handbook"
    if handbook.is_dir():
        for path in sorted(p for p in handbook.rglob("*") if p.is_file()):
            yield _line({"kind": "handbook", "path": path.relative_to(handbook).as_posix(),
                         "text": path.read_text(encoding="utf-8")})
    yield _line({"kind": "end"})


def export_scenario(scenario_dir: Path, out: Path, truth_out: Path | None = None) -> int:
    """Write `out` (the scenario's lines) and, if asked, `truth_out`; returns the number of lines."""
    n = 0
    with open(out, "w", encoding="utf-8") as fh:
        for text in export_lines(scenario_dir):
            fh.write(text + "\n")
            n += 1
    if truth_out is not None:
        truth_path = scenario_dir / "truth.json"
        truth = json.loads(truth_path.read_text(encoding="utf-8")) if truth_path.exists() else {}
        truth_out.write_text(_line({"kind": "truth", "format": TRUTH_FORMAT, "truth": truth}) + "\n", encoding="utf-8")
    return n


def _objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        for n, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except ValueError as exc:
                raise ScenarioJsonlError(f"{path}:{n}: not JSON ({exc})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
                raise ScenarioJsonlError(f"{path}:{n}: not an object with a kind")
            yield n, obj


def _optional_schemas() -> dict[str, Any]:
    """Table name -> the `MetaData` of bb-erp's optional schemas (created by a domain's `install`,
    e.g. the information-flow tables), so a scenario that installed one imports back."""
    import sys

    from sqlalchemy import MetaData

    import erp_service.domains  # noqa: F401 — every domain module, and so every schema
    from erp_service.kernel.schema import metadata

    out: dict[str, Any] = {}
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("erp_service.") or module is None:
            continue
        for value in vars(module).values():
            if isinstance(value, MetaData) and value is not metadata:
                for table in value.tables:
                    out.setdefault(table, value)
    return out


def _create_optional(conn: sqlite3.Connection, md: Any) -> None:
    """Create an optional schema's tables and indexes as `erp_service.kernel.db.create_schema` does."""
    from sqlalchemy.dialects import sqlite
    from sqlalchemy.schema import CreateIndex, CreateTable

    dialect = sqlite.dialect()
    for table in md.sorted_tables:
        conn.execute(str(CreateTable(table).compile(dialect=dialect)))
    for index in sorted((i for t in md.sorted_tables for i in t.indexes), key=lambda i: str(i.name)):
        conn.execute(str(CreateIndex(index).compile(dialect=dialect)))


def import_scenario(path: Path, out_dir: Path, truth: Path | None = None) -> Path:
    """Rebuild a scenario directory in bb-erp from its JSON lines (and truth); returns `out_dir`.

    The database is created with bb-erp's own schema; every table and column of the lines must
    exist there (a line bb-erp cannot hold is refused, never dropped)."""
    from erp_service.kernel.db import Database

    if not Path(path).is_file():
        raise ScenarioJsonlError(f"{path}: no such file")
    if out_dir.exists():
        raise ScenarioJsonlError(f"{out_dir} exists; refusing to overwrite it")
    out_dir.mkdir(parents=True)
    db_path = out_dir / "scenario.db"
    Database.create(db_path).close()
    conn = sqlite3.connect(db_path)
    optional = _optional_schemas()
    columns: dict[str, list[str]] = {}
    turns: list[Any] = []
    header: dict[str, Any] | None = None
    ended = False
    try:
        for n, obj in _objects(path):
            kind = obj["kind"]
            if header is None and kind != "header":
                raise ScenarioJsonlError(f"{path}:{n}: the first line must be the header")
            if kind == "header":
                if obj.get("format") != FORMAT or header is not None:
                    raise ScenarioJsonlError(f"{path}:{n}: not a {FORMAT} header")
                header = obj
            elif kind == "table":
                name, cols = str(obj["name"]), list(obj["columns"])
                have = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
                if not have and name in optional:  # a schema the scenario installed
                    _create_optional(conn, optional[name])
                    have = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
                if have != cols:
                    raise ScenarioJsonlError(f"{path}:{n}: table {name!r} with columns {cols} is not bb-erp's ({have})")
                columns[name] = cols
            elif kind == "row":
                row_cols = columns.get(str(obj.get("table")))
                values = obj.get("values")
                if row_cols is None or not isinstance(values, list) or len(values) != len(row_cols):
                    raise ScenarioJsonlError(f"{path}:{n}: a row of an undeclared table or of the wrong width")
                names = ", ".join(f'"{c}"' for c in row_cols)
                conn.execute(f'INSERT INTO "{obj["table"]}" ({names}) VALUES ({", ".join("?" for _ in row_cols)})',
                             [_value_in(v) for v in values])
            elif kind == "sequence":
                conn.execute("DELETE FROM sqlite_sequence WHERE name = ?", (obj["table"],))
                conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (obj["table"], obj["seq"]))
            elif kind == "schedules":
                (out_dir / "world.json").write_text(json.dumps(obj["world"], indent=2, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
            elif kind == "inbox":
                turns.append(obj["turn"])
            elif kind == "handbook":
                rel = Path(str(obj["path"]))
                if rel.is_absolute() or ".." in rel.parts:
                    raise ScenarioJsonlError(f"{path}:{n}: handbook path {rel} leaves the handbook")
                dest = out_dir / "handbook" / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(str(obj["text"]), encoding="utf-8")
            elif kind == "end":
                ended = True
            else:
                raise ScenarioJsonlError(f"{path}:{n}: unknown kind {kind!r}")
        if not ended or header is None:
            raise ScenarioJsonlError(f"{path}: no end line: the file is cut short")
        conn.commit()
    except BaseException:
        conn.close()
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    conn.close()
    (out_dir / "turns.yaml").write_text(yaml.safe_dump(turns, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (out_dir / "scenario.json").write_text(json.dumps(header["scenario"], indent=2) + "\n", encoding="utf-8")
    if truth is not None:
        obj = next((o for _, o in _objects(truth)), {})
        if obj.get("format") != TRUTH_FORMAT:
            raise ScenarioJsonlError(f"{truth}: not a {TRUTH_FORMAT} file")
        (out_dir / "truth.json").write_text(json.dumps(obj["truth"], indent=2) + "\n", encoding="utf-8")
    return out_dir
