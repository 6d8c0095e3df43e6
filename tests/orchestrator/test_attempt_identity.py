"""The attempt identity (orchestrator/identity.py) and the records that embed it (no containers).

One identity gives the attempt id, the folder and the ledger order; attempt.json and result.json
carry it, flat as contracts §9 lists the keys, and the ledger reads them as `ResultRecord`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from campaign_support import declare, result_dict, write_attempt
from pydantic import ValidationError

from orchestrator.attempt.records import AttemptRecord, ErrorRecord, ResultRecord
from orchestrator.campaign.declaration import (
    DECLARATION_FILE,
    CampaignDeclaration,
    DeclarationChanged,
    build_declaration,
    load_declaration,
    write_declaration,
)
from orchestrator.campaign.export import export_label, planned_identities, verify_label
from orchestrator.campaign.ledger import LEDGER_FILE, LedgerError, LedgerLine, build_line
from orchestrator.campaign.scheduler import set_aside, write_orchestrator_failure
from orchestrator.cells import Cell, parse_cell
from orchestrator.identity import AttemptIdentity, retry_dirs, try_folder
from orchestrator.paths import AttemptPaths


def _ident(cell: str = "oracle:payment-run", seed: int = 0, rep: int = 1, version: object = "1") -> AttemptIdentity:
    return AttemptIdentity.of(parse_cell(cell), seed, rep, version)


# Ids computed by the identity before it became one model (campaign/identity.py at d94040a): a
# label's ledger, its bundle and every published id depend on them never changing.
@pytest.mark.parametrize(("cell", "seed", "rep", "version", "attempt_id"), [
    ("oracle:payment-run", 0, 1, "1", "oracle__payment-run.s0.r1.3b4927f500"),
    ("null:payment-run+lost-writes", 3, 2, "2", "null__payment-run__lost-writes.s3.r2.af0eff0ead"),
    ("claude:p2p#mcp", 0, 1, "1", "claude__p2p__if-mcp.s0.r1.2cadc99146"),
])
def test_attempt_ids_are_the_ones_published_before(cell, seed, rep, version, attempt_id):
    assert _ident(cell, seed, rep, version).attempt_id == attempt_id
    assert _ident(cell, seed, rep, int(version)).attempt_id == attempt_id  # a pack's version is an int


def test_the_folder_is_the_identitys_and_every_part_uses_it(tmp_path: Path):
    cli, mcp = _ident("oracle:payment-run"), _ident("oracle:payment-run#mcp")
    assert cli.folder(tmp_path, "L") == tmp_path / "L" / "oracle__payment-run" / "seed-0" / "rep-1"
    assert mcp.folder(tmp_path, "L") == tmp_path / "L" / "oracle__payment-run__if-mcp" / "seed-0" / "rep-1"
    assert AttemptPaths.for_identity(tmp_path, "L", mcp).root == mcp.folder(tmp_path, "L")
    # the task version is in the id, never in the folder: one folder per (cell, seed, rep)
    assert _ident(version="2").folder(tmp_path, "L") == cli.folder(tmp_path, "L")
    assert _ident(version="2").attempt_id != cli.attempt_id


def test_earlier_tries_sit_beside_the_attempt_in_try_order(tmp_path: Path):
    folder = _ident().folder(tmp_path, "L")
    for _ in range(3):
        folder.mkdir(parents=True)
        set_aside(folder)
    assert retry_dirs(folder) == [try_folder(folder, j) for j in (1, 2, 3)]
    assert try_folder(folder, 2).name == "rep-1.try-2"


def test_the_sort_key_orders_by_interface_before_seed():
    """A plan with both `X:task` and `X:task#mcp` cells: cli before mcp, then seeds (issue 34's bug)."""
    plan = [_ident("oracle:payment-run#mcp", 0), _ident("oracle:payment-run", 1), _ident("oracle:payment-run", 0)]
    ordered = sorted(plan, key=AttemptIdentity.sort_key)
    assert [(i.interface, i.seed) for i in ordered] == [("cli", 0), ("cli", 1), ("mcp", 0)]


def test_the_identity_is_frozen_and_round_trips_through_its_mapping():
    ident = _ident("neg:blind-retry:payment-run+lost-writes#mcp", 2, 3)
    with pytest.raises(ValidationError):
        ident.seed = 4  # type: ignore[misc]
    assert AttemptIdentity.from_dict(ident.as_dict()) == ident
    assert "interface" not in _ident().as_dict() and _ident().as_dict()["cell"] == "oracle:payment-run"
    assert ident.cell == Cell("neg:blind-retry", "payment-run", "lost-writes", "mcp")
    with pytest.raises(ValidationError):
        AttemptIdentity(task="t", system="s", condition="clean", seed=0, rep=1, task_version="1", label="x")  # type: ignore[call-arg]


def test_records_embed_the_identity_and_write_it_flat():
    ident = _ident("oracle:payment-run#mcp", 1, 2)
    record = ResultRecord.model_validate(result_dict(ident, label="L"))
    data = record.to_json()
    assert record.identity == ident and record.attempt_id == ident.attempt_id
    assert {k: data[k] for k in ("attempt_id", "cell", "task", "system", "condition", "interface", "seed", "rep",
                                 "task_version", "label", "schema")} == {
        "attempt_id": ident.attempt_id, "cell": "oracle:payment-run#mcp", "task": "payment-run", "system": "oracle",
        "condition": "clean", "interface": "mcp", "seed": 1, "rep": 2, "task_version": "1", "label": "L", "schema": 2}
    assert "identity" not in data and data["run_id"].startswith("rt-")
    assert ResultRecord.model_validate(json.loads(json.dumps(data))) == record


def test_a_record_whose_id_is_not_its_identitys_is_refused():
    data = result_dict(_ident())
    data["seed"] = 7  # an edited identity: the recorded id no longer matches
    with pytest.raises(ValidationError, match="is not the id of the identity"):
        ResultRecord.model_validate(data)


def test_schema_1_records_still_read():
    """Before the identity was embedded: attempt_id was the try's id, task_version a number."""
    old = {"attempt_id": "oracle--payment-run-s0-r1-abcd1234", "cell": "oracle:payment-run", "system": "oracle",
           "task": "payment-run", "task_version": 1, "seed": 0, "rep": 1, "label": "L", "condition": "clean",
           "interface": "cli", "isolation": "docker", "backend": {}, "scenario_dir": "/s", "started_at": "t",
           "config": {}, "faults": None}
    record = AttemptRecord.model_validate(old)
    assert record.run_id == "oracle--payment-run-s0-r1-abcd1234"
    assert record.identity == _ident() and record.attempt_id == _ident().attempt_id


def test_the_ledger_line_is_built_from_the_result_record(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0], 1)
    ident = planned_identities(decl)[0]
    folder = write_attempt(tmp_path, "L", ident, probes=2)
    line = build_line(ident, folder)
    assert isinstance(line, LedgerLine)
    assert line.attempt_id == ident.attempt_id and line.run_id == "rt-payment-run-0-1" and line.ident == ident
    assert line.probes == 2 and [t.duration_s for t in line.turns] == [1.0, 2.0]
    assert LedgerLine.model_validate(line.to_json()) == line


def test_a_result_that_is_no_record_stops_the_ledger(tmp_path: Path):
    """JSON that is not a `ResultRecord` is never silently dropped from the ledger (nor scored)."""
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0], 1)
    ident = planned_identities(decl)[0]
    folder = write_attempt(tmp_path, "L", ident)
    data = json.loads((folder / "result.json").read_text())
    data["passed"] = "very"
    (folder / "result.json").write_text(json.dumps(data))
    with pytest.raises(LedgerError, match="not a result record"):
        build_line(ident, folder)
    other = _ident(seed=1)
    (folder / "result.json").write_text(json.dumps(result_dict(other)))  # another attempt's result
    with pytest.raises(LedgerError, match="records attempt"):
        build_line(ident, folder)


def test_a_failure_the_campaign_writes_is_a_result_record_the_ledger_reads(tmp_path: Path):
    decl = declare(tmp_path, "L", ["oracle:payment-run"], [0], 1)
    ident = planned_identities(decl)[0]
    folder = ident.folder(tmp_path, "L")
    folder.mkdir(parents=True)
    (folder / "attempt.json").write_text(json.dumps({"run_id": "oracle--payment-run-s0-r1-feed0001"}))
    write_orchestrator_failure(folder, ident, RuntimeError("daemon went away"), label="L")
    record = ResultRecord.model_validate_json((folder / "result.json").read_text())
    assert record.outcome == "infra_error" and record.written_by == "campaign" and record.run_id.endswith("feed0001")
    assert record.error == ErrorRecord(phase="campaign", kind="infra_error", exception="RuntimeError",
                                       message="daemon went away", traceback=record.error.traceback if record.error else None)
    export_label(tmp_path, "L")
    line = json.loads((tmp_path / "L" / LEDGER_FILE).read_text())
    assert line["outcome"] == "infra_error" and line["errors"][0]["message"] == "daemon went away"
    assert verify_label(tmp_path, "L").ok


def test_the_declaration_is_a_typed_model_that_writes_the_same_file(tmp_path: Path):
    decl = build_declaration(label="L", cells=[parse_cell("oracle:payment-run"), parse_cell("oracle:payment-run#mcp")],
                             seeds=[0, 1], reps=2, task_info={"payment-run": {"version": "3", "tree_sha256": "t"}},
                             systems={"oracle": {"kind": "policy"}}, turn_timeout_s=None, backend="docker",
                             volatile={"concurrency": 2})
    write_declaration(tmp_path / "L", decl)
    data = json.loads((tmp_path / "L" / DECLARATION_FILE).read_text())
    assert sorted(data) == ["backend", "cells", "conditions", "isolation", "label", "reps", "schema", "seeds",
                            "systems", "tasks", "timeouts", "volatile"]
    assert data["cells"] == [{"cell": "oracle:payment-run", "system": "oracle", "task": "payment-run", "condition": "clean"},
                             {"cell": "oracle:payment-run#mcp", "system": "oracle", "task": "payment-run",
                              "condition": "clean", "interface": "mcp"}]
    loaded = load_declaration(tmp_path / "L")
    assert isinstance(loaded, CampaignDeclaration) and loaded.to_json() == data
    assert [i.attempt_id for i in loaded.planned()] == [
        i.attempt_id for i in sorted(loaded.planned(), key=AttemptIdentity.sort_key)]
    assert len(loaded.planned()) == 8 and {i.task_version for i in loaded.planned()} == {"3"}


def test_a_declaration_that_is_no_campaign_is_refused(tmp_path: Path):
    (tmp_path / "L").mkdir()
    (tmp_path / "L" / DECLARATION_FILE).write_text(json.dumps({"label": "L", "cells": "oracle:payment-run"}))
    with pytest.raises(DeclarationChanged, match="not a campaign declaration"):
        load_declaration(tmp_path / "L")
