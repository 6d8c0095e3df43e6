"""The typed world file: every section an actor reads has a model, the ERP refuses an unknown
section or field at start (a real `python -m erp_service serve` process), and the generated
scenarios' world files validate and round-trip."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from erp_company import build_company
from repo_paths import REPO_ROOT

from erp_service.sim import WORLD_SECTIONS
from erp_service.world import World, WorldError, load_world, parse_world, world_json

REPO = REPO_ROOT
TOKEN = "control-token-0123456789abcdef"


def _serve(tmp_path: Path, world: dict) -> subprocess.CompletedProcess:
    company = build_company(tmp_path)
    company.builder.finish()
    (tmp_path / "world.json").write_text(json.dumps(world))
    (tmp_path / "control.token").write_text(TOKEN)
    return subprocess.run([sys.executable, "-m", "erp_service", "serve", "--db", str(company.path),
                           "--world", str(tmp_path / "world.json"), "--control-token-file",
                           str(tmp_path / "control.token")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("world, named", [
    ({"agent_users": ["ap_clerk"], "payment_run_aprover": {"user": "controller"}}, "'payment_run_aprover'"),
    ({"calls": [{"party_id": "V-0101", "number": "on_file", "transcrpt": "Hello"}]}, "'transcrpt' in calls[0]"),
])
def test_serve_refuses_a_misspelt_section_or_field(tmp_path, world, named):
    out = _serve(tmp_path, world)
    assert out.returncode == 2, out
    lines = out.stdout.splitlines()
    assert len(lines) == 1, lines                      # one clear line, no ready line
    event = json.loads(lines[0])
    assert event["event"] == "error" and named in event["detail"], event
    assert "bad world file" in event["detail"]


def test_every_section_read_has_a_model_and_errors_name_the_path():
    # The sections the actors read (grep `world.section(` in erp_service/domains) are declared.
    assert {"actors", "agent_users", "approvers", "calls", "customer_default", "customers", "escalations",
            "payment_run_approver", "receipt_reversals", "receipts", "vendor_default", "vendors",
            "warehouse"} <= set(WORLD_SECTIONS)
    with pytest.raises(WorldError, match=r"unknown field 'dlay' in vendors\.V-0101\.invoice"):
        parse_world({"vendors": {"V-0101": {"invoice": {"dlay": 2}}}})
    with pytest.raises(WorldError, match=r"unknown field 'bdy' in escalations\[0\]\.actions\[0\]$"):
        parse_world({"escalations": [{"reason": "other", "actions": [{"kind": "reply", "bdy": "x"}]}]})
    with pytest.raises(WorldError, match=r"warehouse\.reports\[0\]\.on"):
        parse_world({"warehouse": {"reports": [{"on": "10/12/2026"}]}})
    with pytest.raises(WorldError, match="expected a JSON object"):
        parse_world([])


def test_a_world_built_from_models_is_what_the_actors_read(tmp_path):
    from erp_service.domains.comms import CallScript
    from erp_service.domains.payments import PaymentRunApprover
    world = World(payment_run_approver=PaymentRunApprover(user="controller"),
                  calls=[CallScript(party_id="V-0101", start="2026-10-09", transcript="Hi")])
    world.agent_users = ["ap_clerk"]
    with pytest.raises(ValueError):
        world.agent_users = "ap_clerk"      # assignments are validated
    (tmp_path / "world.json").write_text(world_json(world))
    # Only what was set is written; `from` keeps its JSON name.
    assert json.loads((tmp_path / "world.json").read_text()) == {
        "agent_users": ["ap_clerk"], "payment_run_approver": {"user": "controller"},
        "calls": [{"party_id": "V-0101", "from": "2026-10-09", "transcript": "Hi"}]}
    assert load_world(tmp_path / "world.json").section("calls")[0]["from"] == "2026-10-09"


@pytest.mark.parametrize("slug", ["payment-run", "payment-run-need-to-know"])
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.heavy)])  # seed 1: one more generation
def test_generated_worlds_validate_and_round_trip(slug, seed):
    from orchestrator.scenarios.cache import ensure_scenario
    scenario = ensure_scenario(slug, seed, reference=False)
    text = Path(scenario.world).read_text()
    assert world_json(parse_world(json.loads(text))) == text
    assert load_world(scenario.world).data == json.loads(text)
