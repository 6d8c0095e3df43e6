"""Ledger canonical form, export, and `export --verify` tamper detection (no containers)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from campaign_support import declare, write_attempt

from orchestrator.campaign.export import export_label, planned_identities, verify_label
from orchestrator.campaign.ledger import LEDGER_FILE
from orchestrator.cli import main
from orchestrator.hashing import canonical_json

CELLS = ["oracle:payment-run", "null:payment-run", "neg:blind-retry:payment-run"]


@pytest.fixture
def label(tmp_path: Path) -> tuple[Path, str]:
    decl = declare(tmp_path, "demo", CELLS, [0, 1], 2)
    for ident in planned_identities(decl):
        write_attempt(tmp_path, "demo", ident, passed=ident.system == "oracle",
                      durations=(0.5 + ident.seed, 1.5 + ident.rep))
    export_label(tmp_path, "demo")
    return tmp_path, "demo"


def test_ledger_lines_are_canonical_sorted_and_complete(label):
    root, name = label
    text = (root / name / LEDGER_FILE).read_text()
    lines = text.splitlines()
    assert len(lines) == 12 and text.endswith("\n")
    parsed = [json.loads(t) for t in lines]
    assert all(canonical_json(p) == t for p, t in zip(parsed, lines, strict=False))
    keys = [(p["identity"]["task"], p["identity"]["system"], p["identity"]["seed"], p["identity"]["rep"]) for p in parsed]
    assert keys == sorted(keys)
    first = parsed[0]
    for field in ("attempt_id", "identity", "outcome", "passed", "breach", "checks", "breaches", "probes", "errors",
                  "retries", "turns", "usage", "hashes"):
        assert field in first
    assert set(first["turns"][0]) >= {"n", "date", "exit_code", "timed_out", "duration_s"}
    assert len(first["hashes"]["result_json"]) == 64 and len(first["hashes"]["final_db"]) == 64
    assert list(first["hashes"]["workspace"]) == ["notes.md"]


def test_export_is_deterministic(label):
    root, name = label
    before = {f: (root / name / f).read_bytes() for f in (LEDGER_FILE, "summary.json")}
    export_label(root, name)
    assert before == {f: (root / name / f).read_bytes() for f in (LEDGER_FILE, "summary.json")}


def test_verify_passes_then_fails_on_an_edited_line(label, capsys):
    root, name = label
    assert verify_label(root, name).ok
    assert main(["export", "--verify", name, "--runs-root", str(root)]) == 0
    path = root / name / LEDGER_FILE
    lines = path.read_text().splitlines()
    rec = json.loads(lines[4])
    rec["passed"] = not rec["passed"]
    lines[4] = canonical_json(rec)  # still canonical: only the hashes can tell
    path.write_text("\n".join(lines) + "\n")
    report = verify_label(root, name)
    assert not report.ok
    assert any(p.startswith("line 5:") and "edited" in p for p in report.problems), report.problems
    assert any("summary.json" in p for p in report.problems)
    assert main(["export", "--verify", name, "--runs-root", str(root)]) == 1
    assert "line 5" in capsys.readouterr().err


def test_verify_catches_non_canonical_reordered_missing_and_result_edits(label):
    root, name = label
    path = root / name / LEDGER_FILE
    good = path.read_text()
    lines = good.splitlines()

    path.write_text(json.dumps(json.loads(lines[0]), indent=None) + "\n" + "\n".join(lines[1:]) + "\n")
    assert any("line 1: not in canonical form" in p for p in verify_label(root, name).problems)

    path.write_text("\n".join([lines[1], lines[0]] + lines[2:]) + "\n")
    assert any("out of ledger order" in p for p in verify_label(root, name).problems)

    path.write_text("\n".join(lines[:-1]) + "\n")
    assert any("matrix incomplete" in p for p in verify_label(root, name).problems)

    path.write_text("\n".join(lines + [lines[-1]]) + "\n")
    assert any("duplicate attempt" in p for p in verify_label(root, name).problems)

    path.write_text(good)
    assert verify_label(root, name).ok
    # an edited result.json behind an untouched ledger
    ident = planned_identities(json.loads((root / name / "campaign.json").read_text()))[0]
    res = ident.folder(root, name) / "result.json"
    data = json.loads(res.read_text())
    data["passed"] = not data["passed"]
    res.write_text(json.dumps(data))
    problems = verify_label(root, name).problems
    assert any(p.startswith("line 1: differs from attempt folder") for p in problems), problems
    assert verify_label(root, name, check_folders=False).ok


def test_retries_are_recorded_in_the_ledger(tmp_path: Path):
    decl = declare(tmp_path, "r", ["oracle:payment-run"], [0], 1)
    ident = planned_identities(decl)[0]
    final = ident.folder(tmp_path, "r")
    write_attempt(tmp_path, "r", ident, final.with_name("rep-1.try-1"), outcome="infra_error", passed=False,
                  error={"phase": "erp_start", "message": "container exited 137"})
    final.with_name("rep-1.try-2").mkdir(parents=True)  # a try cut short by SIGKILL
    write_attempt(tmp_path, "r", ident)
    export_label(tmp_path, "r")
    line = json.loads((tmp_path / "r" / LEDGER_FILE).read_text())
    assert [r["outcome"] for r in line["retries"]] == ["infra_error", "interrupted"]
    assert line["retries"][0]["errors"][0]["phase"] == "erp_start"
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["cells"]["oracle:payment-run"]["retries"] == 2
    assert verify_label(tmp_path, "r").ok


def test_verify_orders_interface_cells_as_the_ledger_does(tmp_path: Path):
    """`X:task` and `X:task#mcp` cells: the ledger is written in `AttemptIdentity.sort_key` order
    (interface before seed), so `export --verify` must check the order by that key too (issue 34:
    it checked without the interface and called a correct ledger out of order)."""
    from orchestrator.campaign.ledger import line_sort_key
    from orchestrator.identity import AttemptIdentity

    decl = declare(tmp_path, "iface", ["oracle:payment-run", "oracle:payment-run#mcp"], [0, 1], 1)
    idents = planned_identities(decl)
    assert {i.interface for i in idents} == {"cli", "mcp"}
    for ident in idents:
        write_attempt(tmp_path, "iface", ident, passed=True)
    export_label(tmp_path, "iface")
    lines = [json.loads(t) for t in (tmp_path / "iface" / LEDGER_FILE).read_text().splitlines()]
    assert [ln["attempt_id"] for ln in lines] == [i.attempt_id for i in sorted(idents, key=AttemptIdentity.sort_key)]
    assert [line_sort_key(ln) for ln in lines] == sorted(line_sort_key(ln) for ln in lines)
    report = verify_label(tmp_path, "iface")
    assert report.ok, report.problems
