"""A provider tool allowed on purpose (`model_access: provider_tools: [web_search]`, issue 30) is
part of what the campaign is: it reaches the gateway config, the system's identity in
campaign.json, and labels the cells in the summary and the report; the system's row is never
pooled with the same system without it. Without it, every identity is as it always was."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from campaign_support import declare, write_attempt

from orchestrator.attempt.inputs import systems_identity
from orchestrator.campaign.declaration import CampaignDeclaration, plan_attempts, write_declaration
from orchestrator.campaign.ledger import build_line
from orchestrator.campaign.summary import compute_summary
from orchestrator.cells import parse_cell
from orchestrator.model_access import ModelAccessError, load_model_access
from orchestrator.report.label_page import cells_table
from orchestrator.services.gateway import GatewayLaunch

EXAMPLES = Path(__file__).resolve().parents[3] / "agent_sandbox" / "examples"


def access_file(tmp_path: Path, name: str, **extra: object) -> Path:
    doc = yaml.safe_load((EXAMPLES / "model-access-fake.yaml").read_text())
    doc["providers"]["anthropic"]["fake_script"] = str(EXAMPLES / "fake-claude-payment-run.yaml")
    doc.update(extra)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def test_declared_provider_tools_reach_the_gateway_and_the_identity(tmp_path: Path) -> None:
    plain = load_model_access(access_file(tmp_path, "plain.yaml"))
    search = load_model_access(access_file(tmp_path, "search.yaml", provider_tools=["web_search"]))
    assert plain.provider_tools == () and "provider_tools" not in plain.identity()
    assert search.identity()["provider_tools"] == ["web_search"]
    launch = GatewayLaunch(attempt_id="a", access=search, virtual_key="v" * 30, control_token="t" * 30)
    assert launch.config_doc()["provider_tools"] == ["web_search"]
    assert "provider_tools" not in GatewayLaunch(attempt_id="a", access=plain, virtual_key="v" * 30,
                                                 control_token="t" * 30).config_doc()
    with pytest.raises(ModelAccessError, match="unknown provider tool"):
        load_model_access(access_file(tmp_path, "bad.yaml", provider_tools=["teleport"]))

    cells = [parse_cell("claude-code:payment-run")]
    without = systems_identity(cells, None, str(tmp_path / "plain.yaml"))["claude-code"]
    with_tools = systems_identity(cells, None, str(tmp_path / "search.yaml"))["claude-code"]
    assert "provider_tools" not in without and with_tools["provider_tools"] == ["web_search"]
    assert without["sha256"] != with_tools["sha256"]  # a different system, so a different campaign


def test_cells_are_labelled_and_never_pooled(tmp_path: Path) -> None:
    cell_texts = ["oracle:payment-run", "oracle-b:payment-run"]
    decl = declare(tmp_path, "L", cell_texts, [0], 1)
    # Two systems of one campaign, one of them allowed web_search (as a model-calling system would be).
    decl["systems"]["oracle-b"] = {"kind": "policy", "provider_tools": ["web_search"]}
    write_declaration(tmp_path / "L", CampaignDeclaration.model_validate(decl))
    planned = plan_attempts([parse_cell(c) for c in cell_texts], [0], 1, {"payment-run": "1"})
    lines = []
    for ident in planned:
        line = build_line(ident, write_attempt(tmp_path, "L", ident, passed=True))
        assert line is not None
        lines.append(line.to_json())
    summary = compute_summary(lines, decl)
    assert summary["cells"]["oracle-b:payment-run"]["provider_tools"] == ["web_search"]
    assert summary["cells"]["oracle:payment-run"]["provider_tools"] == []
    assert set(summary["systems"]) == {"oracle", "oracle-b~tools:web_search"}
    assert summary["systems"]["oracle-b~tools:web_search"]["attempts"] == 1
    assert "provider_tools" in summary["conventions"]
    html = cells_table(summary["cells"])
    assert "<th>provider tools</th>" in html and "web_search" in html and "none" in html
    json.dumps(summary)  # still plain JSON
