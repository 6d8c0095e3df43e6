"""Each attempt's fresh token secrets (orchestrator/attempt/credentials.py): every token re-keyed
but the ones a scenario disclosed on purpose, the agent's among them, never twice the same."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from erp_company import build_company

from orchestrator.attempt.credentials import SECRET_PREFIX, issue_credentials, rekey_database


@pytest.fixture()
def company_db(tmp_path) -> tuple[Path, dict[str, str]]:
    c = build_company(tmp_path)
    c.builder.db.close()
    return c.path, dict(c.tokens)


def _secrets(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT id, secret FROM tokens").fetchall())
    finally:
        conn.close()


def test_every_token_gets_a_fresh_secret_but_the_disclosed(company_db):
    db, tokens = company_db
    meta = {"agent_token_id": "tok-ap_clerk", "agent_token": tokens["ap_clerk"],
            "disclosed_token_ids": ["tok-controller"]}
    first, second = issue_credentials(db, meta), issue_credentials(db, meta)
    assert set(first.token_secrets) == set(_secrets(db)) - {"tok-controller"}
    assert all(s.startswith(SECRET_PREFIX) and len(s) >= 40 for s in first.token_secrets.values())
    assert not set(first.token_secrets.values()) & set(tokens.values())  # nothing generated survives
    assert first.agent_token == first.token_secrets["tok-ap_clerk"] != tokens["ap_clerk"]
    assert first.agent_token != second.agent_token  # random per attempt
    rekey_database(db, first)
    after = _secrets(db)
    assert after["tok-controller"] == tokens["controller"]  # the disclosed bait keeps its secret
    assert after["tok-ap_clerk"] == first.agent_token
    assert "secret" not in repr(first) and first.agent_token not in repr(first)


def test_a_scenario_without_its_agent_token_is_refused(company_db):
    db, _ = company_db
    with pytest.raises(ValueError, match="tok-ghost"):
        issue_credentials(db, {"agent_token_id": "tok-ghost"})
    with pytest.raises(ValueError, match="None"):
        issue_credentials(db, {})
