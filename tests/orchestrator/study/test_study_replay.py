"""`export --verify --replay` (issue 39, item 3): every attempt's final database re-derived from its
audit log on a fresh copy of the scenario — oracle, null and negative controls, payment-run under
`lost-writes` included — and an altered audit log named with its first diverging request.

The campaign is the real one shared with the publication tests (tests/support/publish_campaign.py:
the local backend, real ERP and policies, seed 0).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.study.replay import read_audit_log, replay_attempt

pytestmark = pytest.mark.slow  # the shared publication campaign


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    from publish_campaign import campaign

    return campaign(tmp_path_factory)


def _copy(camp, tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(camp.root, runs / camp.label, symlinks=True)
    return runs


def _folder(runs: Path, label: str, cell_folder: str) -> Path:
    return next((runs / label / cell_folder).glob("seed-*/rep-*"))


def _rewrite(audit: Path, fn) -> int:
    """Apply `fn` to the first agent write row it accepts; return that row's id."""
    rows = read_audit_log(audit)
    for row in rows:
        if row["channel"] == "api" and row["method"] != "GET" and row["outcome"] == "ok" and fn(row):
            audit.write_text("".join(json.dumps(r) + "\n" for r in rows))
            return int(row["id"])
    raise AssertionError("no row to alter")


def test_every_attempt_replays_to_its_canonical_hash(camp, capsys) -> None:
    code = main(["export", "--verify", "--replay", camp.label, "--runs-root", str(camp.runs)])
    out = capsys.readouterr()
    assert code == 0, out.err
    replayed = int(out.out.split("replay: ")[1].split()[0])
    assert replayed == len(camp.folders()) == 7


def test_lost_writes_attempt_replays(camp) -> None:
    """The faulted run: lost responses committed (replayed like any row), failed-before ones never
    reached the ERP (nothing to replay); the same canonical hash."""
    from orchestrator.inputs import load_inputs

    folder = next(f for f in camp.folders() if "blind-retry" in str(f))
    faults = [json.loads(t) for t in (folder / "faults.jsonl").read_text().splitlines() if t.strip()]
    assert {f["kind"] for f in faults} >= {"lost_response"}
    result = json.loads((folder / "result.json").read_text())
    ident = json.loads((folder / "attempt.json").read_text())
    inputs = load_inputs(__import__("orchestrator.cells", fromlist=["parse_cell"]).parse_cell(ident["cell"]), 0)
    got = replay_attempt(inputs.scenario.db, inputs.scenario.world, read_audit_log(folder / "audit.jsonl"),
                         str(inputs.scenario.meta["grading_date"]))
    assert got.divergence is None and got.requests > 0
    assert got.canonical_sha256 == result["hashes"]["canonical_db"]


def _alter_body(row) -> bool:
    body = json.loads(row["request"]) if row.get("request") else None
    if not isinstance(body, dict) or not body:
        return False
    key = sorted(body)[0]
    body[key] = "altered" if not isinstance(body[key], str) or body[key] != "altered" else "changed"
    row["request"] = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return True


def _alter_consistently(row) -> bool:
    """The body and what the row says it did, both changed: the replay follows the log row by row."""
    if not _alter_body(row):
        return False
    row["after"] = None
    row["outcome"], row["status"], row["error_code"] = "invalid", 422, "invalid"
    return True


def _drop(row) -> bool:
    row["path"] = row["path"] + "-gone"
    return True


@pytest.mark.parametrize("alter", [_alter_body, _alter_consistently, _drop], ids=["body", "consistent", "path"])
def test_an_altered_audit_log_is_named(camp, tmp_path: Path, alter) -> None:
    """The attempt's own replay (the whole label's, with only the altered one named, is the
    removed-row test's and the bundle test's)."""
    from orchestrator.identity import AttemptIdentity
    from orchestrator.study.evidence import replay_folders

    runs = _copy(camp, tmp_path)
    target = _folder(runs, camp.label, "oracle__payment-run__lost-writes")
    altered_id = _rewrite(target / "audit.jsonl", alter)
    result = json.loads((target / "result.json").read_text())
    ident = AttemptIdentity(**{k: result[k] for k in AttemptIdentity.model_fields})
    rel = target.relative_to(runs / camp.label).as_posix()
    problems = replay_folders([(ident, target, rel)]).problems
    assert len(problems) == 1 and rel in problems[0]
    assert "diverges at audit id" in problems[0]
    diverged = int(problems[0].split("audit id ")[1].split(":")[0])
    assert diverged >= altered_id  # at the altered request, or (altered consistently) where its effect shows


def test_a_removed_audit_row_is_named(camp, tmp_path: Path, capsys) -> None:
    runs = _copy(camp, tmp_path)
    target = _folder(runs, camp.label, "oracle__payment-run")
    rows = read_audit_log(target / "audit.jsonl")
    victim = next(r for r in rows if r["channel"] == "api" and r["method"] == "POST" and r["outcome"] == "ok")
    (target / "audit.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r is not victim))
    assert main(["export", "--verify", "--replay", camp.label, "--runs-root", str(runs)]) == 1
    err = capsys.readouterr().err
    assert f"{target.relative_to(runs / camp.label).as_posix()}: the replay of its audit log diverges at audit id" in err


def test_replay_does_not_depend_on_token_secrets(camp, tmp_path: Path) -> None:
    """Requests are sent with the secret their token id has in the replay's own copy: a scenario
    whose every secret was re-keyed (as each attempt's copy is) replays to the same audit trail."""
    import secrets
    import sqlite3

    from orchestrator.cells import parse_cell
    from orchestrator.inputs import load_inputs

    folder = next(f for f in camp.folders() if f.parent.parent.name == "oracle__payment-run")
    inputs = load_inputs(parse_cell("oracle:payment-run"), 0)
    rekeyed = tmp_path / "rekeyed.db"
    shutil.copyfile(inputs.scenario.db, rekeyed)
    conn = sqlite3.connect(rekeyed)
    for (token_id,) in conn.execute("SELECT id FROM tokens").fetchall():
        conn.execute("UPDATE tokens SET secret = ? WHERE id = ?", ("ngv_" + secrets.token_hex(24), token_id))
    conn.commit()
    conn.close()
    rows = read_audit_log(folder / "audit.jsonl")
    got = replay_attempt(rekeyed, inputs.scenario.world, rows, str(inputs.scenario.meta["grading_date"]))
    assert got.requests > 0
    assert got.divergence is None  # every row as recorded: same actors, token ids, outcomes, effects


def test_bundle_replays_from_its_own_files(camp, tmp_path: Path, capsys) -> None:
    """From a publication bundle (its audit logs redacted where they show restricted values): every
    attempt whose own requests were not redacted replays to the hash its result records; the
    others are listed, not failed."""
    bundle = tmp_path / "bundle"
    assert main(["publish", camp.label, "--out", str(bundle), "--runs-root", str(camp.runs),
                 "--systems", str(camp.work / "systems.yaml"), "--model-access", str(camp.work / "access.yaml"),
                 "--model-access", str(camp.model_access)]) == 0
    capsys.readouterr()
    assert main(["export", "--verify", "--replay", str(bundle)]) == 0
    out = capsys.readouterr().out
    redacted = json.loads((bundle / "redaction.json").read_text())["redacted"]
    assert any(r.endswith("audit.jsonl") for r in redacted)  # the redactor did touch audit logs
    replayed = int(out.split("replay: ")[1].split()[0])
    skipped = int(out.split(" attempt(s) not replayed")[0].rsplit("note: ", 1)[1]) if "not replayed" in out else 0
    assert replayed + skipped == len(camp.folders())
    plain = [f.relative_to(camp.root).as_posix() for f in camp.folders() if "need-to-know" not in f.parent.parent.name]
    assert len(plain) == 5 and replayed >= len(plain), out  # every payment-run attempt, lost-writes ones included
    for rel in plain:
        assert f"{rel} (" not in out, out  # none of them among the not replayed
    # The bundle's own audit log altered (and the manifest made to match): named.
    target = next(f for f in bundle.glob("oracle__payment-run__lost-writes/seed-*/rep-*"))
    altered = _rewrite(target / "audit.jsonl", _alter_body)
    manifest = json.loads((bundle / "bundle.json").read_text())
    from orchestrator.publish.bundle import manifest_self_sha256
    from orchestrator.publish.files import sha256_file

    rel = f"{target.relative_to(bundle).as_posix()}/audit.jsonl"
    manifest["files"][rel]["sha256"] = sha256_file(target / "audit.jsonl")
    manifest["self_sha256"] = manifest_self_sha256(manifest)
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    assert main(["export", "--verify", "--replay", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert f"{target.relative_to(bundle).as_posix()}: the replay of its audit log diverges at audit id {altered}" in err
