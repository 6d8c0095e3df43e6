"""The oracle's run of a scenario as recorded: the requests it made, the files it left, its hash.

The scenario cache keeps it beside the reference, host side only (contracts §10):

    <scenario>/oracle-run/
      requests.jsonl   the oracle's requests to the agent API, in the order the ERP audited them:
                       {turn, date, method, path, query (a read) | body (a write), idem_key,
                       status, outcome}
      workspace/       the files the oracle left in its workspace (the handbook it was given is
                       not among them)
      oracle.json      {canonical_db, turns: [{n, date, requests}], files}
      unavailable.txt  instead of the above when the run cannot be replayed (why)

It is taken from the reference run's own records (its audit stream and copied-out workspace), so
it is exactly what the oracle did at this seed. The harness oracle (orchestrator/harness_oracle/)
replays it through a real agent CLI. This module reads and writes the folder only: it imports
nothing of the runtime, so the runtime may read it and the cache may write it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ORACLE_RUN_DIR = "oracle-run"
REQUESTS_FILE = "requests.jsonl"
META_FILE = "oracle.json"
WORKSPACE_DIR = "workspace"
UNAVAILABLE_FILE = "unavailable.txt"
# The runtime copies the handbook into every workspace; the oracle did not write it.
GIVEN_FOLDERS = ("handbook",)
READ_METHODS = ("GET",)


class OracleRunError(ValueError):
    """An oracle run that cannot be recorded or replayed (a task or scenario bug)."""

    exit_class = "task_error"  # orchestrator.exit_codes.Failure


@dataclass(frozen=True)
class RecordedRequest:
    """One request the oracle sent to the agent API, as the ERP audited it."""

    turn: int
    date: str
    method: str
    path: str
    query: dict[str, str] | None  # a read's query parameters
    body: Any                      # a write's JSON body; None when it sent none
    idem_key: str | None
    status: int
    outcome: str

    @property
    def is_read(self) -> bool:
        return self.method in READ_METHODS

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"turn": self.turn, "date": self.date, "method": self.method, "path": self.path,
                               "idem_key": self.idem_key, "status": self.status, "outcome": self.outcome}
        if self.is_read:
            out["query"] = self.query or {}
        else:
            out["body"] = self.body
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RecordedRequest:
        return cls(turn=int(doc["turn"]), date=str(doc["date"]), method=str(doc["method"]), path=str(doc["path"]),
                   query=doc.get("query"), body=doc.get("body"), idem_key=doc.get("idem_key"),
                   status=int(doc["status"]), outcome=str(doc["outcome"]))


@dataclass(frozen=True)
class OracleRun:
    """A recorded oracle run: its requests in order, the files it left, its final canonical hash."""

    requests: tuple[RecordedRequest, ...]
    files: dict[str, bytes]
    canonical_db: str
    turns: tuple[tuple[int, str], ...]  # (n, date) of every turn of the scenario

    def of_turn(self, n: int) -> list[RecordedRequest]:
        """The requests of turn `n`, in order."""
        return [r for r in self.requests if r.turn == n]


def _request_of(row: dict[str, Any], turn_of: dict[str, int], where: str) -> RecordedRequest:
    date = str(row.get("business_date"))
    if date not in turn_of:
        raise OracleRunError(f"{where}: a request on {date}, which is no turn's date ({sorted(turn_of)})")
    method, path = str(row["method"]), str(row["path"])
    text = row.get("request")
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:  # the audit keeps at most REQUEST_TEXT_LIMIT characters of a request
        raise OracleRunError(f"{where}: {method} {path}: its audited request is truncated or not JSON; "
                             "it cannot be replayed") from None
    if method in READ_METHODS:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise OracleRunError(f"{where}: {method} {path}: a read's query is not a mapping of strings: {text!r}")
        query, body = value, None
    else:
        query, body = None, value
    return RecordedRequest(turn=turn_of[date], date=date, method=method, path=path, query=query, body=body,
                           idem_key=row.get("idem_key"), status=int(row.get("status") or 0),
                           outcome=str(row.get("outcome")))


def requests_from_audit(audit_jsonl: Path, turns: list[tuple[int, str]],
                        agent_token_id: str | None) -> list[RecordedRequest]:
    """The agent's requests in an attempt's audit stream (channel `api`), each with its turn.

    Every request on the agent API of an oracle attempt is the oracle's; one under another token
    is a bug of the recording and refused, as is a request outside every turn's date."""
    dates = [d for _, d in turns]
    if len(set(dates)) != len(dates):
        raise OracleRunError(f"turns share a date ({dates}): requests cannot be told apart by turn")
    turn_of = {d: n for n, d in turns}
    out = []
    with open(audit_jsonl, encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("channel") != "api":
                continue
            where = f"{audit_jsonl}:{i}"
            if agent_token_id is not None and row.get("token_id") != agent_token_id:
                raise OracleRunError(f"{where}: a request under token {row.get('token_id')!r}, not the agent's")
            out.append(_request_of(row, turn_of, where))
    return out


def workspace_files(workspace: Path) -> dict[str, bytes]:
    """The regular files an agent left in a copied-out workspace, by relative path (the handbook
    it was given and symlinks left out)."""
    out: dict[str, bytes] = {}
    if not workspace.is_dir():
        return out
    for p in sorted(workspace.rglob("*")):
        rel = p.relative_to(workspace)
        if rel.parts[0] in GIVEN_FOLDERS or p.is_symlink() or not p.is_file():
            continue
        out[rel.as_posix()] = p.read_bytes()
    return out


def record_oracle_run(attempt_dir: Path, turns: list[tuple[int, str]], agent_token_id: str | None,
                      dest: Path) -> None:
    """Write `dest` (an oracle-run folder) from an oracle attempt's folder (audit.jsonl,
    workspace/, final.db)."""
    from erp_service.canonical import canonical_hash

    requests = requests_from_audit(attempt_dir / "audit.jsonl", turns, agent_token_id)
    files = workspace_files(attempt_dir / "workspace")
    dest.mkdir(parents=True)
    with open(dest / REQUESTS_FILE, "w", encoding="utf-8") as fh:
        for r in requests:
            fh.write(json.dumps(r.to_json(), sort_keys=True, ensure_ascii=False) + "\n")
    for rel, data in files.items():
        target = dest / WORKSPACE_DIR / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    meta = {"canonical_db": canonical_hash(attempt_dir / "final.db"),
            "turns": [{"n": n, "date": d, "requests": sum(r.turn == n for r in requests)} for n, d in turns],
            "files": sorted(files)}
    (dest / META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def record_unavailable(dest: Path, reason: str) -> None:
    """Write `dest` saying why the oracle's run could not be recorded (the scenario stays usable;
    only the harness oracle of it is refused, with this reason)."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / UNAVAILABLE_FILE).write_text(reason + "\n", encoding="utf-8")


def load_oracle_run(folder: Path) -> OracleRun:
    """Read an oracle-run folder; `OracleRunError` when it is missing, incomplete or unavailable."""
    if (folder / UNAVAILABLE_FILE).is_file():
        reason = (folder / UNAVAILABLE_FILE).read_text(encoding="utf-8").strip()
        raise OracleRunError(f"{folder}: the oracle's run could not be recorded: {reason}")
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise OracleRunError(f"{folder}: no recorded oracle run (the scenario cache writes it with the reference)")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    with open(folder / REQUESTS_FILE, encoding="utf-8") as fh:
        requests = tuple(RecordedRequest.from_json(json.loads(line)) for line in fh if line.strip())
    files = {rel: (folder / WORKSPACE_DIR / rel).read_bytes() for rel in meta.get("files") or []}
    turns = tuple((int(t["n"]), str(t["date"])) for t in meta["turns"])
    return OracleRun(requests=requests, files=files, canonical_db=str(meta["canonical_db"]), turns=turns)

