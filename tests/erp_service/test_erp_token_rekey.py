"""Token re-keying (`serve --token-secrets`, kernel/identity.py rekey_tokens): the real serve
process refuses the old secrets and accepts the new ones, tokens left out keep theirs, a bad
file stops the start, and the canonical hash does not see secrets."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from erp_finance_support import finance_company
from erp_server import CONTROL_TOKEN, REPO, auth, start_server

from erp_service.canonical import canonical_hash
from erp_service.kernel.db import Database
from erp_service.kernel.identity import rekey_tokens

NEW = "pbt_" + "a" * 40


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    c = finance_company(tmp_path_factory.mktemp("rekey-template"))
    c.builder.db.close()
    return c.path, dict(c.tokens)


def _copy(template, tmp_path: Path, name: str = "company.db") -> Path:
    dest = tmp_path / name
    shutil.copy(template[0], dest)
    return dest


def test_serve_applies_new_secrets_and_refuses_the_old(tmp_path, template):
    _, tokens = template
    user, other = sorted(tokens)[:2]
    secrets_file = tmp_path / "tokens.json"
    secrets_file.write_text(json.dumps({f"tok-{user}": NEW}))
    s = start_server(tmp_path, _copy(template, tmp_path), extra_args=["--token-secrets", str(secrets_file)])
    try:
        assert s.agent.get("/whoami", headers=auth(NEW)).json()["data"]["id"] == user
        assert s.agent.get("/whoami", headers=auth(tokens[user])).status_code == 401  # the generated secret
        assert s.agent.get("/whoami", headers=auth(tokens[other])).status_code == 200  # not re-keyed: kept
    finally:
        s.stop()


@pytest.mark.parametrize("content, why", [
    (json.dumps({"tok-nobody": NEW}), "no token"),
    (json.dumps({"tok-USER": "short"}), "shorter than"),
    ("not json", "unreadable token secrets"),
    ('["a", "b"]', "JSON object of strings"),
])
def test_a_bad_secrets_file_stops_the_start(tmp_path, template, content, why):
    _, tokens = template
    secrets_file = tmp_path / "tokens.json"
    secrets_file.write_text(content.replace("USER", sorted(tokens)[0]))
    token_file = tmp_path / "control.token"
    token_file.write_text(CONTROL_TOKEN)
    proc = subprocess.run([sys.executable, "-m", "erp_service", "serve", "--db", str(_copy(template, tmp_path)),
                           "--control-token-file", str(token_file), "--token-secrets", str(secrets_file)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert why in proc.stdout and '"ready"' not in proc.stdout


def test_rekey_checks_its_input(tmp_path, template):
    _, tokens = template
    a, b = sorted(tokens)[:2]
    db = Database(_copy(template, tmp_path))
    try:
        with pytest.raises(ValueError, match="distinct"), db.transaction() as conn:
            rekey_tokens(conn, {f"tok-{a}": NEW, f"tok-{b}": NEW})
        with pytest.raises(ValueError, match="no token"), db.transaction() as conn:
            rekey_tokens(conn, {"tok-ghost": NEW})
    finally:
        db.close()


def test_canonical_hash_does_not_see_secrets(tmp_path, template):
    _, tokens = template
    first, second = _copy(template, tmp_path, "a.db"), _copy(template, tmp_path, "b.db")
    for path, prefix in ((first, "pbt_x"), (second, "pbt_y")):
        db = Database(path)
        try:
            with db.transaction() as conn:
                rekey_tokens(conn, {f"tok-{u}": prefix + u.ljust(40, "0") for u in tokens})
        finally:
            db.close()
    assert canonical_hash(first) == canonical_hash(second) == canonical_hash(template[0])
