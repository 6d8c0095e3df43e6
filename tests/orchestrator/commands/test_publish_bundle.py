"""`orchestrate publish` and `orchestrate export --verify DIR` on a real campaign (issue 21).

The campaign (tests/support/publish_campaign.py, local backend) has two packs, a fault condition,
negative controls, the need-to-know pack's restricted bank details mailed out by its negative
control, and a model-calling agent that prints its gateway virtual key and a real provider key.
It is built once per test process (test_report_views builds it too) and published once per module.

In `make test`: the bundle holds what a reader needs; a copy in another folder verifies; altering
a file (one of each kind), removing one or adding one fails naming it; no credential or
restricted value is anywhere in the bundle (every text file, every database cell), while the
original records do hold them. In `make test-heavy`: every file of the bundle altered in turn,
and the full re-grade of every final database to the same verdicts.
"""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.publish.bundle import BUNDLE_FILE
from orchestrator.publish.verify import verify_bundle

pytestmark = pytest.mark.slow  # the campaign (shared with test_report_views) and one publication


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    from publish_campaign import campaign

    c = campaign(tmp_path_factory)
    out = tmp_path_factory.mktemp("bundles") / "pub-2026-12"
    code = main(["publish", c.label, "--out", str(out), "--runs-root", str(c.runs), "--systems", str(c.work / "systems.yaml"),
                 "--model-access", str(c.work / "access.yaml"), "--model-access", str(c.model_access)])
    assert code == 0
    return c, out


# The records' own hashes, hex ids and clocks: their digit runs are not values.
_OWN_NUMBERS = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-f]{40,64}|(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,})(?![0-9A-Za-z])"
                          r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")


# Text that may hold digits in another form: spelled digits, or something encoded.
_MAYBE_ENCODED = re.compile(r"(?i)\b(?:zero|oh|one|two|three|four|five|six|seven|eight|nine|ten|double|triple)\b"
                            r"|(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Z])(?=[A-Za-z0-9+/_-]*[a-z])[A-Za-z0-9+/_-]{12,}={0,2}"
                            r"|(?:3\d[\s:,-]?){5,}|%3\d|&#|\\[ux]|=3\d")


def _strings(value) -> list[str]:
    """The texts a reader reads in a JSON value, one at a time (as the grader reads messages)."""
    if isinstance(value, str):
        if value.lstrip()[:1] not in ("{", "["):
            return [value]  # a JSON text inside a string is an object or a list (else it is text)
        try:
            inner = json.loads(value)
        except ValueError:
            return [value]
        return _strings(inner) if isinstance(inner, (dict, list)) else [value]
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return []
    if isinstance(value, int):
        return [f"#int {value}"]  # a number column: only a whole value counts (see the test)
    items = value.values() if isinstance(value, dict) else value
    return [s for v in items for s in _strings(v)]


def _raw(folder: Path) -> dict[str, str]:
    """Every file of a folder as its raw bytes (latin-1: one character per byte)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes().decode("latin-1")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _texts(folder: Path) -> dict[str, list[str]]:
    """Every file of a folder as the texts in it: JSON value by value, other text line by line, a
    database cell by cell, and any file's raw bytes as well (so nothing hides in a format). A
    database cell already read in another database is not read again (the attempts' databases
    share most of their rows)."""
    out = {}
    seen_cells: set = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        texts = [raw.decode("latin-1")]
        if raw.startswith(b"SQLite format 3"):
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                    for row in conn.execute(f'SELECT * FROM "{table}"'):
                        for v in row:
                            if v is None or v in seen_cells:
                                continue
                            seen_cells.add(v)
                            texts += _strings(v.decode("latin-1") if isinstance(v, bytes) else v)
            finally:
                conn.close()
        else:
            text = raw.decode("utf-8", errors="replace")
            for line in (text.splitlines() if path.suffix != ".json" else [text]):
                try:
                    texts += _strings(json.loads(line)) if path.suffix in (".json", ".jsonl") else [line]
                except ValueError:
                    texts.append(line)
        out[path.relative_to(folder).as_posix()] = texts
    return out


def test_bundle_holds_what_a_reader_needs(bundle) -> None:
    c, out = bundle
    for name in ("campaign.json", "attempts.jsonl", "summary.json", "provenance.json", "versions.json", "conditions.json",
                 "redaction.json", "report.html", BUNDLE_FILE):
        assert (out / name).is_file(), name
    versions = json.loads((out / "versions.json").read_text())
    assert versions["orchestrator"]["commit"] and versions["grader"]
    assert set(versions["tasks"]) == {"payment-run", "payment-run-need-to-know"}
    assert all(t["tree_sha256"] and t["version"] and t["handbook_sha256"] for t in versions["tasks"].values())
    assert versions["price_table"]["version"] and versions["price_table"]["sha256"]
    assert versions["models"]["tiny-model-agent"]["providers"]["anthropic"]["models"] == ["fake-claude"]
    agent = versions["systems"]["tiny-model-agent"]
    assert agent["matches_declaration"] is True and agent["definition"]["model"]["provider"] == "anthropic"
    assert versions["systems"]["oracle"] == {"declared": {"kind": "policy"}}
    declared = json.loads((c.root / "campaign.json").read_text())["sources"]["images"]
    assert {r: e["tag"] for r, e in versions["images"]["by_role"].items()} == declared  # by digest: test_publish_bundle_versions
    conditions = json.loads((out / "conditions.json").read_text())
    assert "lost_response:POST /payment-runs@1" in conditions["conditions"]["lost-writes"]["payment-run"]["faults"]
    assert conditions["turn_budgets"]["payment-run"]["turns"][0]["budget_s"] > 0
    manifest = json.loads((out / BUNDLE_FILE).read_text())
    oracle = "oracle__payment-run/seed-0/rep-1"
    for name in ("result.json", "audit.jsonl", "faults.jsonl", "turns.jsonl", "final.db", "logs/runtime.jsonl"):
        assert f"{oracle}/{name}" in manifest["files"], name
    need = "neg-share_bank_details__payment-run-need-to-know/seed-0/rep-1"
    assert manifest["files"][f"{need}/final.db"]["mode"] == "redacted" and manifest["withheld"] == {}
    assert manifest["regrade_from_placeholders"] == {"payment-run-need-to-know": {
        "checks": ["no restricted data disclosed"], "classes": ["vendor_bank"]}}
    assert manifest["regrade_excludes"] == {}  # the publisher's own re-grade reproduced every disclosure verdict
    ledger = [json.loads(t) for t in (out / "attempts.jsonl").read_text().splitlines()]
    by_cell = {ln["identity"]["cell"]: ln for ln in ledger}
    assert manifest["files"][f"{need}/final.db"]["original_sha256"] == by_cell[
        "neg:share_bank_details:payment-run-need-to-know"]["hashes"]["final_db"]
    assert (out / "report_files").is_dir() and len(list((out / "report_files").glob("*.html"))) == len(ledger)
    # traces keep their event order: every audit row and turn, in order, redacted or not
    for path in sorted(out.glob("*/seed-*/rep-*/audit.jsonl")) + sorted(out.glob("*/seed-*/rep-*/turns.jsonl")):
        rel = path.relative_to(out)
        def keys(p: Path) -> list:
            return [(r.get("id"), r.get("n"), r.get("business_date") or r.get("date"))
                    for r in map(json.loads, p.read_text().splitlines())]
        assert keys(path) == keys(c.root / rel), rel
    leak = out / "neg-share_bank_details__payment-run-need-to-know/seed-0/rep-1/audit.jsonl"
    assert manifest["files"][leak.relative_to(out).as_posix()]["mode"] == "redacted"


def test_the_adapter_settings_are_in_the_bundle(bundle) -> None:
    """Issue 31: a command system's harness, model and limits beside its usage, per turn (turns.jsonl,
    result.json), as declared (summary.json's cell), and on the report's attempt page."""
    c, out = bundle
    folder = out / "tiny-model-agent__payment-run" / "seed-0" / "rep-1"
    turns = [json.loads(t) for t in (folder / "turns.jsonl").read_text().splitlines()]
    assert turns and all(t["adapter"]["model"] == "fake-claude" and t["adapter"]["harness"] is None
                         and t["adapter"]["turn_timeout_s"] == t["budget_s"] and t["usage"]["source"] == "gateway"
                         for t in turns)
    assert [t["adapter"] for t in json.loads((folder / "result.json").read_text())["turns"]] == \
        [t["adapter"] for t in turns]
    summary = json.loads((out / "summary.json").read_text())
    declared = summary["cells"]["tiny-model-agent:payment-run"]["adapter"]
    assert declared["system"] == "tiny-model-agent" and declared["model"] == "fake-claude"
    assert summary["cells"]["oracle:payment-run"]["adapter"] is None  # a scripted policy has no adapter
    oracle_turns = (out / "oracle__payment-run/seed-0/rep-1/turns.jsonl").read_text().splitlines()
    assert all("adapter" not in json.loads(t) for t in oracle_turns)
    pages = [p.read_text() for p in (out / "report_files").glob("*.html")]
    assert sum("Adapter settings and limits" in page for page in pages) == 1


def test_no_credential_or_restricted_value_anywhere_in_the_bundle(bundle) -> None:
    from orchestrator.grading.restricted_forms import Forms, find_digits

    c, out = bundle
    virtual, tokens, restricted = c.virtual_keys(), c.tokens(), c.restricted()
    original = _raw(c.root)
    # The records did hold every kind of secret (else this test would prove nothing).
    assert virtual and any(v in t for v in virtual for t in original.values())
    assert any(c.real_key in t for t in original.values())
    assert tokens and any(tok in t for tok in tokens for t in original.values())
    leaked = "neg-share_bank_details__payment-run-need-to-know/seed-0/rep-1/audit.jsonl"
    assert any(r.value in original[leaked] for r in restricted)
    published = _texts(out)
    grams = {r: {v[i:i + 5] for v in (r.value, r.value[::-1]) for i in range(len(v) - 4)} for r in restricted}
    all_grams = set().union(*grams.values())
    checked: set[str] = set()
    for rel, texts in published.items():
        raw = texts[0]
        for secret in [*virtual, c.real_key, *tokens]:
            assert secret not in raw, f"{rel} holds a credential"
        assert "pbv-" not in raw and "sk-ant-" not in raw, rel
        plain_raw = _OWN_NUMBERS.sub(" ", raw)
        for r in restricted:
            assert r.value not in plain_raw, f"{rel}: restricted value of {r.owner} in full"
        for text in set(texts[1:]) - checked:
            checked.add(text)  # the attempts' databases share most of their cells: check each text once
            if text.startswith("#int "):
                # amounts and counts stored as numbers share five-digit runs with account numbers
                # by chance (210000 cents and routing 071000013): only a whole value is one
                assert all(text[5:].lstrip("-") != r.value.lstrip("0") for r in restricted), (rel, text)
                continue
            plain = _OWN_NUMBERS.sub(" ", text)
            if plain.replace("•", "").isascii() and not _MAYBE_ENCODED.search(plain):
                digits = "".join(re.findall(r"\d", plain))
                if not {digits[i:i + 5] for i in range(len(digits) - 4)} & all_grams:
                    continue  # no five digits of any value, in any order of the text's digits
            forms = Forms.of(plain)
            digits = "".join(re.findall(r"\d", " ".join(forms.all_canon())))
            present = {digits[i:i + 5] for i in range(len(digits) - 4)}
            for r in restricted:
                # find_digits reports only runs of five or more of a value's digits: skip the
                # values none of whose five-digit runs is in the text at all (the slow part)
                if not present & grams[r]:
                    continue
                hit = find_digits(forms.segments, r.value)
                assert hit is None, f"{rel}: {hit.length} digits of {r.owner}'s value: {text[:200]}"


def test_a_copy_in_another_folder_verifies_and_an_altered_file_is_named(bundle, tmp_path: Path, capsys) -> None:
    _c, out = bundle
    copy = tmp_path / "elsewhere" / "copy-of-bundle"
    shutil.copytree(out, copy)
    assert main(["export", "--verify", str(copy)]) == 0, capsys.readouterr().err
    assert f"verified bundle {copy}" in capsys.readouterr().out
    # One file of each kind: a hash-bound ledger, a redacted trace, a redacted database, a
    # workspace file, a report page and the manifest itself (every file: the heavy test below).
    need = "neg-share_bank_details__payment-run-need-to-know/seed-0/rep-1"
    for rel in ("attempts.jsonl", f"{need}/audit.jsonl", f"{need}/final.db",
                "tiny-model-agent__payment-run/seed-0/rep-1/workspace/notes.md", "report.html", BUNDLE_FILE):
        path = copy / rel
        raw = path.read_bytes()
        i = len(raw) // 2
        path.write_bytes(raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:])
        try:
            assert main(["export", "--verify", str(copy)]) == 1, f"altering {rel} went unnoticed"
            err = capsys.readouterr().err
            assert f"  {rel}: " in err, (rel, err[:400])
        finally:
            path.write_bytes(raw)
    assert verify_bundle(copy).ok


@pytest.mark.heavy  # every published database graded again (make test-heavy)
def test_a_copy_in_another_folder_verifies_and_regrades(bundle, tmp_path: Path, capsys) -> None:
    _c, out = bundle
    copy = tmp_path / "elsewhere" / "copy-of-bundle"
    shutil.copytree(out, copy)
    assert main(["export", "--verify", str(copy), "--regrade"]) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "re-graded to the same verdicts" in text
    assert "7 final database(s)" in text  # every attempt of both packs
    # need-to-know's disclosure check judges the values the bundle redacts: re-graded from their placeholders
    assert "2 check verdict(s) re-graded from the redaction's placeholders" in text
    assert "no restricted data disclosed" in text and "kept as recorded" not in text and "not re-gradable" not in text


NEED = "neg-share_bank_details__payment-run-need-to-know/seed-0/rep-1"
DISCLOSED = "no restricted data disclosed"


def test_the_disclosure_check_regrades_from_the_placeholders_and_can_fail(bundle, tmp_path: Path) -> None:
    from orchestrator.cells import parse_cell
    from orchestrator.inputs import load_inputs
    from orchestrator.publish.disclosure import attempt_differences, regrade_disclosure

    _c, out = bundle
    cell = parse_cell("neg:share_bank_details:payment-run-need-to-know")
    for name, folder in ((cell, out / NEED), (parse_cell("oracle:payment-run-need-to-know"),
                                              out / "oracle__payment-run-need-to-know/seed-0/rep-1")):
        assert attempt_differences(name, 0, folder) == {DISCLOSED: []}  # verdict, audit rows, owners, readers
    inputs = load_inputs(cell, 0)
    [got] = regrade_disclosure(inputs.task, inputs.scenario, out / NEED / "final.db", out / NEED / "audit.jsonl")
    assert (got.passed, got.breach) == (False, True)
    [finding] = got.findings
    assert finding.refs["owners"] == ["V-0101", "V-0102"] and finding.refs["readers"] == ["ben.carter"]
    # The verdict rests on the placeholders: without them in the mail the same database passes.
    copy = tmp_path / "copy"
    shutil.copytree(out / NEED, copy)
    conn = sqlite3.connect(copy / "final.db")
    try:
        changed = conn.execute("UPDATE audit_events SET \"after\" = replace(\"after\", '[restricted vendor_bank', "
                               "'[vendor_bank') WHERE \"after\" LIKE '%[restricted vendor_bank%'").rowcount
        conn.commit()
    finally:
        conn.close()
    assert changed >= 1
    [without] = regrade_disclosure(inputs.task, inputs.scenario, copy / "final.db", None)
    assert (without.passed, without.breach, without.findings) == (True, False, [])
    assert attempt_differences(cell, 0, copy)[DISCLOSED]  # and the publisher would have said so


@pytest.mark.heavy  # about sixty verifications of the whole bundle (make test-heavy)
def test_altering_any_file_fails_naming_it(bundle, tmp_path: Path) -> None:
    _c, out = bundle
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    assert verify_bundle(copy).ok
    files = sorted(p for p in copy.rglob("*") if p.is_file())
    assert len(files) > 50
    for path in files:
        rel = path.relative_to(copy).as_posix()
        raw = path.read_bytes()
        i = len(raw) // 2
        path.write_bytes(raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:] if raw else b"x")
        try:
            report = verify_bundle(copy)
            assert not report.ok, f"altering {rel} went unnoticed"
            assert any(p.startswith(rel + ":") for p in report.problems), (rel, report.problems[:3])
        finally:
            path.write_bytes(raw)
    assert verify_bundle(copy).ok


def test_removed_and_added_files_are_named(bundle, tmp_path: Path, capsys) -> None:
    _c, out = bundle
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "oracle__payment-run/seed-0/rep-1/faults.jsonl").unlink()
    (copy / "extra.txt").write_text("hello\n")
    assert main(["export", "--verify", str(copy)]) == 1
    err = capsys.readouterr().err
    assert "oracle__payment-run/seed-0/rep-1/faults.jsonl: missing" in err
    assert "extra.txt: not listed in bundle.json (added)" in err


def test_publish_refuses_a_folder_that_is_not_empty_and_an_unknown_label(bundle, tmp_path: Path, capsys) -> None:
    c, _out = bundle
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert main(["publish", c.label, "--out", str(tmp_path / "full"), "--runs-root", str(c.runs)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["publish", "nope", "--out", str(tmp_path / "new"), "--runs-root", str(c.runs)]) == 2
    assert "no campaign 'nope'" in capsys.readouterr().err
