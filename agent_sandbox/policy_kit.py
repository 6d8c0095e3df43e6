"""What the scripted policies of several task packs share: how they send writes and how they
read a clause of the handbook in the workspace. Policies run in the agent container, where only
`agent_sandbox` is importable, so the shared pieces live here."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sandbox.client import ErpClient, ErpError, ErpUnreachable


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
        """POST one write (see the class docstring for the keyed and the blind way)."""
        return self._send(self.client.post, path, body)

    def patch(self, path: str, body: Any = None) -> Any:
        """PATCH one write; it takes the next key of the same sequence as `post`."""
        return self._send(self.client.patch, path, body)

    def _send(self, send: Callable[..., Any], path: str, body: Any) -> Any:
        self.n += 1
        if self.keyed:
            return send(path, body, key=f"{self.prefix}-t{self.turn}-w{self.n}")
        try:
            return send(path, body)
        except ErpError as exc:
            if exc.status not in (502, 503, 504):
                raise
        try:
            return send(path, body)  # the mistake: a blind re-send after a failure
        except ErpError as exc:
            if exc.status >= 500:
                raise
            return None  # the first send had gone through after all; carry on regardless


def handbook_clause(workspace: Path, clause: str) -> str:
    """The paragraph of the workspace's handbook that starts with the clause id in bold, from
    whichever of its files holds it (no pack's policy assumes the file a clause is rendered in)."""
    folder = workspace / "handbook"
    files = sorted(folder.glob("*.md"))
    for md in files:
        for para in md.read_text(encoding="utf-8").split("\n\n"):
            if para.startswith(f"**{clause}**"):
                return para
    # Say what the folder held: an empty or missing handbook is the workspace's fault, not the clause's.
    held = ", ".join(p.name for p in files) if files else ("no .md file" if folder.is_dir() else "missing")
    raise RuntimeError(f"clause {clause} is not in the handbook ({folder}: {held})")


def checked_write(send: Callable[[], Any], recorded: Callable[[], Any], tries: int = 4) -> Any:
    """Check-before-resend (GEN-1.3 in the handbooks): send a write without a key; after a 5xx
    or no answer (the write may have committed), look for its effect with `recorded()` (None,
    False or empty when the ERP holds nothing) and send again only when it is absent. Returns the write's
    answer, or what `recorded()` found. The alt policies write this way; the oracle uses keys."""
    for _ in range(tries):
        try:
            return send()
        except ErpUnreachable:
            pass
        except ErpError as exc:
            if exc.status < 500:
                raise
        found = recorded()
        if found:  # None, False and empty all mean "not there": a False predicate once ended the retry
            return found
    raise RuntimeError("a write kept failing and the ERP holds no trace of it")


def send_checked(client: ErpClient, method: str, path: str, body: Any, recorded: Callable[[], Any]) -> Any:
    """`checked_write` of one request `method path` with JSON `body`."""
    return checked_write(lambda: client.call(method, path, json_body=body), recorded)


def probe_write(fn: Callable[..., Any], *args: Any) -> None:
    """Send a write the ERP may refuse (a probe of a hard control) and carry on either way; a
    server error (5xx) is not a refusal and is raised."""
    try:
        fn(*args)
    except ErpError as exc:
        if exc.status >= 500:
            raise
