"""What a label's results depend on beyond its cells: the sources of scenarios, verdicts and
policies, and the images the attempts run in (the `sources` part of campaign.json).

A resumed label must hold results of one version of each, so the declaration records:

- `parts`: a SHA-256 per shared source tree or file — every folder of `tasks/` that is not a
  pack (the company generator `tasks/northgate`, the check models `tasks/checks`), the task
  framework's modules (`tasks/*.py`), `erp_service`, `agent_sandbox` (the policies' client),
  the scenario cache's code (`orchestrator/scenarios`: how a scenario folder and its reference
  are written and read), the grader's sources
  (`orchestrator/grading`) and what an agent works through besides the ERP's API (`erp_mcp`,
  `erp_web`, `model_gateway`). The task packs' own trees are in `tasks.<id>`.
- `images`: the content-hash tags of the images the attempts run in (base, ERP, agent, model
  gateway), computed from their sources without asking the engine: a rebuilt image with other
  content gets another tag.

`describe_change` turns a changed key into a sentence saying what it means.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from orchestrator.hashing import tree_sha256

REPO_ROOT = Path(__file__).resolve().parents[2]
# Source trees and files outside the packs that change a scenario, a verdict or a policy's behaviour.
SHARED_TREES = ("erp_service", "agent_sandbox", "orchestrator/scenarios", "orchestrator/grading", "erp_mcp", "erp_web",
                "model_gateway")
# Images the attempts run in (a command system's own image is part of its definition).
IMAGE_ROLES = ("base", "erp", "agent", "gateway")
_SCENARIO_CODE = ("orchestrator/scenarios",)
_SKIP = ("__pycache__", ".")


def _is_pack(folder: Path) -> bool:
    return (folder / "task.yaml").exists()


def source_parts(repo: Path = REPO_ROOT) -> dict[str, str]:
    """`{relative path: SHA-256}` of every shared source tree and file (packs excluded)."""
    out: dict[str, str] = {}
    tasks = repo / "tasks"
    if tasks.is_dir():
        loose = sorted(p for p in tasks.iterdir() if p.is_file() and p.suffix == ".py")
        out["tasks/*.py"] = _files_sha256(loose, tasks)
        for d in sorted(p for p in tasks.iterdir() if p.is_dir()):
            if not d.name.startswith(_SKIP) and not _is_pack(d):
                out[f"tasks/{d.name}"] = tree_sha256(d)
    for rel in SHARED_TREES:
        if (repo / rel).is_dir():
            out[rel] = tree_sha256(repo / rel)
        elif (repo / rel).is_file():
            out[rel] = _files_sha256([repo / rel], repo)
    return out


def _files_sha256(files: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(base).as_posix().encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def image_tags() -> dict[str, str]:
    """The content-hash tags the current sources give the images every attempt runs in."""
    from orchestrator.images.tags import planned_tags  # lazily: the images package imports the Docker SDK

    tags = planned_tags()
    return {role: tags[role] for role in IMAGE_ROLES if role in tags}


def label_sources(repo: Path = REPO_ROOT, *, images: bool = True) -> dict[str, Any]:
    """The `sources` entry of campaign.json (see the module docstring)."""
    out: dict[str, Any] = {"parts": source_parts(repo)}
    if images:
        out["images"] = image_tags()
    return out


def describe_change(key: str) -> str | None:
    """What a change of declaration key `key` (dotted, as the diff reports it) means, or None."""
    if key == "sources":
        return "the label was declared without its sources' hashes, so its results cannot be shown to be of one version"
    if key.startswith("sources.parts."):
        part = key.removeprefix("sources.parts.")
        if part in _SCENARIO_CODE:
            return f"the scenario cache's code ({part}) changed: scenarios and references would mix two versions"
        return {
            "orchestrator/grading": "the grader's sources changed: verdicts would mix two grader versions",
            "erp_service": "the ERP changed: scenarios and counterparties would mix two ERP versions",
            "agent_sandbox": "the agent side changed (the policies' client, the turn entrypoint)",
            "erp_mcp": "the MCP server changed: attempts through MCP would mix two tool versions",
            "erp_web": "the ERP's web UI changed: attempts through it would mix two UI versions",
            "model_gateway": "the model gateway changed: model attempts would mix two gateway versions",
        }.get(part, f"shared task code under {part} changed: scenarios would mix two generator versions")
    if key.startswith("sources.images."):
        role = key.removeprefix("sources.images.")
        return f"the {role} image's content changed: attempts would run in two image versions"
    if key.startswith("tasks.") and key.endswith(".tree_sha256"):
        return "the task pack's files changed since the label was declared: results would mix two task trees"
    return None
