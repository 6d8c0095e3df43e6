"""The harness oracle's conversation, derived from a recorded oracle run (no ERP, no CLI).

Each request becomes the `erp` command line that sends it (path, a read's query, a write's body
and key); a turn's requests run in order, a few per shell call, and a text-only answer ends the
turn; the last turn writes the oracle's files byte for byte; the recording refuses what it cannot
replay (a request outside every turn, under another token, or truncated by the audit).
"""
from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from model_gateway.fake_script import parse_script
from orchestrator.harness_oracle.conversation import conversation, erp_command, file_command, script_bytes
from orchestrator.scenarios.oracle_run import (
    OracleRun,
    OracleRunError,
    RecordedRequest,
    load_oracle_run,
    requests_from_audit,
)


def req(turn: int, method: str, path: str, *, query=None, body=None, key=None) -> RecordedRequest:
    return RecordedRequest(turn=turn, date=f"2026-10-0{turn}", method=method, path=path,
                           query=query if method == "GET" else None, body=body, idem_key=key,
                           status=200, outcome="ok")


RUN = OracleRun(
    requests=(req(1, "GET", "/whoami", query={}),
              req(1, "GET", "/inbox", query={"unread": "true", "box": "ap"}),
              req(1, "POST", "/calls", body={"party_id": "V-0102", "purpose": "it's \"quoted\" café"}, key="k-t1-w1"),
              req(2, "DELETE", "/drafts/D-1", key="k-t2-w1"),
              req(2, "PATCH", "/vendors/V-1", body={"phone": "555"}),
              req(2, "POST", "/payment-runs/PR-1/submit", body={}, key="k-t2-w2")),
    files={"answer.md": b"# Bridge\n\nMargin fell by $1,234.56.\n", "notes/state.json": b'{"a": 1}'},
    canonical_db="0" * 64, turns=((1, "2026-10-01"), (2, "2026-10-02")))


def argv(command: str) -> list[str]:
    assert command.endswith(" >/dev/null")
    return shlex.split(command.removesuffix(" >/dev/null"))


def test_each_request_is_the_erp_command_that_sends_it() -> None:
    r = RUN.requests
    assert argv(erp_command(r[0])) == ["erp", "get", "/whoami"]
    assert argv(erp_command(r[1])) == ["erp", "get", "/inbox", "box=ap", "unread=true"]  # query sorted, as audited
    words = argv(erp_command(r[2]))
    assert words[:3] == ["erp", "post", "/calls"] and words[3] == "--data" and words[5:] == ["--key", "k-t1-w1"]
    assert json.loads(words[4]) == r[2].body and words[4].isascii()  # shell- and JSON-safe, same body
    assert argv(erp_command(r[3])) == ["erp", "delete", "/drafts/D-1", "--key", "k-t2-w1"]  # no body sent
    assert argv(erp_command(r[4])) == ["erp", "patch", "/vendors/V-1", "--data", '{"phone":"555"}']  # no key
    assert argv(erp_command(r[5]))[3:5] == ["--data", "{}"]
    with pytest.raises(ValueError, match="without a body"):
        erp_command(req(1, "POST", "/x", body=None))


@pytest.mark.parametrize("provider,tool,field", [("anthropic", "Bash", "command"), ("openai", "exec_command", "cmd")])
def test_turns_batches_files_and_the_end_of_each_turn(provider: str, tool: str, field: str) -> None:
    doc = conversation(RUN, provider, batch=2)
    script = parse_script(json.loads(script_bytes(doc)))  # the fake provider accepts it
    assert script.match == "tools"
    kinds = ["text" if s.stop_reason == "end_turn" else "tool" for s in script.steps]
    # turn 1: 3 requests in 2 calls, end; turn 2: 3 requests in 2 calls, 2 files, end
    assert kinds == ["tool", "tool", "text", "tool", "tool", "tool", "tool", "text"]
    calls = [b for s in script.steps for b in s.content if b["type"] == "tool_use"]
    assert {b["name"] for b in calls} == {tool}
    commands = [b["input"][field] for b in calls]
    sent = [line for c in commands[:4] for line in c.splitlines() if line.startswith("erp ")]
    assert sent == [erp_command(r) for r in RUN.requests]  # every request, once, in the audited order
    assert all(s.usage["input_tokens"] > 0 for s in script.steps)


def test_dropping_a_request_leaves_exactly_it_out() -> None:
    full = [line for s in conversation(RUN, "anthropic")["steps"] for b in s["content"] if b["type"] == "tool_use"
            for line in b["input"]["command"].splitlines() if line.startswith("erp ")]
    dropped = [line for s in conversation(RUN, "anthropic", drop={2})["steps"] for b in s["content"]
               if b["type"] == "tool_use" for line in b["input"]["command"].splitlines() if line.startswith("erp ")]
    assert full[:2] + full[3:] == dropped and len(dropped) == len(RUN.requests) - 1


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(ValueError, match="no harness oracle for provider"):
        conversation(RUN, "gemini")


def test_a_file_is_written_byte_for_byte(tmp_path: Path) -> None:
    data = bytes(range(256)) + "\nPB_END_OF_FILE\n€".encode()
    for rel in ("plain.md", "deep/er/file.bin"):
        subprocess.run(["bash", "-c", file_command(rel, data)], cwd=tmp_path, check=True)
        assert (tmp_path / rel).read_bytes() == data


def audit_rows(*rows: dict) -> str:
    base = {"channel": "api", "token_id": "TOK-1", "idem_key": None, "status": 200, "outcome": "ok"}
    return "".join(json.dumps({**base, **r}) + "\n" for r in rows)


def test_requests_from_audit(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    audit.write_text(audit_rows(
        {"business_date": "2026-10-01", "method": "GET", "path": "/whoami", "request": "{}"},
        {"business_date": "2026-10-01", "channel": "sim", "token_id": None, "method": "SIM", "path": "x", "request": None},
        {"business_date": "2026-10-02", "method": "POST", "path": "/calls", "request": '{"a":1}', "idem_key": "k"}))
    got = requests_from_audit(audit, [(1, "2026-10-01"), (2, "2026-10-02")], "TOK-1")
    assert [(r.turn, r.method, r.query, r.body, r.idem_key) for r in got] == [
        (1, "GET", {}, None, None), (2, "POST", None, {"a": 1}, "k")]


@pytest.mark.parametrize("row,why", [
    ({"business_date": "2026-10-05", "method": "GET", "path": "/x", "request": "{}"}, "no turn's date"),
    ({"business_date": "2026-10-01", "method": "GET", "path": "/x", "request": "{}", "token_id": "TOK-2"}, "not the agent's"),
    ({"business_date": "2026-10-01", "method": "POST", "path": "/x", "request": '{"note": "abc…'}, "truncated"),
    ({"business_date": "2026-10-01", "method": "GET", "path": "/x", "request": '{"limit": 5}'}, "mapping of strings"),
])
def test_what_cannot_be_replayed_is_refused(tmp_path: Path, row: dict, why: str) -> None:
    audit = tmp_path / "audit.jsonl"
    audit.write_text(audit_rows(row))
    with pytest.raises(OracleRunError, match=why):
        requests_from_audit(audit, [(1, "2026-10-01")], "TOK-1")


def test_turns_sharing_a_date_are_refused(tmp_path: Path) -> None:
    (tmp_path / "audit.jsonl").write_text("")
    with pytest.raises(OracleRunError, match="share a date"):
        requests_from_audit(tmp_path / "audit.jsonl", [(1, "2026-10-01"), (2, "2026-10-01")], None)


def test_a_missing_or_unavailable_recording_says_why(tmp_path: Path) -> None:
    with pytest.raises(OracleRunError, match="no recorded oracle run"):
        load_oracle_run(tmp_path / "oracle-run")
    (tmp_path / "oracle-run").mkdir()
    (tmp_path / "oracle-run" / "unavailable.txt").write_text("request 3 is truncated\n")
    with pytest.raises(OracleRunError, match="request 3 is truncated"):
        load_oracle_run(tmp_path / "oracle-run")
