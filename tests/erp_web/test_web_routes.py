"""Every page, form and host route of the web UI, over HTTP, in both of its modes.

A real ERP process (a small test company) and two real `python -m erp_web serve` processes in
front of it: one with a sign-in page (the debug profile's form), one in human mode (a sign-in
link, the host's turn routes, a handbook). A plain HTTP client, redirects not followed, checks
what each route answers: signed out, signed in, between turns and during one.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from erp_company import build_company
from erp_server import Served, start_server
from repo_paths import REPO_ROOT

pytestmark = pytest.mark.slow  # three processes, ~10 s

LOGIN_KEY = "sign-in-key-for-the-route-test"
HOST_TOKEN = "host-token-for-the-route-test"
USER = "controller"


class _Web:
    """One `python -m erp_web serve` process and a client on it that does not follow redirects."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "erp_web", "serve", "--bind", "127.0.0.1:0", *args], cwd=REPO_ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        ready = json.loads(line) if line.startswith("{") else {}
        assert ready.get("event") == "ready", line
        self.url = ready["web"]
        self.client = httpx.Client(base_url=self.url, trust_env=False, timeout=30, follow_redirects=False)

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(20)


@pytest.fixture(scope="module")
def erp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("erp")
    company = build_company(tmp)
    company.builder.db.engine.dispose()
    served = start_server(tmp, company.path)
    try:
        yield served, company.tokens
    finally:
        served.stop()


@pytest.fixture(scope="module")
def form_web(erp: tuple[Served, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Web]:
    web = _Web(["--api", erp[0].ready["agent"]], tmp_path_factory.mktemp("web"))
    try:
        yield web
    finally:
        web.stop()


@pytest.fixture(scope="module")
def human_web(erp: tuple[Served, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Web]:
    tmp = tmp_path_factory.mktemp("human")
    (tmp / "tok").write_text(erp[1][USER])
    (tmp / "key").write_text(LOGIN_KEY)
    (tmp / "host").write_text(HOST_TOKEN)
    handbook = tmp / "handbook"
    handbook.mkdir()
    (handbook / "README.md").write_text("# The handbook\n\nPay only **verified** accounts.\n")
    web = _Web(["--api", erp[0].ready["agent"], "--token-file", str(tmp / "tok"), "--login-key-file", str(tmp / "key"),
                "--host-token-file", str(tmp / "host"), "--handbook", str(handbook), "--human"], tmp)
    try:
        yield web
    finally:
        web.stop()


PAGES = ["/", "/lists", "/r/accounts", "/r/journal-entries/JE-1", "/inbox", "/inbox/MSG-1", "/files/inbox/MSG-1/1",
         "/reports", "/reports/trial-balance", "/handbook", "/handbook/README.md", "/act/msg.send"]


@pytest.mark.parametrize("path", PAGES)
def test_a_page_signed_out_sends_to_the_sign_in_page(form_web: _Web, path: str) -> None:
    r = form_web.client.get(path)
    assert (r.status_code, r.headers.get("location")) == (303, "/signin")


def test_an_action_signed_out_sends_to_the_sign_in_page(form_web: _Web) -> None:
    for path in ("/act/msg.send", "/turn/end"):
        r = form_web.client.post(path, content=b"to=ap_clerk")
        assert (r.status_code, r.headers.get("location")) == (303, "/signin"), path


def test_sign_in_by_form(form_web: _Web, erp: tuple[Served, dict[str, str]]) -> None:
    c = httpx.Client(base_url=form_web.url, trust_env=False, timeout=30, follow_redirects=False)
    page = c.get("/signin")
    assert page.status_code == 200 and 'name="token"' in page.text
    bad = c.post("/signin", content=b"token=not-a-token")
    assert bad.status_code == 401 and 'id="problem"' in bad.text and 'name="token"' in bad.text
    assert c.get("/login", params={"key": "anything"}).status_code == 403  # no sign-in link in this mode
    good = c.post("/signin", content=f"token={erp[1][USER]}".encode())
    assert (good.status_code, good.headers["location"]) == (303, "/")
    cookie = good.headers["set-cookie"]
    assert "erp_web_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    home = c.get("/")
    assert home.status_code == 200
    assert "Business date <strong>2026-10-08</strong>" in home.text and 'id="signed-in"' in home.text
    assert "turn-panel" not in home.text
    c.close()


@pytest.fixture(scope="module")
def signed_in(form_web: _Web, erp: tuple[Served, dict[str, str]]) -> httpx.Client:
    r = form_web.client.post("/signin", content=f"token={erp[1][USER]}".encode())
    assert r.status_code == 303
    return form_web.client


def test_lists_documents_reports_and_inbox(signed_in: httpx.Client) -> None:
    lists = signed_in.get("/lists")
    assert lists.status_code == 200 and 'href="/r/vendors"' in lists.text
    accounts = signed_in.get("/r/accounts", params={"offset": 0})
    assert accounts.status_code == 200 and 'id="list"' in accounts.text and "2000" in accounts.text
    assert "There is no list at /nothing-here." in signed_in.get("/r/nothing-here").text
    assert signed_in.get("/r/nothing-here").status_code == 404
    period = signed_in.get("/r/periods/2026-10")  # no document route: the row of the list, with its actions
    assert period.status_code == 200 and 'id="fields"' in period.text
    assert 'data-action="period.close"' in period.text and "/act/period.close?period_id=2026-10&_next=/r/periods/2026-10" in period.text
    assert signed_in.get("/r/periods/1999-01").status_code == 404
    missing = signed_in.get("/r/journal-entries/JE-99999")
    assert missing.status_code == 404 and 'id="problem"' in missing.text
    reports = signed_in.get("/reports")
    assert reports.status_code == 200 and "trial-balance" in reports.text
    tb = signed_in.get("/reports/trial-balance", params={"as_of": "2026-10-08"})
    assert tb.status_code == 200 and "<title>Trial balance" in tb.text and "<dt>Balanced</dt>" in tb.text
    assert 'id="problem"' not in tb.text
    inbox = signed_in.get("/inbox")
    assert inbox.status_code == 200 and 'id="inbox"' in inbox.text
    gone = signed_in.get("/inbox/MSG-99999")
    assert gone.status_code == 404 and 'id="problem"' in gone.text
    assert signed_in.get("/files/inbox/MSG-99999/1").status_code == 404
    no_book = signed_in.get("/handbook")
    assert no_book.status_code == 404 and "There is no such handbook page." in no_book.text


def test_an_action_is_drawn_sent_once_and_replayed(signed_in: httpx.Client) -> None:
    assert signed_in.get("/act/nothing.here").status_code == 404
    assert "There is no action msg.list" not in signed_in.get("/act/msg.send").text
    form = signed_in.get("/act/msg.send")
    assert form.status_code == 200 and 'id="action-form"' in form.text and 'name="_key"' in form.text
    body = b"to=ap_clerk&subject=Route+test&body=One+message.&_key=route-test-key-1"
    sent = signed_in.post("/act/msg.send", content=body)
    assert sent.status_code == 303, sent.text[:500]
    assert sent.headers["location"].startswith("/r/outbox") and "notice=Done" in sent.headers["location"]
    listed = signed_in.get(sent.headers["location"])  # the outbox has no document route: its list, with the notice
    assert listed.status_code == 200 and 'id="list"' in listed.text and 'id="notice"' in listed.text
    again = signed_in.post("/act/msg.send", content=body)  # the same key: the ERP replays the first answer
    assert again.status_code == 303 and "repeated%20request" in again.headers["location"]
    outbox = signed_in.get("/r/outbox").text
    assert outbox.count("Route test") == 1


def test_a_committing_action_asks_first_and_shows_the_problem(signed_in: httpx.Client) -> None:
    confirm = signed_in.post("/act/je.submit", content=b"entry_id=JE-99999&_key=route-test-key-2")
    assert confirm.status_code == 200 and 'id="confirm-yes"' in confirm.text
    refused = signed_in.post("/act/je.submit", content=b"entry_id=JE-99999&_key=route-test-key-2&_confirmed=yes")
    assert refused.status_code == 404 and 'id="problem"' in refused.text and 'id="action-form"' in refused.text
    missing = signed_in.post("/act/je.submit", content=b"entry_id=+&_key=route-test-key-3")
    assert missing.status_code == 422 and "must be given" in missing.text


def test_host_routes_need_the_host_token(form_web: _Web) -> None:
    assert form_web.client.get("/_turn").status_code == 401
    assert form_web.client.post("/_turn", json={"n": 1}).status_code == 401
    assert form_web.client.post("/_turn/close", json={}).status_code == 401
    health = form_web.client.get("/healthz")
    assert health.status_code == 200 and health.json()["ok"] is True


def test_human_mode_works_only_during_a_turn(human_web: _Web) -> None:
    c = human_web.client
    assert c.get("/login", params={"key": "wrong"}).status_code == 403
    assert c.post("/signin", content=b"token=x").status_code == 403
    link = c.get("/login", params={"key": LOGIN_KEY})
    assert (link.status_code, link.headers["location"]) == (303, "/")
    assert c.get("/").headers.get("location") == "/waiting"  # no turn open yet
    assert c.get("/waiting").status_code == 200
    host = {"Authorization": f"Bearer {HOST_TOKEN}"}
    assert c.post("/_turn", json={"n": 1}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    opened = c.post("/_turn", headers=host, json={"n": 1, "of": 2, "date": "2026-10-08", "request": "Please pay the run.",
                                                   "from_name": "Dana", "budget_s": 600})
    assert opened.json() == {"turn": 1, "open": True}
    polled = c.get("/_turn", headers=host).json()
    assert (polled["turn"], polled["open"], polled["ended_by"], polled["finished"]) == (1, True, None, False)
    home = c.get("/")
    assert home.status_code == 200 and 'id="turn-panel"' in home.text and "Please pay the run." in home.text
    assert c.get("/waiting").headers.get("location") == "/"
    book = c.get("/handbook")
    assert book.status_code == 200 and "<strong>verified</strong>" in book.text
    assert c.get("/handbook/nothing.md").status_code == 404
    ended = c.post("/turn/end", content=b"turn=1")
    assert (ended.status_code, ended.headers["location"]) == (303, "/waiting")
    assert c.get("/").headers.get("location") == "/waiting"
    assert c.get("/_turn", headers=host).json()["ended_by"] == "person"
    reopened = c.post("/_turn", headers=host, json={"n": 2, "of": 2, "date": "2026-10-09", "request": "Last turn.", "budget_s": 600})
    assert reopened.json() == {"turn": 2, "open": True}
    closed = c.post("/_turn/close", headers=host, json={"finished": True}).json()
    assert (closed["turn"], closed["open"], closed["ended_by"], closed["finished"]) == (2, False, "host", True)
    health = c.get("/healthz").json()
    assert health["ok"] is True and health["finished"] is True
