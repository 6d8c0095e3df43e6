"""What a publication bundle must keep out, gathered from a campaign's records.

Credentials: every ERP user's API token (each final database's `tokens` table, each scenario's
`agent_token`), the real provider keys a model-access declaration names (read here, on the
publishing host, only to be redacted), and the shapes of keys and tokens (redaction.py).
Restricted values: for every task whose checks declare restricted information-flow classes
(`disclose_restricted` with `classes`), the values of those classes in the campaign's final
databases — and since the tasks of one company share its records, they are redacted from every
file of the bundle, whichever task's attempt holds them.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from orchestrator.publish.redaction import RestrictedValue, Secrets

DISCLOSURE_RULE = "disclose_restricted"
DEFAULT_CLASSES = ("vendor_bank",)  # the rule's own default when a check names none


def restricted_classes(task: str) -> list[str]:
    """The information-flow classes a task's checks declare restricted (empty: none declared)."""
    from tasks.registry import load_task

    out: set[str] = set()
    for check in load_task(task).checks:
        if getattr(check, "rule", None) == DISCLOSURE_RULE:
            params = getattr(check, "params", None) or {}
            out.update(params.get("classes") or DEFAULT_CLASSES)
    return sorted(out)


def judged_checks(task: str) -> list[str]:
    """Names of a task's checks that judge restricted values (its `disclose_restricted` checks)."""
    from tasks.registry import load_task

    return [str(c.name) for c in load_task(task).checks if getattr(c, "rule", None) == DISCLOSURE_RULE]


def _connect(db: Path) -> sqlite3.Connection:
    from orchestrator.grading.projections import connect_ro

    conn = connect_ro(db)
    conn.row_factory = sqlite3.Row
    return conn


def db_restricted(db: Path, classes: list[str]) -> list[RestrictedValue]:
    """The restricted values of `classes` in a database, by the grader's own query."""
    from orchestrator.grading.audit import AuditContext
    from orchestrator.grading.rules.disclosure import CLASS_TABLES, restricted_values

    conn = _connect(db)
    try:
        ctx = AuditContext(events=[], db=conn, agent_user="", agent_token_id=None)
        usable = [c for c in classes if all(ctx.has_table(t) for t in CLASS_TABLES.get(c, ()))]
        return [RestrictedValue(r.cls, r.owner, r.value, r.kind) for r in restricted_values(ctx, usable)]
    finally:
        conn.close()


def db_references(db: Path) -> set[str]:
    """The references (record ids) a database holds, as the disclosure rule blanks them before
    matching (so the redactor reads an attempt's texts as the grader does)."""
    from orchestrator.grading.audit import AuditContext
    from orchestrator.grading.rules.disclosure import known_ids

    conn = _connect(db)
    try:
        return known_ids(AuditContext(events=[], db=conn, agent_user="", agent_token_id=None))
    finally:
        conn.close()


def db_tokens(db: Path) -> list[str]:
    """Every API token the ERP database holds (bb-erp's `tokens` table: id, token, user, status)."""
    conn = _connect(db)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='tokens'").fetchone():
            return []
        cols = [r[1] for r in conn.execute("PRAGMA table_info(tokens)")]
        col = next((c for c in ("secret", "token") if c in cols), cols[1] if len(cols) > 1 else None)
        return [str(r[0]) for r in conn.execute(f'SELECT "{col}" FROM tokens')] if col else []
    finally:
        conn.close()


def model_access_keys(path: Path) -> list[str]:
    """The real keys a model-access file points at (env variable or key file), as the gateway
    would read them; none for a fake provider or when the source is not set on this host."""
    from orchestrator.model_access import ModelAccessError, load_model_access

    try:
        access = load_model_access(path)
    except ModelAccessError:
        return []
    out = []
    for provider in access.providers.values():
        try:
            key = provider.read_key()
        except ModelAccessError:
            continue
        if key:
            out.append(key)
    return out


def gather(label_root: Path, attempt_folders: list[tuple[str, Path]], *, model_access: tuple[Path, ...] = ()) -> Secrets:
    """The secrets of a campaign: `attempt_folders` is (task, folder) of every ledger line."""
    secrets = Secrets()
    classes: dict[str, list[str]] = {}
    for task, _ in attempt_folders:
        if task not in classes:
            classes[task] = restricted_classes(task)
    declared = sorted({c for cs in classes.values() for c in cs})
    for _task, folder in attempt_folders:
        db = folder / "final.db"
        if db.is_file():
            for token in db_tokens(db):
                secrets.add_credential(token)
            if declared:
                secrets.add_restricted(db_restricted(db, declared))
        meta = _scenario_meta(folder)
        secrets.add_credential(meta.get("agent_token"))
        scenario_db = _scenario_db(folder)
        if scenario_db is not None:
            for token in db_tokens(scenario_db):
                secrets.add_credential(token)
            if declared:
                secrets.add_restricted(db_restricted(scenario_db, declared))
    for path in model_access:
        for key in model_access_keys(path):
            secrets.add_credential(key)
    return secrets


def _scenario_dir(folder: Path) -> Path | None:
    try:
        data = json.loads((folder / "attempt.json").read_text())
    except (OSError, ValueError):
        return None
    value = data.get("scenario_dir") if isinstance(data, dict) else None
    return Path(value) if isinstance(value, str) and Path(value).is_dir() else None


def _scenario_meta(folder: Path) -> dict[str, Any]:
    sdir = _scenario_dir(folder)
    if sdir is None:
        return {}
    try:
        meta = json.loads((sdir / "scenario.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _scenario_db(folder: Path) -> Path | None:
    sdir = _scenario_dir(folder)
    return sdir / "scenario.db" if sdir is not None and (sdir / "scenario.db").is_file() else None
