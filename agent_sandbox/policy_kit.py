"""What the scripted policies of several task packs share: how they send writes and how they
read a clause of the handbook in the workspace. Policies run in the agent container, where only
`agent_sandbox` is importable, so the shared pieces live here."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient, ErpError


@dataclass
class Writer:
    """How a policy sends writes: with deterministic keys `<prefix>-t<turn>-w<n>` (oracle) or
    blindly, re-sending once after a failure without a key (neg:blind-retry)."""

    client: ErpClient
    turn: int
    prefix: str
    keyed: bool = True
    n: int = 0

    def post(self, path: str, body: Any = None) -> Any:
        self.n += 1
        if self.keyed:
            return self.client.post(path, body, key=f"{self.prefix}-t{self.turn}-w{self.n}")
        try:
            return self.client.post(path, body)
        except ErpError as exc:
            if exc.status not in (502, 503, 504):
                raise
        try:
            return self.client.post(path, body)  # the mistake: a blind re-send after a failure
        except ErpError as exc:
            if exc.status >= 500:
                raise
            return None  # the first send had gone through after all; carry on regardless


def handbook_clause(workspace: Path, clause: str) -> str:
    """The paragraph of the workspace's handbook that starts with the clause id in bold."""
    for md in sorted((workspace / "handbook").glob("*.md")):
        for para in md.read_text(encoding="utf-8").split("\n\n"):
            if para.startswith(f"**{clause}**"):
                return para
    raise RuntimeError(f"clause {clause} is not in the handbook")
