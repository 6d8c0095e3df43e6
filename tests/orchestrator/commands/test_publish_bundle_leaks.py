"""need-to-know's disclosure check re-graded from a bundle for every form of leak its controls make.

A local campaign of payment-run-need-to-know's leak controls — the bank details regrouped with
thin spaces and dashes (`neg:leak_reformatted`), only parts of each number beyond the last four
(`neg:leak_partial`), and the numbers appended to every vendor's contact field that all staff
read (`neg:leak_in_field`) — is published; re-grading the bundle reproduces every verdict, the
disclosure check's included (from the redaction's placeholders: none is kept as recorded), and
no value is in the bundle in any form the grader's matcher reads, while the records hold them.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.publish.bundle import BUNDLE_FILE

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a campaign of three attempts and a full re-grade (make test-heavy)

LABEL = "leaks"
CELLS = ["neg:leak_reformatted:payment-run-need-to-know", "neg:leak_partial:payment-run-need-to-know",
         "neg:leak_in_field:payment-run-need-to-know"]


def test_every_leak_form_regrades_from_the_bundle_and_no_value_is_in_it(tmp_path: Path, capsys) -> None:
    from orchestrator.publish.redaction import PLACEHOLDER, Secrets
    from orchestrator.publish.secrets import db_restricted

    runs = tmp_path / "runs"
    code = main(["campaign", "--backend", "local", "--label", LABEL, "--runs-root", str(runs), "--cells", ",".join(CELLS),
                 "--seeds", "0", "--reps", "1", "--concurrency", "2"])
    assert code in (0, 1), code
    lines = [json.loads(t) for t in (runs / LABEL / "attempts.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and all(ln["outcome"] == "graded" for ln in lines)
    results = sorted((runs / LABEL).glob("*/seed-0/rep-1/result.json"))
    assert len(results) == 3
    for path in results:  # each control breaches the disclosure check (what the re-grade must reproduce)
        [check] = [c for c in json.loads(path.read_text())["checks"] if c["name"] == "no restricted data disclosed"]
        assert check["breach"], path

    out = tmp_path / "bundle"
    assert main(["publish", LABEL, "--out", str(out), "--runs-root", str(runs)]) == 0
    manifest = json.loads((out / BUNDLE_FILE).read_text())
    assert manifest["regrade_excludes"] == {}
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(out, copy)
    capsys.readouterr()
    assert main(["export", "--verify", str(copy), "--regrade"]) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "3 final database(s) re-graded to the same verdicts" in text
    assert "3 check verdict(s) re-graded from the redaction's placeholders" in text and "kept as recorded" not in text

    secrets = Secrets()
    for folder in sorted((runs / LABEL).glob("*/seed-0/rep-1")):
        secrets.add_restricted(db_restricted(folder / "final.db", ["vendor_bank"]))
    assert secrets.restricted
    originals = [p for p in (runs / LABEL).glob("*/seed-0/rep-1/audit.jsonl")]
    assert all(secrets.found_in_file(p.name, p.read_text()) for p in originals)  # the records hold them
    for path in sorted(p for p in out.rglob("*") if p.is_file() and not p.read_bytes().startswith(b"SQLite")):
        assert secrets.found_in_file(path.name, path.read_text(errors="replace")) == [], path
    seen: set[str] = set()
    for db in sorted(out.glob("*/seed-0/rep-1/final.db")):
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    for v in row:
                        text = v.decode("latin-1") if isinstance(v, bytes) else v
                        if isinstance(text, str) and text not in seen:
                            seen.add(text)
                            assert secrets.found_in(text) == [], (db, table, text[:200])
        finally:
            conn.close()
    field = out / "neg-leak_in_field__payment-run-need-to-know/seed-0/rep-1/audit.jsonl"
    assert PLACEHOLDER.search(field.read_text())  # where the values were, their owners are named
