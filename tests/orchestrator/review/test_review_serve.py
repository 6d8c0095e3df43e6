"""`orchestrate review LABEL --serve` (issue 33): decisions recorded from the browser report.

A real local campaign of the mini pack (tests/support/mini_pack.py: the null policy, which fails
`escalated`) is served by the review app on 127.0.0.1 (a real uvicorn server in a thread) and driven
with a real HTTP client: each failed check of the attempt's page has a form; a POSTed decision is
appended to `reviews.jsonl` with who and when, shown on the page and in the static report, and the
label still verifies. Refused, with nothing written: a POST without the page's form token or with
another's, one from another site's origin, one addressed to a non-loopback host (DNS rebinding),
a `task_wrong` without a note, a check that passed, an unknown attempt. The server listens on a
loopback address only. A real browser (heavy) records a decision through the form.
"""
from __future__ import annotations

import html
import json
import re
import threading
import time
from pathlib import Path

import httpx
import pytest
from mini_pack import mini_work

from orchestrator.campaign.export import verify_label
from orchestrator.cli import main
from orchestrator.review.decisions import DECISIONS_FILE, WHEN_FORMAT, ReviewError, failed_checks
from orchestrator.review.serve import TOKEN_FIELD, ReviewSite, check_host, host_is_loopback, make_server

pytestmark = pytest.mark.slow  # one local mini attempt, then HTTP on loopback

LABEL = "rev"
FAILED = "escalated"
PASSED = "no foreign credentials"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("review-serve")
    with mini_work(work):
        runs = work / "runs"
        assert main(["campaign", "--backend", "local", "--label", LABEL, "--runs-root", str(runs),
                     "--cells", "null:mini", "--seeds", "0", "--reps", "1"]) in (0, 1)
        yield runs


@pytest.fixture(scope="module")
def served(runs: Path):
    """(site, base URL, the null attempt's ledger line) with the app running on 127.0.0.1."""
    site = ReviewSite(runs, LABEL, reviewer="ana")
    server, sock, url = make_server(site)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    [line] = [json.loads(t) for t in (runs / LABEL / "attempts.jsonl").read_text().splitlines()]
    assert FAILED in {c["name"] for c in failed_checks(line)}
    assert PASSED not in {c["name"] for c in failed_checks(line)}
    try:
        yield site, url.rstrip("/"), line
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        site.close()


def _decisions(runs: Path) -> list[dict]:
    path = runs / LABEL / DECISIONS_FILE
    return [json.loads(t) for t in path.read_text().splitlines()] if path.is_file() else []


def _attempt_page(url: str, line: dict) -> tuple[str, str]:
    """(the attempt page's path, its HTML), found through the label page's link as a reader would."""
    index = httpx.get(url + "/")
    assert index.status_code == 200
    [href] = sorted(set(re.findall(r"href='(report_files/[^']+\.html)'", index.text)))
    page = httpx.get(f"{url}/{href}")
    assert page.status_code == 200 and line["attempt_id"] in page.text
    return "/" + href, page.text


def _form(page: str) -> str:
    m = re.search(rf"name='{TOKEN_FIELD}' value='([^']+)'", page)
    assert m, "no decision form on the page"
    return m.group(1)


def test_each_failed_check_has_a_form_and_the_pages_run_no_script(served):
    _site, url, line = served
    _path, page = _attempt_page(url, line)
    forms = re.findall(r"<form class='decide' method='post' action='/decide'>.*?</form>", page)
    checks = sorted(html.unescape(re.search(r"name='check' value='([^']+)'", f).group(1))  # type: ignore[union-attr]
                    for f in forms)
    assert checks == sorted(str(c["name"]) for c in failed_checks(line))
    head = httpx.get(url + "/").headers
    assert "script-src" not in head["content-security-policy"] and "default-src 'none'" in head["content-security-policy"]
    assert "frame-ancestors 'none'" in head["content-security-policy"] and head["x-frame-options"] == "DENY"
    assert httpx.get(url + "/report_files/..%2F..%2Fattempts.jsonl").status_code == 404
    assert httpx.get(url + "/campaign.json").status_code == 404


def test_a_decision_posted_from_the_page_is_recorded_with_who_and_when(served, runs):
    _site, url, line = served
    path, page = _attempt_page(url, line)
    before = len(_decisions(runs))
    note = "calling the number on file first is allowed by VEN-1.1 <b>not</b> markup"
    r = httpx.post(url + "/decide", headers={"Origin": url}, data={
        TOKEN_FIELD: _form(page), "attempt_id": line["attempt_id"], "check": FAILED, "decision": "task_wrong",
        "kind": "handbook_gap", "note": note, "who": "ana"})
    assert r.status_code == 303 and r.headers["location"] == path
    rows = _decisions(runs)
    assert len(rows) == before + 1
    row = rows[-1]
    assert (row["attempt_id"], row["check"], row["decision"], row["kind"], row["note"], row["who"]) == (
        line["attempt_id"], FAILED, "task_wrong", "handbook_gap", note, "ana")
    time.strptime(row["when"], WHEN_FORMAT)
    shown = httpx.get(url + path).text
    assert "task_wrong (handbook_gap)" in shown and "&lt;b&gt;not&lt;/b&gt;" in shown and "<b>not</b>" not in shown
    # the label page's counts, the static report, and the label's verification see it too
    assert re.search(r"<td class='warn'>1</td>", httpx.get(url + "/").text)
    assert verify_label(runs, LABEL).ok
    assert main(["report", LABEL, "--runs-root", str(runs)]) == 0
    assert "task_wrong (handbook_gap)" in "".join(p.read_text() for p in (runs / LABEL / "report_files").glob("*.html"))


@pytest.mark.parametrize("case", ["no token", "another token", "another origin", "another referer",
                                  "rebound host", "task_wrong without a note", "a check that passed",
                                  "an unknown attempt", "an unknown decision"])
def test_a_refused_post_writes_nothing(served, runs, case):
    _site, url, line = served
    _path, page = _attempt_page(url, line)
    form = {TOKEN_FIELD: _form(page), "attempt_id": line["attempt_id"], "check": FAILED, "decision": "agent_wrong",
            "kind": "", "note": "", "who": "mallory"}
    headers = {"Origin": url}
    want = 400
    if case == "no token":
        form.pop(TOKEN_FIELD)
        want = 403
    elif case == "another token":
        form[TOKEN_FIELD] = "x" * len(form[TOKEN_FIELD])
        want = 403
    elif case == "another origin":
        headers = {"Origin": "http://evil.example"}
        want = 403
    elif case == "another referer":
        headers = {"Referer": "http://evil.example/page.html"}
        want = 403
    elif case == "rebound host":
        headers = {"Host": "evil.example:80", "Origin": "http://evil.example:80"}
        want = 421
    elif case == "task_wrong without a note":
        form.update(decision="task_wrong", kind="alternative")
    elif case == "a check that passed":
        form["check"] = PASSED
    elif case == "an unknown attempt":
        form["attempt_id"] = "null__mini.s0.r1.0000000000"
    else:
        form["decision"] = "both_wrong"
    before = (runs / LABEL / DECISIONS_FILE).read_bytes() if (runs / LABEL / DECISIONS_FILE).is_file() else b""
    r = httpx.post(url + "/decide", headers=headers, data=form)
    assert r.status_code == want, (r.status_code, r.text)
    after = (runs / LABEL / DECISIONS_FILE).read_bytes() if (runs / LABEL / DECISIONS_FILE).is_file() else b""
    assert after == before
    if want == 400:
        assert "nothing was recorded" in r.text


def test_a_page_asked_for_under_another_host_name_is_refused(served):
    _site, url, _line = served
    assert httpx.get(url + "/", headers={"Host": "attacker.example"}).status_code == 421
    assert httpx.get(url + "/", headers={"Host": "localhost"}).status_code == 200
    assert [host_is_loopback(h) for h in ("127.0.0.1:8000", "[::1]:9", "localhost", "10.0.0.1:80", "", "evil:1")] == [
        True, True, True, False, False, False]


def test_the_server_listens_on_loopback_only(runs):
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.org"):
        with pytest.raises(ReviewError, match="loopback"):
            check_host(host)
    assert main(["review", LABEL, "--runs-root", str(runs), "--serve", "--host", "0.0.0.0"]) == 2


@pytest.mark.heavy  # a real browser (chromium installed by apt on first use)
def test_a_reviewer_records_a_decision_in_a_real_browser(served, runs, tmp_path):
    from browser import browser_session, screenshot
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _site, url, line = served
    path, _page = _attempt_page(url, line)
    before = len(_decisions(runs))
    with browser_session() as driver:
        driver.get(url + path)
        form = next(f for f in driver.find_elements(By.CSS_SELECTOR, "form.decide")
                    if f.find_element(By.NAME, "check").get_attribute("value") == FAILED)
        form.find_element(By.CSS_SELECTOR, "input[value='task_wrong']").click()
        Select(form.find_element(By.NAME, "kind")).select_by_value("alternative")
        form.find_element(By.NAME, "note").send_keys("an escalation by phone is allowed by VEN-1.1")
        who = form.find_element(By.NAME, "who")
        who.clear()
        who.send_keys("bo")
        screenshot(driver, tmp_path, "review-form")
        form.find_element(By.CSS_SELECTOR, "button[type='submit']").click()
        deadline = time.monotonic() + 20
        while len(_decisions(runs)) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert driver.current_url == url + path
        assert "an escalation by phone is allowed by VEN-1.1" in driver.page_source
        screenshot(driver, tmp_path, "review-recorded")
    row = _decisions(runs)[-1]
    assert (row["check"], row["decision"], row["kind"], row["who"]) == (FAILED, "task_wrong", "alternative", "bo")


def test_a_task_wrong_decision_from_the_page_then_a_new_version_on_disk_flips_exactly_that_check(served, runs):
    """Runs last: it writes version 2 of the pack (the decided check made optional) into the
    module's tasks root, as a task author would after reading the decision."""
    from orchestrator.regrade.rescore import regrade_label

    _site, url, line = served
    _path, page = _attempt_page(url, line)
    note = "the controller accepts a call-back log instead of an escalation record (VEN-1.1 is silent)"
    r = httpx.post(url + "/decide", headers={"Origin": url}, data={
        TOKEN_FIELD: _form(page), "attempt_id": line["attempt_id"], "check": FAILED, "decision": "task_wrong",
        "kind": "alternative", "note": note, "who": "ana"})
    assert r.status_code == 303
    pack = runs.parent / "tasks" / "mini" / "task.yaml"
    text = pack.read_text()
    assert text.count(f"  - name: {FAILED}\n") == 1 and "version: 1\n" in text
    pack.write_text(text.replace("version: 1\n", "version: 2\n", 1)
                    .replace(f"  - name: {FAILED}\n", f"  - name: {FAILED}\n    required: false\n"))
    done = regrade_label(runs, LABEL, "rev-v2")
    assert (done.regraded, done.not_regradable) == (1, [])
    delta = json.loads((runs / "rev-v2" / "delta.json").read_text())
    [attempt] = delta["cells"]["null:mini"]["attempts"]
    assert attempt["source_attempt_id"] == line["attempt_id"]
    assert [c["check"] for c in attempt["checks"]] == [FAILED]  # exactly the decided check, nothing else
    assert list(delta["cells"]["null:mini"]["checks"]) == [FAILED]
    [flip] = delta["cells"]["null:mini"]["checks"][FAILED]["now_optional"]
    assert flip["before"]["required"] is True and flip["after"]["required"] is False
    new_line = json.loads((runs / "rev-v2" / "attempts.jsonl").read_text().splitlines()[0])
    assert new_line["identity"]["task_version"] == "2"
    assert main(["report", "rev-v2", "--runs-root", str(runs)]) == 0
    changed = (runs / "rev-v2" / "report.html").read_text()
    changed = changed[changed.index("What the rescoring changed"):]
    assert html.escape(f"task_wrong (alternative): {note} (ana)", quote=True) in changed
    assert verify_label(runs, "rev-v2").ok and verify_label(runs, LABEL).ok
