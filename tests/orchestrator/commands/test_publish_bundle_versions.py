"""versions.json lists a docker campaign's images by digest (issue 21).

The digests come from what the attempts recorded (each attempt.json's `backend.images`, as the
docker backend describes itself: role -> tag and engine id), gathered into provenance and written
per role beside the declared content-hash tag: no engine is asked, so the record stands on a
publishing host that never had the images.
"""
from __future__ import annotations

import json
from pathlib import Path

from orchestrator.campaign.provenance import image_digests
from orchestrator.publish.versions import build_versions, image_versions

TAGS = {"base": "pb-base:2d933b9db499", "erp": "pb-erp:43e26508a169", "agent": "pb-agent:0374b3721e38",
        "gateway": "pb-gateway:91c0ffee1234"}
ERP_ID = "sha256:" + "e" * 64
AGENT_ID = "sha256:" + "a" * 64
CLAUDE_ID = "sha256:" + "c" * 64


def _attempt(root: Path, folder: str, images: dict[str, dict[str, str]]) -> None:
    path = root / folder / "seed-0" / "rep-1" / "attempt.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"backend": {"backend": "docker", "isolation": "runc", "images": images}}))


def test_a_docker_campaigns_images_are_listed_by_digest(tmp_path: Path) -> None:
    root = tmp_path / "pilot"
    _attempt(root, "oracle__payment-run", {"erp": {"tag": TAGS["erp"], "id": ERP_ID},
                                           "agent": {"tag": TAGS["agent"], "id": AGENT_ID}})
    _attempt(root, "null__payment-run", {"erp": {"tag": TAGS["erp"], "id": ERP_ID},
                                         "agent": {"tag": TAGS["agent"], "id": AGENT_ID}})
    # a system with its own image (not one of the declared roles) ran in one attempt
    _attempt(root, "claude-code__payment-run", {"erp": {"tag": TAGS["erp"], "id": ERP_ID},
                                                "agent": {"tag": "pb-agent-claude:77aa", "id": CLAUDE_ID}})
    declaration = {"label": "pilot", "backend": "docker", "isolation": "runc", "tasks": {},
                   "sources": {"images": TAGS, "parts": {}}}
    versions = build_versions(declaration, {"images": image_digests(root)}, engine=False)
    images = versions["images"]
    assert images["by_role"]["erp"] == {"tag": TAGS["erp"], "digests": [ERP_ID]}
    assert images["by_role"]["agent"] == {"tag": TAGS["agent"], "digests": [AGENT_ID]}
    assert images["by_role"]["base"]["digests"] == [] and images["by_role"]["gateway"]["tag"] == TAGS["gateway"]
    assert images["other"] == {"pb-agent-claude:77aa": [CLAUDE_ID]}
    assert images["missing_digests"] == []
    json.dumps(versions)  # what publish writes


def test_a_missing_digest_and_two_digests_of_one_tag_are_said() -> None:
    other_agent = "sha256:" + "b" * 64
    out = image_versions({"erp": TAGS["erp"], "agent": TAGS["agent"]}, {TAGS["agent"]: [other_agent, AGENT_ID]},
                         backend="docker", engine_ids={TAGS["erp"]: ERP_ID, TAGS["agent"]: None})
    assert out["by_role"]["agent"]["digests"] == [AGENT_ID, other_agent]  # two builds ran under one tag: both shown
    assert out["by_role"]["erp"] == {"tag": TAGS["erp"], "digests": [], "engine_id": ERP_ID}
    assert out["missing_digests"] == ["erp"]  # no attempt recorded it: named, not passed off by the host's id
    local = image_versions({"erp": TAGS["erp"]}, {}, backend="local", engine_ids="no container engine (DockerException)")
    assert "missing_digests" not in local and local["engine_note"].startswith("no container engine")
