"""payment-run worked in a real browser, the way the oracle works it, as a human attempt.

The runner opens each turn on the UI, headless chromium plays the person — calls the numbers on
file, verifies the confirmed change, rejects and escalates the refuted one, builds the run from
the approved invoices and submits it — and presses "End turn". The attempt must pass, its record
must say `human`, and the write actions in its audit must be the oracle's, action code for action
code. Two variants: the local backend (real ERP and web UI processes; its screenshots of the main
pages are written to tests/erp_web/screenshots/, docs/ holds the README's) and the docker backend
(`orchestrate human`'s default: the ERP and the web UI in containers, the UI reached through the
port the engine publishes on 127.0.0.1).
"""
from __future__ import annotations

import csv
import json
import re
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from browser import browser_session, screenshot
from repo_paths import REPO_ROOT
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from orchestrator.attempt import AttemptSpec, run_attempt
from orchestrator.backends import make_backend
from orchestrator.cells import parse_cell
from orchestrator.config import RuntimeConfig
from orchestrator.identity import AttemptIdentity
from orchestrator.inputs import load_inputs
from orchestrator.paths import AttemptPaths

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # ~3 min quiet, ~9 min loaded each: make test-heavy
REPO_SHOTS = REPO_ROOT / "tests" / "erp_web" / "screenshots"
# The oracle's reading of a call-back (tasks/payment_run/policies.py).
CONFIRMS = re.compile(r"\b(that's right|that is right|correct|confirm|go ahead)\b", re.I)
DENIES = re.compile(r"\b(have not changed|haven't changed|not changed|do not change|don't change)\b", re.I)


def _wait(driver: Any, css: str, timeout: float = 60) -> Any:
    return WebDriverWait(driver, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, css))


def _press(driver: Any, element: Any) -> None:
    """Click something that loads a new page, and wait until the old page is gone."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()

    def gone(_d: Any) -> bool:
        try:
            old.tag_name  # noqa: B018 — touching the node says whether it still belongs to the page
            return False
        except WebDriverException:  # stale, or "node does not belong to the document" mid-navigation
            return True

    WebDriverWait(driver, 60).until(gone)


def _click(driver: Any, css: str) -> None:
    _press(driver, driver.find_element(By.CSS_SELECTOR, css))


def _confirm(driver: Any) -> None:
    """The confirmation page every committing action passes through."""
    _press(driver, _wait(driver, "#confirm-yes"))


def _fill(driver: Any, name: str, text: str) -> None:
    el = driver.find_element(By.NAME, name)
    if el.tag_name == "select":
        Select(el).select_by_value(text)
    else:
        el.clear()
        el.send_keys(text)


def _field(driver: Any, label: str) -> str:
    for div in driver.find_elements(By.CSS_SELECTOR, "#fields > div"):
        if div.find_element(By.TAG_NAME, "dt").text.strip().lower() == label.lower():
            return str(div.find_element(By.TAG_NAME, "dd").text.strip())
    raise AssertionError(f"no field {label!r} on {driver.current_url}")


def _done(driver: Any) -> None:
    """The action went through (a notice), or fail with the problem the page shows."""
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#notice, #problem"))
    problems = driver.find_elements(By.CSS_SELECTOR, "#problem")
    assert not problems, f"{driver.current_url}: {problems[0].text}"


def _end_turn(driver: Any) -> None:
    driver.find_element(By.CSS_SELECTOR, "#end-turn").click()  # a JS confirm comes first
    driver.switch_to.alert.accept()
    _wait(driver, "#waiting")


def _wait_turn(driver: Any, n: int, timeout: float = 300) -> None:
    """The waiting page reloads itself; the turn's panel appears once the runner opens turn n."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        panels = driver.find_elements(By.CSS_SELECTOR, "#turn-panel .turn-no")
        if panels and panels[0].text.startswith(f"Turn {n} "):
            return
        time.sleep(1)
        if not driver.find_elements(By.CSS_SELECTOR, "#waiting"):
            driver.get(driver.current_url)
    raise AssertionError(f"turn {n} did not open in the UI within {timeout}s")


def _turn1(driver: Any, ui: str, shots: Path) -> None:
    """VEN-2.1..2.3: call the number on file for each pending change; verify or reject + escalate."""
    driver.get(f"{ui}/r/vendor-bank-accounts?status=pending")
    ids = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#list tbody tr td:first-child")]
    assert len(ids) == 2, f"two pending bank-detail changes expected, the list shows {ids}"
    for vba in sorted(ids):
        doc = f"{ui}/r/vendor-bank-accounts/{vba}"
        driver.get(doc)
        last4 = _field(driver, "Account number")[-4:]
        source = _field(driver, "Source ref")
        if vba == sorted(ids)[0]:
            screenshot(driver, shots, "bank-change")
        _click(driver, "a[data-action='call']")
        _wait(driver, "#action-form")
        assert driver.find_element(By.NAME, "party_id").get_attribute("value").startswith("V-")
        assert driver.find_element(By.NAME, "number").get_attribute("value") == ""  # the number on file
        _click(driver, "#submit")
        transcript = _wait(driver, "#transcript").text
        confirmed = bool(CONFIRMS.search(transcript)) and not DENIES.search(transcript) and last4 in transcript
        driver.get(doc)
        if confirmed:
            _click(driver, "a[data-action='vendor.bank.verify']")
            _wait(driver, "#action-form")
            _fill(driver, "note", "Confirmed by a call to the number on file (VEN-2.2).")
            _click(driver, "#submit")
            _confirm(driver)
            _done(driver)
            disposition, note = "processed", "verified by call-back"
        else:
            _click(driver, "a[data-action='vendor.bank.reject']")
            _wait(driver, "#action-form")
            _fill(driver, "note", "The vendor did not confirm the change on the number on file (VEN-2.3).")
            _click(driver, "#submit")
            _confirm(driver)
            _done(driver)
            driver.get(doc)
            _click(driver, "a[data-action='escalate']")
            _wait(driver, "#action-form")
            _fill(driver, "to", "priya.raman")
            _fill(driver, "reason", "fraud_suspected")
            _fill(driver, "note", "Bank-detail change refuted by the vendor on the number on file; account rejected.")
            _click(driver, "#submit")
            _done(driver)
            disposition, note = "suspicious", "refuted by call-back"
        driver.get(f"{ui}/inbox/{source}")
        _click(driver, "a[data-action='msg.dispose']")
        _wait(driver, "#action-form")
        _fill(driver, "disposition", disposition)
        _fill(driver, "ref", vba)
        _fill(driver, "note", note)
        _click(driver, "#submit")
        _done(driver)
    driver.get(f"{ui}/inbox")
    screenshot(driver, shots, "inbox")


def _turn2(driver: Any, ui: str, expected: list[dict[str, str]], shots: Path) -> None:
    """PAY-1.1, PAY-2.x, TRE-1.x: one run from OPER with the invoices the policy selects, submitted."""
    driver.get(f"{ui}/r/ap-invoices?status=approved")
    first = driver.find_element(By.CSS_SELECTOR, "#list tbody tr td:first-child a")
    _press(driver, first)
    _wait(driver, "#fields")
    screenshot(driver, shots, "invoice")
    driver.get(f"{ui}/r/payment-runs")
    _click(driver, "#create")
    _wait(driver, "#action-form")
    _fill(driver, "memo", "Weekly payment run")
    screenshot(driver, shots, "payment-run-form")
    _click(driver, "#submit")
    _confirm(driver)
    _wait(driver, "#candidates")
    run_url = driver.current_url.split("?")[0]
    for row in expected:
        tr = driver.find_element(By.CSS_SELECTOR, f"#candidates tr[data-invoice-no='{row['invoice_no']}']")
        if float(row["discount"]) > 0:
            Select(tr.find_element(By.NAME, "take_discount")).select_by_value("true")
        _press(driver, tr.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        _done(driver)
    driver.get(run_url)
    payments = driver.find_elements(By.CSS_SELECTOR, "#table-payments tbody tr")
    assert len(payments) == len(expected)
    screenshot(driver, shots, "payment-run", full_page=True)
    _click(driver, "a[data-action='pay.submit']")
    _wait(driver, "#action-form")
    _click(driver, "#submit")
    _confirm(driver)
    _done(driver)
    driver.get(f"{ui}/reports/ap-aging")
    _wait(driver, "#report")
    screenshot(driver, shots, "report")


def _write_actions(audit: Path) -> Counter[str]:
    rows = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines() if line.strip()]
    return Counter(r["action"] for r in rows if r.get("channel") == "api" and r.get("action") != "read" and r.get("outcome") == "ok")


def _browser_attempt(backend: Any, config: RuntimeConfig, shots: Path) -> tuple[Any, AttemptPaths]:
    """Run the human attempt of payment-run seed 0 on `backend` and play both turns in chromium;
    the attempt's result and folder."""
    with browser_session() as driver:
        cell = parse_cell("human:payment-run")
        inputs = load_inputs(cell, 0)
        spec = AttemptSpec(cell=cell, seed=0, rep=1, label="browser")
        outcome: dict[str, Any] = {}
        cancel = threading.Event()  # set if the browser part fails: the attempt tears itself down

        def attempt() -> None:
            try:
                outcome["result"] = run_attempt(spec, backend=backend, config=config, task=inputs.task,
                                                scenario=inputs.scenario, cancel=cancel)
            except BaseException as exc:  # noqa: BLE001 — reported by the test below
                outcome["error"] = exc

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        try:
            paths = AttemptPaths.for_identity(config.runs_root, "browser", AttemptIdentity.of(cell, 0, 1, 1))
            human_json = paths.root / "human.json"
            deadline = time.monotonic() + 600
            while not human_json.exists():
                assert worker.is_alive(), f"the attempt ended before the UI was up: {outcome}"
                assert time.monotonic() < deadline, "the web UI did not come up"
                time.sleep(0.5)
            info = json.loads(human_json.read_text())
            ui = info["url"]
            assert ui.startswith("http://127.0.0.1:")  # host loopback only
            assert info["isolation"] == backend.isolation
            driver.get(info["login_url"])
            _wait_turn(driver, 1)
            assert "bank account" in driver.find_element(By.ID, "turn-request").text
            assert driver.find_element(By.ID, "countdown").text.count(":") == 1
            screenshot(driver, shots, "overview")
            _turn1(driver, ui, shots)
            _end_turn(driver)
            _wait_turn(driver, 2)
            assert "Business date 2026-10-09" in driver.find_element(By.ID, "business-date").text  # the clock advanced
            with open(inputs.scenario.reference_dir / "run_payments.csv", newline="", encoding="utf-8") as fh:
                expected = list(csv.DictReader(fh))
            _turn2(driver, ui, expected, shots)
            _end_turn(driver)
            worker.join(600)
            assert not worker.is_alive(), "the attempt did not finish after the last turn"
        finally:
            cancel.set()
            worker.join(120)
    assert "error" not in outcome, outcome.get("error")
    return outcome["result"], paths


def _check_like_the_oracle(result: Any, paths: AttemptPaths, config: RuntimeConfig, isolation: str, shots: Path) -> None:
    rec = result.record
    failed = [c for c in rec["checks"] if not c["passed"]]
    assert rec["outcome"] == "graded" and rec["passed"], failed or rec.get("error")
    assert rec["system"] == "human" and rec["cell"] == "human:payment-run" and rec["isolation"] == isolation
    assert [t["notes"] for t in rec["turns"]] == [["ended by the person (End turn)"]] * 2

    # The oracle, through the API, on the same scenario: the same write actions, one for one.
    # (Its action codes do not depend on the backend; the local one is the cheaper.)
    oracle_cell = parse_cell("oracle:payment-run")
    oracle_inputs = load_inputs(oracle_cell, 0)
    oracle = run_attempt(AttemptSpec(cell=oracle_cell, seed=0, rep=1, label="browser"), backend=make_backend("local", config),
                         config=config, task=oracle_inputs.task, scenario=oracle_inputs.scenario)
    assert oracle.passed, oracle.record.get("error")
    browser_actions = _write_actions(paths.audit_jsonl)
    oracle_actions = _write_actions(oracle.paths.audit_jsonl)
    assert browser_actions == oracle_actions
    assert {"call", "vendor.bank.verify", "vendor.bank.reject", "escalate", "msg.dispose", "pay.create_run", "pay.add",
            "pay.submit"} <= set(browser_actions)
    for name in ("overview", "inbox", "invoice", "payment-run-form", "payment-run", "report"):
        assert (shots / f"{name}.png").stat().st_size > 10_000


def test_payment_run_worked_in_the_browser_passes_like_the_oracle(tmp_path: Path) -> None:
    config = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign="browser")
    result, paths = _browser_attempt(make_backend("local", config), config, REPO_SHOTS)
    _check_like_the_oracle(result, paths, config, "none", REPO_SHOTS)


@pytest.mark.docker
def test_payment_run_worked_in_the_browser_in_containers(tmp_path: Path, images: Any, docker_client: Any) -> None:
    """`orchestrate human`'s default: the ERP and the web UI in containers, the UI on 127.0.0.1 only."""
    from orchestrator.config import Images

    config = RuntimeConfig.from_env(runs_root=tmp_path / "runs", campaign=f"browser-docker-{uuid.uuid4().hex[:6]}",
                                    images=Images(erp=images.erp.tag, agent=images.agent.tag))
    shots = tmp_path / "shots"
    try:
        result, paths = _browser_attempt(make_backend("docker", config), config, shots)
        web_log = paths.logs / "web.log"
        assert '"event": "ready"' in web_log.read_text(), "the web UI's container log was not followed"
        _check_like_the_oracle(result, paths, config, "docker", shots)
    finally:
        where = {"label": f"pb.campaign={config.campaign}"}
        left = [*docker_client.containers.list(all=True, filters=where), *docker_client.networks.list(filters=where),
                *docker_client.volumes.list(filters=where)]
        for o in left:
            try:
                o.remove(force=True) if hasattr(o, "stop") else o.remove()
            except Exception:  # noqa: BLE001 — best effort; the assert reports them
                pass
    assert not left, f"left behind: {[o.name for o in left]}"
