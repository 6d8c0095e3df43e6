"""`python -m erp_service standby` (the docker backend's warm start): it says it stands by, waits
for its launch file, then serves exactly as `serve` would with those arguments; a launch file that
is not a list of `serve` arguments ends it with an error line, serving nothing."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
from erp_company import build_company

REPO = Path(__file__).resolve().parents[2]


def _start(launch: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "erp_service", "standby", "--launch", str(launch)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _line(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line, "the process ended without a line"
    return json.loads(line)


def test_standby_then_serve_with_the_launch_arguments(tmp_path):
    (tmp_path / "co").mkdir()
    co = build_company(tmp_path / "co")
    token = tmp_path / "control.token"
    token.write_text("c" * 32)
    launch = tmp_path / "data" / "launch.json"
    proc = _start(launch)
    try:
        assert _line(proc)["event"] == "standby"
        time.sleep(0.3)
        assert proc.poll() is None  # still waiting: nothing to serve yet
        launch.parent.mkdir()
        launch.write_text(json.dumps(["serve", "--db", str(co.path), "--agent-bind", "127.0.0.1:0",
                                      "--control-bind", "127.0.0.1:0", "--control-token-file", str(token)]))
        ready = _line(proc)
        assert ready["event"] == "ready", ready
        with httpx.Client(trust_env=False, timeout=10) as http:
            ok = http.get(ready["control"] + "/control/health", headers={"Authorization": f"Bearer {'c' * 32}"})
            refused = http.get(ready["control"] + "/control/health", headers={"Authorization": "Bearer wrong-token-xx"})
        assert ok.status_code == 200 and refused.status_code == 401, (ok.status_code, refused.status_code)
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_launch_file_that_is_not_serve_arguments_is_refused(tmp_path):
    launch = tmp_path / "launch.json"
    proc = _start(launch)
    try:
        assert _line(proc)["event"] == "standby"
        launch.write_text(json.dumps(["canonical-hash", "--db", "/etc/passwd"]))
        line = _line(proc)
        assert line["event"] == "error" and "serve" in line["detail"], line
        assert proc.wait(30) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
