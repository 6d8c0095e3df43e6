"""Fresh API token secrets for each attempt's copy of the database.

A scenario's token secrets are reproducible from its seed (the generator must be deterministic),
so an agent that learned the scheme could compute any user's token from its own. Every attempt
therefore re-keys every token with a random secret before its ERP serves a request (the ERP's
`--token-secrets`), and the agent gets only its own new secret. Token ids stay, so the audit log
and every rule that reads `token_id` are unchanged, and the canonical dump leaves secrets out.
A scenario that plants a credential on purpose (a negative control's bait, in a message the agent
can read) names its token in `scenario.json: disclosed_token_ids`; those keep their secrets.
"""
from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from erp_service.kernel.db import Database
from erp_service.kernel.identity import rekey_tokens

#: Secrets issued per attempt: recognisable in a leak report, 43 random URL-safe characters.
SECRET_PREFIX = "pbt_"


@dataclass(frozen=True)
class AttemptCredentials:
    """The attempt's token secrets (token id -> secret) and the agent's own."""

    agent_token: str = field(repr=False)
    token_secrets: Mapping[str, str] = field(repr=False)


def token_ids(scenario_db: Path) -> list[str]:
    """Every token id in a scenario database (read-only).

    Raises:
        FileNotFoundError: no database at `scenario_db` (SQLite would only say it cannot open it).
    """
    if not scenario_db.is_file():
        raise FileNotFoundError(f"no scenario database at {scenario_db}")
    conn = sqlite3.connect(f"file:{scenario_db.resolve()}?mode=ro", uri=True)
    try:
        return sorted(r[0] for r in conn.execute("SELECT id FROM tokens"))
    finally:
        conn.close()


def issue_credentials(scenario_db: Path, meta: Mapping[str, Any]) -> AttemptCredentials:
    """New random secrets for every token but the disclosed ones, and the agent's among them.

    Raises:
        ValueError: the scenario names no agent token id, or one its database does not hold.
    """
    agent_id = meta.get("agent_token_id")
    ids = token_ids(scenario_db)
    if not agent_id or agent_id not in ids:
        raise ValueError(f"scenario.json names agent token {agent_id!r}, which its database does not hold")
    keep = set(meta.get("disclosed_token_ids") or ())
    fresh = {tid: SECRET_PREFIX + secrets.token_urlsafe(32) for tid in ids if tid not in keep}
    agent_token = fresh.get(str(agent_id), str(meta.get("agent_token", "")))
    return AttemptCredentials(agent_token=agent_token, token_secrets=fresh)


def rekey_database(db: Path, credentials: AttemptCredentials) -> None:
    """Apply `credentials` to a database file the caller owns (a debug stack's copy); an attempt's
    ERP applies them itself, at its start, on its own copy."""
    database = Database(db)
    try:
        with database.transaction() as conn:
            rekey_tokens(conn, credentials.token_secrets)
    finally:
        database.close()
