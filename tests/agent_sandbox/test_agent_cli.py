"""The agent's side against a *running* bb-erp: the `erp` command, the client, the turn entrypoint.

Each server is the real `python -m erp_service serve` subprocess on 127.0.0.1 (port 0) over a
small company database built by `tests/erp_company.py`. Nothing here is mocked.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from erp_company import build_company
from repo_paths import REPO_ROOT

from agent_sandbox.client import ErpClient, ErpError, ErpUnreachable, IdempotencyKeys
from agent_sandbox.systems import load_systems
from erp_service.domains.comms import deliver, make_pdf, pdf_text

PY = sys.executable
REPO = REPO_ROOT
AGENT = "ap_clerk"  # the user the agent is signed in as in these tests
CONTROL_TOKEN = "control-token-agent-tests-0123456789"


@dataclass
class RunningErp:
    """A live bb-erp process and what a client needs to talk to it."""

    proc: subprocess.Popen
    agent_url: str
    control_url: str
    tokens: dict[str, str]

    @property
    def token(self) -> str:
        return self.tokens[AGENT]

    def routes(self) -> set[tuple[str, str]]:
        spec = httpx.get(f"{self.agent_url}/openapi.json", timeout=30).json()
        return {(m.upper(), p) for p, item in spec["paths"].items() for m in item}


def start_erp(tmp: Path, faults: str | None = None) -> RunningErp:
    """Build a company database and serve it; returns once the ready line is printed."""
    tmp.mkdir(parents=True, exist_ok=True)
    company = build_company(tmp)
    # Two messages in the agent's AP box: an invoice PDF, and a remittance note with a CSV.
    for subject, body, attachments in [
        ("Invoice 4411", "Please find our invoice attached.",
         [("invoice-4411.pdf", make_pdf("INVOICE 4411", ["Brassworks Ltd", "Total 1,234.50"]))]),
        ("Remittance advice", "Lines paid this week.", [("remit.csv", b"invoice,amount\n4411,1234.50\n")]),
    ]:
        company.builder.act("sys-setup", "msg.deliver", "/setup/deliver", None, lambda tx, s=subject, b=body, a=attachments:
                            deliver(tx, "ap", "billing@brassworks.example", s, b, a))
    company.builder.finish()
    token_file = tmp / "control.token"
    token_file.write_text(CONTROL_TOKEN)
    argv = [PY, "-m", "erp_service", "serve", "--db", str(company.path), "--agent-bind", "127.0.0.1:0",
            "--control-bind", "127.0.0.1:0", "--control-token-file", str(token_file)]
    if faults:
        argv += ["--faults", faults]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(tmp / "erp.log", "wb"), text=True, cwd=REPO)  # noqa: SIM115 — the server outlives this function
    line = proc.stdout.readline()  # the server prints the ready line (or an error line) first
    try:
        ready = json.loads(line)
    except ValueError:
        ready = {}
    if ready.get("event") != "ready":
        proc.kill()
        raise RuntimeError(f"bb-erp did not start: {line!r} {(tmp / 'erp.log').read_text()[-2000:]}")
    return RunningErp(proc, ready["agent"], ready["control"], company.tokens)


def stop_erp(erp: RunningErp) -> None:
    erp.proc.send_signal(signal.SIGTERM)
    try:
        erp.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        erp.proc.kill()
        erp.proc.wait()


@pytest.fixture(scope="module")
def erp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningErp]:
    server = start_erp(tmp_path_factory.mktemp("erp"))
    try:
        yield server
    finally:
        stop_erp(server)


@pytest.fixture()
def erp_env(erp: RunningErp, tmp_path: Path) -> dict[str, str]:
    ws = tmp_path / "ws"
    (ws / "handbook" / "policies").mkdir(parents=True)
    (ws / "handbook" / "ap-policy.md").write_text("# AP policy\nThree-way match before payment.\n")
    (ws / "handbook" / "policies" / "bank-changes.md").write_text("# Bank changes\nCall back on the number on file.\n")
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "WORKSPACE": str(ws),
            "ERP_URL": erp.agent_url, "ERP_TOKEN": erp.token}


def erp_cmd(env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run the `erp` command as the agent would (a separate process)."""
    return subprocess.run([PY, "-m", "agent_sandbox.erp_cli", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60)


def ok_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


# -- the erp command ----------------------------------------------------------------------------


def test_whoami(erp_env: dict[str, str]) -> None:
    out = ok_json(erp_cmd(erp_env, "whoami"))
    assert out["data"]["id"] == AGENT
    assert "box.ap" in out["data"]["permissions"]
    assert out["business_date"] == out["data"]["business_date"]


def test_help_and_usage_errors(erp_env: dict[str, str]) -> None:
    helped = erp_cmd(erp_env, "help")
    assert helped.returncode == 0 and "erp attachment MSG N" in helped.stdout and "exit status is 1" in helped.stdout
    bare = erp_cmd(erp_env)
    assert bare.returncode == 2 and "usage:" in bare.stderr
    for args, message in [
        (("frob",), "unknown command 'frob'"),
        (("get",), "needs a PATH"),
        (("get", "/users", "oops"), "expected k=v"),
        (("post", "/x", "--data", "{not json"), "--data is not valid JSON"),
        (("post", "/x", "--data", "@/nonexistent/body.json"), "cannot read --data file"),
        (("post", "/x", "--data", "[1]", "a=1"), "need a JSON object body"),
        (("get", "http://evil.example/users"), "not a URL"),
        (("attachment", "MSG-1", "zero"), "attachment number"),
        (("read",), "usage: erp read MSG"),
        (("report",), "usage: erp report NAME"),
        (("get", "/users", "--bogus"), "unknown option --bogus"),
    ]:
        proc = erp_cmd(erp_env, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)


def test_get_with_query_and_pagination(erp_env: dict[str, str], erp: RunningErp) -> None:
    out = ok_json(erp_cmd(erp_env, "get", "/users", "limit=2", "offset=1"))
    assert out["data"]["limit"] == 2 and out["data"]["offset"] == 1 and len(out["data"]["items"]) == 2
    assert out["data"]["total"] == len(erp.tokens)
    # A path without the leading slash is the same path.
    assert ok_json(erp_cmd(erp_env, "get", f"users/{AGENT}"))["data"]["id"] == AGENT


def test_404_problem_on_stdout_summary_on_stderr(erp_env: dict[str, str]) -> None:
    proc = erp_cmd(erp_env, "get", "/no-such-thing")
    assert proc.returncode == 1
    problem = json.loads(proc.stdout)
    assert problem["status"] == 404 and problem["code"] == "no_route"
    assert "HTTP 404 no_route" in proc.stderr
    missing = erp_cmd(erp_env, "get", "/users/nobody-here")
    assert missing.returncode == 1 and json.loads(missing.stdout)["code"] == "not_found"


def test_422_problem(erp_env: dict[str, str]) -> None:
    proc = erp_cmd(erp_env, "get", "/users", "limit=abc")
    assert proc.returncode == 1
    problem = json.loads(proc.stdout)
    assert problem["status"] == 422 and problem["code"] == "invalid" and "limit" in problem["detail"]


def test_write_verbs_send_bodies_and_keys(erp_env: dict[str, str], tmp_path: Path) -> None:
    # POST /whoami does not exist as a write: the server's answer (405 problem) proves the verb,
    # body and key went out and came back as a problem document with exit 1.
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"note": "x"}))
    for verb in ("post", "patch", "put", "delete"):
        proc = erp_cmd(erp_env, verb, "/whoami", "--data", f"@{body}", "--key", f"k-{verb}", "qty=5")
        assert proc.returncode == 1, proc.stderr
        problem = json.loads(proc.stdout)
        assert problem["status"] in (404, 405) and problem["code"] in ("method_not_allowed", "no_route")
    # --data @- reads stdin.
    proc = erp_cmd(erp_env, "post", "/whoami", "--data", "@-", stdin='{"a": 1}')
    assert proc.returncode == 1 and json.loads(proc.stdout)["status"] == 405


def test_inbox_read_and_attachments(erp_env: dict[str, str], tmp_path: Path) -> None:
    unread = ok_json(erp_cmd(erp_env, "inbox", "--box", "ap", "--unread"))["data"]
    assert [m["subject"] for m in unread["items"]] == ["Invoice 4411", "Remittance advice"]
    invoice, remit = (m["id"] for m in unread["items"])
    full = ok_json(erp_cmd(erp_env, "read", invoice))["data"]
    assert full["read"] is True and full["attachments"][0]["filename"] == "invoice-4411.pdf"
    assert [m["id"] for m in ok_json(erp_cmd(erp_env, "inbox", "--unread"))["data"]["items"]] == [remit]
    assert len(ok_json(erp_cmd(erp_env, "inbox"))["data"]["items"]) == 2
    # A binary attachment is described, not dumped; -o saves it; -o - streams the raw bytes.
    described = ok_json(erp_cmd(erp_env, "attachment", invoice, "1"))
    assert described["filename"] == "invoice-4411.pdf" and described["content_type"] == "application/pdf"
    assert f"erp attachment {invoice} 1 -o invoice-4411.pdf" in described["note"]
    saved = ok_json(erp_cmd(erp_env, "attachment", invoice, "1", "-o", str(tmp_path / "inv.pdf")))
    data = (tmp_path / "inv.pdf").read_bytes()
    assert saved["bytes"] == len(data) and "Total 1,234.50" in pdf_text(data)
    raw = subprocess.run([PY, "-m", "agent_sandbox.erp_cli", "attachment", invoice, "1", "-o", "-"], env=erp_env,
                         capture_output=True, timeout=60)
    assert raw.returncode == 0 and raw.stdout == data
    # A text attachment is printed as text.
    text = erp_cmd(erp_env, "attachment", remit, "1")
    assert text.returncode == 0 and text.stdout == "invoice,amount\n4411,1234.50\n"
    missing = erp_cmd(erp_env, "attachment", invoice, "2")
    assert missing.returncode == 1 and json.loads(missing.stdout)["status"] == 404
    assert json.loads(erp_cmd(erp_env, "read", "MSG-99999").stdout)["code"] == "not_found"
    # A box the agent does not hold: 403 problem.
    forbidden = erp_cmd(erp_env, "inbox", "--box", "receiving")
    assert forbidden.returncode == 1 and json.loads(forbidden.stdout)["code"] == "forbidden"


def test_post_replay_409_and_422(erp_env: dict[str, str], tmp_path: Path) -> None:
    body = tmp_path / "msg.json"
    body.write_text(json.dumps({"to": ["controller"], "subject": "Question", "body": "See invoice."}))
    first = ok_json(erp_cmd(erp_env, "post", "/outbox", "--data", f"@{body}", "--key", "q-1"))
    assert first["data"]["to"] == "controller" and first["data"]["subject"] == "Question"
    # Same key, same body: the stored first answer, flagged on stderr.
    again = erp_cmd(erp_env, "post", "/outbox", "--data", f"@{body}", "--key", "q-1")
    assert again.returncode == 0 and json.loads(again.stdout)["data"]["id"] == first["data"]["id"]
    assert "idempotent replay" in again.stderr
    # Same key, another body (a k=v field overrides --data): 409 problem, exit 1.
    reused = erp_cmd(erp_env, "post", "/outbox", "--data", f"@{body}", "--key", "q-1", "subject=Changed")
    assert reused.returncode == 1
    problem = json.loads(reused.stdout)
    assert problem["status"] == 409 and problem["code"] == "idempotency_key_reused" and problem["detail"]
    assert "HTTP 409 idempotency_key_reused" in reused.stderr
    # k=v values: JSON when they parse (a list here), strings otherwise.
    listed = ok_json(erp_cmd(erp_env, "post", "/outbox", 'to=["controller", "auditor"]', "subject=Two", "body=x"))
    assert listed["data"]["to"] == "controller, auditor"
    # Missing required fields: 422 problem, exit 1.
    invalid = erp_cmd(erp_env, "post", "/outbox", "subject=No recipient")
    assert invalid.returncode == 1 and json.loads(invalid.stdout)["status"] == 422


def test_hard_control_409_403_and_patch(erp_env: dict[str, str], erp: RunningErp) -> None:
    manager = {**erp_env, "ERP_TOKEN": erp.tokens["purchasing_manager"]}
    created = ok_json(erp_cmd(manager, "post", "/vendors", "id=V-0777", "name=Gasket Supply", 'tin="00777"'))
    assert created["data"]["id"] == "V-0777" and created["data"]["tin"] == "00777"
    # The same id again is refused by a hard control: a 409 problem with its machine code.
    dup = erp_cmd(manager, "post", "/vendors", "id=V-0777", "name=Gasket Supply again")
    assert dup.returncode == 1
    problem = json.loads(dup.stdout)
    assert problem["status"] == 409 and problem["code"] == "duplicate_vendor" and "V-0777" in problem["detail"]
    # A bare number is JSON-parsed to a number, which a string field refuses (quote it to keep a string).
    assert json.loads(erp_cmd(manager, "post", "/vendors", "name=N", "tin=12345").stdout)["status"] == 422
    patched = ok_json(erp_cmd(manager, "patch", "/vendors/V-0777", "phone=+1 555 0100"))
    assert patched["data"]["phone"] == "+1 555 0100"
    # The agent's own user lacks the permission: 403 problem.
    forbidden = erp_cmd(erp_env, "post", "/vendors", "name=Not mine")
    assert forbidden.returncode == 1 and json.loads(forbidden.stdout)["code"] == "forbidden"


def test_report(erp_env: dict[str, str]) -> None:
    listed = ok_json(erp_cmd(erp_env, "get", "/reports"))["data"]
    assert "trial-balance" in json.dumps(listed)
    tb = ok_json(erp_cmd(erp_env, "report", "trial-balance", "as_of=2026-10-01"))["data"]
    assert tb["report"] == "trial-balance" and tb["params"] == {"as_of": "2026-10-01"}
    unknown = erp_cmd(erp_env, "report", "no-such-report")
    assert unknown.returncode == 1 and json.loads(unknown.stdout)["status"] == 404
    bad_date = erp_cmd(erp_env, "report", "trial-balance", "as_of=2026-13-01")
    assert bad_date.returncode == 1 and json.loads(bad_date.stdout)["status"] == 422


def test_docs_lists_routes_and_handbook(erp_env: dict[str, str]) -> None:
    out = ok_json(erp_cmd(erp_env, "docs"))
    assert "GET /whoami  - Who you are: role, limits, boxes, business date" in out["routes"]
    assert out["handbook"]["files"] == ["ap-policy.md", "policies/bank-changes.md"]
    users = ok_json(erp_cmd(erp_env, "docs", "users"))
    paths = {(r["method"], r["path"]) for r in users["routes"]}
    assert ("GET", "/users") in paths and ("GET", "/whoami") not in paths
    listing = next(r for r in users["routes"] if r["path"] == "/users")
    assert listing["query"]["limit"].startswith("integer")
    # Body fields carry type, required and the schema's description.
    outbox = ok_json(erp_cmd(erp_env, "docs", "outbox"))["routes"]
    send = next(r for r in outbox if r["method"] == "POST" and r["path"] == "/outbox")
    assert send["body"]["subject"] == "string, required"
    assert send["body"]["to"].startswith("string|array of string, required - Staff user ids")
    # Lists of objects (invoice lines) show the fields of one element.
    invoices = ok_json(erp_cmd(erp_env, "docs", "ap-invoices"))["routes"]
    enter = next(r for r in invoices if r["method"] == "POST" and r["path"] == "/ap-invoices")
    assert enter["body"]["lines"]["type"].startswith("array of object, required")
    assert "qty" in enter["body"]["lines"]["fields"]
    # A handbook file by name, stem or relative path is printed as is.
    for name in ("ap-policy.md", "ap-policy", "handbook/ap-policy.md"):
        proc = erp_cmd(erp_env, "docs", name)
        assert proc.returncode == 0 and proc.stdout.startswith("# AP policy"), name
    assert erp_cmd(erp_env, "docs", "bank-changes").stdout.startswith("# Bank changes")
    # ./handbook is used when WORKSPACE is not set.
    env = {k: v for k, v in erp_env.items() if k != "WORKSPACE"}
    cwd_docs = ok_json(erp_cmd(env, "docs", cwd=Path(erp_env["WORKSPACE"])))
    assert cwd_docs["handbook"]["files"][0] == "ap-policy.md"
    # docs needs no token: /openapi.json is public.
    no_token = {k: v for k, v in erp_env.items() if k != "ERP_TOKEN"}
    assert ok_json(erp_cmd(no_token, "docs", "whoami"))["routes"][0]["path"] == "/whoami"


def test_missing_token_url_and_unreachable(erp_env: dict[str, str]) -> None:
    no_token = {k: v for k, v in erp_env.items() if k != "ERP_TOKEN"}
    proc = erp_cmd(no_token, "whoami")
    assert proc.returncode == 2 and "ERP_TOKEN is not set" in proc.stderr and proc.stdout == ""
    no_url = {k: v for k, v in erp_env.items() if k != "ERP_URL"}
    proc = erp_cmd(no_url, "whoami")
    assert proc.returncode == 2 and "ERP_URL is not set" in proc.stderr
    neither = {k: v for k, v in no_url.items() if k != "ERP_TOKEN"}
    assert "ERP_URL and ERP_TOKEN are not set" in erp_cmd(neither, "get", "/users").stderr
    bad_url = {**erp_env, "ERP_URL": "erp:8080"}
    assert "must be a URL" in erp_cmd(bad_url, "whoami").stderr
    # A port nobody listens on: a clear message naming the URL, exit 1.
    unreachable = {**erp_env, "ERP_URL": "http://127.0.0.1:9"}
    proc = erp_cmd(unreachable, "whoami")
    assert proc.returncode == 1
    assert "the ERP is unreachable at http://127.0.0.1:9 (ERP_URL)" in proc.stderr


def test_wrong_token_is_401(erp_env: dict[str, str]) -> None:
    proc = erp_cmd({**erp_env, "ERP_TOKEN": "not-a-token"}, "whoami")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["code"] == "unauthorized"
    assert "refused ERP_TOKEN" in proc.stderr


def test_console_script_is_installed(erp_env: dict[str, str]) -> None:
    script = Path(PY).parent / "erp"
    if not script.exists():
        pytest.skip("the erp console script is not installed in this environment")
    proc = subprocess.run([str(script), "whoami"], env=erp_env, capture_output=True, text=True, timeout=60)
    assert json.loads(proc.stdout)["data"]["id"] == AGENT


# -- the client library -------------------------------------------------------------------------


def test_client_helpers(erp: RunningErp) -> None:
    with ErpClient(erp.agent_url, erp.token) as client:
        me = client.whoami()
        assert me["id"] == AGENT
        everyone = client.list_all("/users")
        assert len(everyone) == len(erp.tokens)
        paged = list(client.iter_list("/users", page_size=3))
        assert [u["id"] for u in paged] == [u["id"] for u in everyone]
        with pytest.raises(ErpError) as info:
            client.get("/users/nobody-here")
        assert info.value.status == 404 and info.value.code == "not_found" and info.value.detail
        assert info.value.problem["business_date"] == me["business_date"]
        with pytest.raises(ErpError) as info:
            client.get("/users", limit="abc")
        assert info.value.status == 422
        assert "paths" in client.openapi()
        # 3 pages of 3 for the paginated walk; every request is counted.
        assert client.request_count == 1 + 1 + len(range(0, len(everyone), 3)) + (1 if len(everyone) % 3 == 0 else 0) + 3
    with pytest.raises(ErpUnreachable):
        ErpClient("http://127.0.0.1:9", "t", max_attempts=2, backoff_s=0.01).whoami()


def test_client_inbox_attachment_and_report_helpers(erp: RunningErp) -> None:
    # Another holder of the AP box, so the CLI tests' read marks do not matter (reads are per user).
    with ErpClient(erp.agent_url, erp.tokens["ap_supervisor"]) as client:
        unread = client.inbox("ap", unread=True)
        assert [m["subject"] for m in unread] == ["Invoice 4411", "Remittance advice"]
        msg = client.read_message(unread[0]["id"])
        assert msg["read"] is True and msg["attachments"][0]["filename"] == "invoice-4411.pdf"
        assert [m["id"] for m in client.inbox(unread=True)] == [unread[1]["id"]]
        pdf = client.attachment(unread[0]["id"], 1)
        assert pdf.startswith(b"%PDF") and "INVOICE 4411" in pdf_text(pdf)
        with pytest.raises(ErpError) as info:
            client.attachment(unread[0]["id"], 9)
        assert info.value.status == 404
        tb = client.report("trial-balance", as_of="2026-10-01")
        assert tb["report"] == "trial-balance" and tb["params"] == {"as_of": "2026-10-01"}


def test_idempotency_keys_are_deterministic() -> None:
    a, b = IdempotencyKeys("pay", 2), IdempotencyKeys("pay", 2)
    assert [a.next() for _ in range(3)] == ["pay-t2-w1", "pay-t2-w2", "pay-t2-w3"] == [b.next() for _ in range(3)]
    with pytest.raises(ValueError):
        IdempotencyKeys("has space", 1)


def test_client_retries_reads_through_faults(tmp_path: Path) -> None:
    server = start_erp(tmp_path, faults="fail_before:GET /whoami@1")
    try:
        with ErpClient(server.agent_url, server.token, backoff_s=0.01) as client:
            assert client.whoami()["id"] == AGENT
            assert client.stats.requests == 2 and client.stats.retries == 1
        with ErpClient(server.agent_url, server.token, max_attempts=1) as once:
            assert once.whoami()["id"] == AGENT  # the rule hit only the first request
    finally:
        stop_erp(server)


def test_client_retries_a_write_only_with_its_key(tmp_path: Path) -> None:
    # Matching POST /outbox requests 1 and 2 commit but lose their answer (the client gets 503).
    server = start_erp(tmp_path, faults="lost_response:POST /outbox@1,lost_response:POST /outbox@2")
    note = {"to": "controller", "subject": "Vendor statement", "body": "Statement attached."}
    try:
        with ErpClient(server.agent_url, server.token, backoff_s=0.01) as client:
            with pytest.raises(ErpError) as info:
                client.post("/outbox", note)
            assert info.value.status == 503 and info.value.code == "service_unavailable"
            assert client.stats.requests == 1  # no key: sent once, never re-sent by the client
            # ... although the write did happen: this is why a keyless retry would duplicate it.
            assert len(client.list_all("/outbox")) == 1
            # With a key the lost answer is re-requested with the same key and body: the server
            # replays the first result instead of sending a second message.
            answer = client.request("POST", "/outbox", json_body={**note, "subject": "Second"}, key="agent-t1-w1")
            assert answer.status == 201 and answer.replay
            assert client.stats.retries == 1
            sent = client.list_all("/outbox")
            assert [m["subject"] for m in sent] == ["Vendor statement", "Second"]
            assert answer.data["id"] == sent[1]["id"]
    finally:
        stop_erp(server)


def test_cli_never_retries_and_a_rerun_with_the_key_replays(tmp_path: Path) -> None:
    server = start_erp(tmp_path, faults="lost_response:POST /outbox@1")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ERP_URL": server.agent_url, "ERP_TOKEN": server.token}
    args = ("post", "/outbox", "to=controller", "subject=Hello", "body=Checking in.", "--key", "hello-1")
    try:
        first = erp_cmd(env, *args)
        assert first.returncode == 1 and json.loads(first.stdout)["status"] == 503
        again = erp_cmd(env, *args)
        assert again.returncode == 0 and "idempotent replay" in again.stderr
        assert ok_json(erp_cmd(env, "get", "/outbox"))["data"]["total"] == 1
    finally:
        stop_erp(server)


# -- the turn entrypoint ------------------------------------------------------------------------


def turn_dir(tmp_path: Path, system: dict, prompt: str = "Please check who you are.\n") -> Path:
    turn = tmp_path / "turn"
    turn.mkdir(parents=True)
    (turn / "prompt.txt").write_text(prompt)
    (turn / "system.json").write_text(json.dumps(system))
    (turn / "context.json").write_text(json.dumps({"turn": 2, "date": "2026-10-08", "agent_user": AGENT, "budget_s": 60}))
    return turn


def run_turn(turn: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    home = turn.parent / "fresh-home"
    home.mkdir(exist_ok=True)
    env = {**env, "HOME": str(home), "TURN_BUDGET_S": "60"}
    return subprocess.run([PY, "-m", "agent_sandbox.turn", "--turn-dir", str(turn)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_turn_with_the_example_command_system(erp_env: dict[str, str], tmp_path: Path) -> None:
    spec = load_systems(REPO / "agent_sandbox" / "examples" / "systems.yaml")["shell-echo"]
    turn = turn_dir(tmp_path, spec.system_json(os.environ))
    # `erp` must be found even when the caller's PATH lacks it (the entrypoint adds it).
    env = {**erp_env, "PATH": "/usr/bin:/bin"}
    proc = run_turn(turn, env)
    assert proc.returncode == 0, (turn / "out" / "stderr.txt").read_text()
    stdout = (turn / "out" / "stdout.txt").read_text()
    assert "Please check who you are." in stdout
    assert f'"id": "{AGENT}"' in stdout
    assert "ap-policy.md" in stdout  # ran in the workspace
    assert json.loads((turn / "out" / "usage.json").read_text()) == {"requests": 1}


def test_turn_with_a_policy_module(erp_env: dict[str, str], tmp_path: Path) -> None:
    module = tmp_path / "policies.py"
    module.write_text(
        "from pathlib import Path\n"
        "def oracle(turn, client, workspace, context):\n"
        "    me = client.whoami()\n"
        "    users = client.list_all('/users')\n"
        "    (workspace / 'notes.txt').write_text(f\"{turn} {context['date']} {me['id']} {len(users)}\")\n"
        "    print('done')\n"
        "def broken(turn, client, workspace, context):\n"
        "    client.get('/users/nobody-here')\n"
        "POLICIES = {'oracle': oracle, 'neg:broken': broken}\n"
    )
    turn = turn_dir(tmp_path, {"kind": "policy", "name": "oracle", "module": str(module)})
    proc = run_turn(turn, erp_env)
    assert proc.returncode == 0, (turn / "out" / "stderr.txt").read_text()
    notes = (Path(erp_env["WORKSPACE"]) / "notes.txt").read_text().split()
    assert notes[:3] == ["2", "2026-10-08", AGENT] and int(notes[3]) > 5
    assert (turn / "out" / "stdout.txt").read_text() == "done\n"
    assert json.loads((turn / "out" / "usage.json").read_text()) == {"requests": 2}

    turn2 = turn_dir(tmp_path / "b", {"kind": "policy", "name": "neg:broken", "module": str(module)})
    proc = run_turn(turn2, erp_env)
    assert proc.returncode == 1
    assert "ErpError: GET /users/nobody-here: HTTP 404 not_found" in (turn2 / "out" / "traceback.txt").read_text()
    assert json.loads((turn2 / "out" / "usage.json").read_text()) == {"requests": 1}


def test_cli_timeout_is_reported(tmp_path: Path) -> None:
    # The ERP holds its answer for 5 s; with a 1-second timeout erp gives up with a clear message.
    server = start_erp(tmp_path, faults="slow:GET /whoami@1,delay=5")
    try:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ERP_URL": server.agent_url,
               "ERP_TOKEN": server.token, "ERP_TIMEOUT_S": "1"}
        started = time.monotonic()
        proc = erp_cmd(env, "whoami")
        assert proc.returncode == 1 and proc.stdout == ""
        assert f"the ERP at {server.agent_url} did not answer: no answer within 1 s" in proc.stderr
        assert time.monotonic() - started < 4.5
        assert "ERP_TIMEOUT_S must be a number" in erp_cmd({**env, "ERP_TIMEOUT_S": "soon"}, "whoami").stderr
    finally:
        stop_erp(server)
