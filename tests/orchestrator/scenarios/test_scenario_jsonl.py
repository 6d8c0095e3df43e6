"""The JSON Lines scenario export (issue 39, item 4): exported and imported back into bb-erp to the
same canonical hash, the truth kept in its own file; what bb-erp cannot hold is refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from erp_service.canonical import canonical_hash
from orchestrator.scenarios.cache import ensure_scenario
from orchestrator.scenarios.jsonl import FORMAT, ScenarioJsonlError, export_scenario, import_scenario
from tasks.registry import list_tasks


def _round_trip(slug: str, tmp_path: Path) -> None:
    scenario = ensure_scenario(slug, 0, reference=False)
    lines, truth = tmp_path / "s.jsonl", tmp_path / "truth.jsonl"
    export_scenario(scenario.dir, lines, truth)
    out = import_scenario(lines, tmp_path / "back", truth)
    assert canonical_hash(out / "scenario.db") == canonical_hash(scenario.db)
    for name in ("world.json", "scenario.json", "truth.json"):
        assert json.loads((out / name).read_text()) == json.loads((scenario.dir / name).read_text()), name
    assert yaml.safe_load((out / "turns.yaml").read_text()) == yaml.safe_load((scenario.dir / "turns.yaml").read_text())
    for path in (scenario.dir / "handbook").rglob("*"):
        if path.is_file():
            assert (out / "handbook" / path.relative_to(scenario.dir / "handbook")).read_bytes() == path.read_bytes()
    # The truth is never in the scenario's own lines.
    kinds = {json.loads(t)["kind"] for t in lines.read_text().splitlines()}
    assert kinds >= {"header", "table", "row", "schedules", "inbox", "handbook", "end"}
    assert "truth" not in kinds
    assert json.loads(truth.read_text())["kind"] == "truth"


@pytest.mark.parametrize("slug", ["payment-run", "payment-run-need-to-know"])  # the latter installs an optional schema
def test_round_trip(slug: str, tmp_path: Path) -> None:
    _round_trip(slug, tmp_path)


@pytest.mark.heavy  # builds every pack's scenario (minutes each on a loaded machine); two packs above in make test
@pytest.mark.parametrize("slug", list_tasks())
def test_round_trip_every_pack(slug: str, tmp_path: Path) -> None:
    _round_trip(slug, tmp_path)


def test_sections_and_order(tmp_path: Path) -> None:
    scenario = ensure_scenario("payment-run", 0, reference=False)
    export_scenario(scenario.dir, tmp_path / "s.jsonl")
    objs = [json.loads(t) for t in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert objs[0]["kind"] == "header" and objs[0]["format"] == FORMAT and objs[0]["seed"] == 0
    assert objs[-1] == {"kind": "end"}
    sections = {o["name"]: o["section"] for o in objs if o["kind"] == "table"}
    assert sections["audit_events"] == "history" and sections["users"] == "master" and sections["vendors"] == "master"
    assert set(sections.values()) == {"history", "master", "documents"}
    assert not (tmp_path / "truth.jsonl").exists()  # no truth unless asked for


def _exported(tmp_path: Path) -> list[str]:
    scenario = ensure_scenario("payment-run", 0, reference=False)
    export_scenario(scenario.dir, tmp_path / "s.jsonl")
    return (tmp_path / "s.jsonl").read_text().splitlines()


def _mutate(lines: list[str], how: str) -> list[str]:
    objs = [json.loads(t) for t in lines]
    if how == "cut":
        return lines[:-1]
    if how == "unknown_table":
        objs.insert(1, {"kind": "table", "name": "no_such_table", "section": "documents", "columns": ["id"]})
    elif how == "wrong_columns":
        first = next(o for o in objs if o["kind"] == "table")
        first["columns"] = first["columns"][:-1]
    elif how == "wide_row":
        row = next(o for o in objs if o["kind"] == "row")
        row["values"].append("extra")
    elif how == "handbook_escape":
        hb = next(o for o in objs if o["kind"] == "handbook")
        hb["path"] = "../../escaped.md"
    elif how == "no_header":
        objs = objs[1:]
    elif how == "unknown_kind":
        objs.insert(1, {"kind": "surprise"})
    return [json.dumps(o) for o in objs]


@pytest.mark.parametrize("how", ["cut", "unknown_table", "wrong_columns", "wide_row", "handbook_escape",
                                 "no_header", "unknown_kind"])
def test_what_bb_erp_cannot_hold_is_refused(tmp_path: Path, how: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(_mutate(_exported(tmp_path), how)) + "\n")
    with pytest.raises(ScenarioJsonlError):
        import_scenario(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-built is left
    assert not (tmp_path.parent / "escaped.md").exists()


def test_a_changed_row_changes_the_hash(tmp_path: Path) -> None:
    """The hash is the proof of a faithful import: one value changed is a different scenario."""
    objs = [json.loads(t) for t in _exported(tmp_path)]
    row = next(o for o in objs if o["kind"] == "row" and o["table"] == "vendors")
    row["values"][1] = str(row["values"][1]) + " Ltd"
    changed = tmp_path / "changed.jsonl"
    changed.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    out = import_scenario(changed, tmp_path / "out")
    assert canonical_hash(out / "scenario.db") != canonical_hash(ensure_scenario("payment-run", 0, reference=False).db)
