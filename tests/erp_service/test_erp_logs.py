"""The ERP's own log: a real `python -m erp_service serve` process writes JSON lines to stderr
(start, each advanced day, stop) while stdout keeps only its contract lines."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
from erp_company import build_company
from repo_paths import REPO_ROOT

REPO = REPO_ROOT
TOKEN = "control-token-0123456789abcdef"


def test_serve_logs_json_lines_on_stderr(tmp_path):
    company = build_company(tmp_path)
    company.builder.finish()
    (tmp_path / "control.token").write_text(TOKEN)
    err = (tmp_path / "erp.stderr").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "erp_service", "serve", "--db", str(company.path),
                             "--control-token-file", str(tmp_path / "control.token")],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        ready = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
        assert ready["event"] == "ready"
        control = httpx.Client(base_url=ready["control"], headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert control.post("/control/advance", json={"to": "2026-10-10"}).status_code == 200
        assert control.post("/control/shutdown").json() == {"ok": True}
        assert proc.wait(timeout=30) == 0
        rest = proc.stdout.read().splitlines()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
    assert [json.loads(x)["event"] for x in rest] == ["stopped"]          # stdout: only the contract
    deadline = time.time() + 5
    text = (tmp_path / "erp.stderr").read_text()
    while time.time() < deadline and '"shutdown_complete"' not in text:
        time.sleep(0.05)
        text = (tmp_path / "erp.stderr").read_text()
    events = [json.loads(line) for line in text.splitlines()]             # every line is JSON
    assert all({"event", "level", "timestamp", "logger"} <= set(e) for e in events), events
    names = [e["event"] for e in events]
    assert names[0] == "serving" and names[-1] == "shutdown_complete", names
    assert events[0]["business_date"] == "2026-10-08" and events[0]["logger"] == "erp_service.server"
    days = [e for e in events if e["event"] == "day_advanced"]
    assert [d["date"] for d in days] == ["2026-10-09", "2026-10-10"]
    assert all(isinstance(d["actions"], int) and d["duration_s"] >= 0 for d in days)
