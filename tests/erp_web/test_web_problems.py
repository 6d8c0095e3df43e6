"""The web UI shows the ERP's problems: a refusal at the top of the form, a 422 beside its field.

A real ERP process on payment-run's scenario, a real web UI process in front of it, headless
chromium clicking. The page must show the very detail the agent API answers for the same request.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from browser import browser_session
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from orchestrator.scenarios.cache import ensure_scenario

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a real browser (chromium installed by apt on first use): make test-heavy


def _serve(argv: list[str], cwd: Path) -> tuple[subprocess.Popen[str], dict]:
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    ready = json.loads(line) if line.startswith("{") else {}
    assert ready.get("event") == "ready", line
    return proc, ready


def test_refusal_and_field_error_are_shown_on_the_page(tmp_path: Path) -> None:
    scenario = ensure_scenario("payment-run", 0)
    (tmp_path / "db.sqlite").write_bytes(scenario.db.read_bytes())
    (tmp_path / "ctok").write_text("control-token-for-the-web-test")
    token = str(scenario.meta["agent_token"])
    (tmp_path / "tok").write_text(token)
    (tmp_path / "key").write_text("sign-in-key")
    erp, ready = _serve([sys.executable, "-m", "erp_service", "serve", "--db", "db.sqlite", "--world", str(scenario.world),
                         "--agent-bind", "127.0.0.1:0", "--control-bind", "127.0.0.1:0", "--control-token-file", "ctok"], tmp_path)
    web = None
    try:
        web, web_ready = _serve([sys.executable, "-m", "erp_web", "serve", "--api", ready["agent"], "--bind", "127.0.0.1:0",
                                 "--token-file", "tok", "--login-key-file", "key"], tmp_path)
        ui = web_ready["web"]
        with browser_session() as driver:
            driver.get(f"{ui}/login?key=sign-in-key")
            # 422: a pay date that is not a date; the ERP's message beside the field.
            driver.get(f"{ui}/act/pay.create_run")
            date = driver.find_element(By.NAME, "pay_date")
            date.clear()
            date.send_keys("next friday")
            driver.find_element(By.ID, "submit").click()
            driver.find_element(By.ID, "confirm-yes").click()
            err = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "error-pay_date"))
            assert "YYYY-MM-DD" in err.text
            assert driver.find_element(By.NAME, "pay_date").get_attribute("value") == "next friday"  # kept for correction
            # A hard control: the AP supervisor may not approve a payment run (the controller does).
            runs = httpx.get(f"{ready['agent']}/payment-runs", params={"status": "released", "limit": 1},
                             headers={"Authorization": f"Bearer {token}"}, trust_env=False).json()["data"]["items"]
            run_id = runs[0]["id"]
            driver.get(f"{ui}/act/pay.approve?run_id={run_id}")
            driver.find_element(By.ID, "submit").click()
            driver.find_element(By.ID, "confirm-yes").click()
            problem = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "problem")).text
        direct = httpx.post(f"{ready['agent']}/payment-runs/{run_id}/approve", headers={"Authorization": f"Bearer {token}"},
                            trust_env=False)
        assert direct.status_code in (403, 409)
        assert direct.json()["detail"] in problem
        # Both clicks were audited agent requests: one invalid, one refused.
        audit = httpx.get(f"{ready['control']}/control/audit", params={"limit": 1000},
                          headers={"Authorization": "Bearer control-token-for-the-web-test"}, trust_env=False).json()["items"]
        outcomes = [(e["action"], e["outcome"]) for e in audit if e["channel"] == "api" and e["action"] != "read"]
        assert ("pay.create_run", "invalid") in outcomes
        assert outcomes.count(("pay.approve", "refused")) == 2  # the browser's and the direct one
    finally:
        for proc in (web, erp):
            if proc is not None:
                proc.terminate()
                proc.wait(20)
