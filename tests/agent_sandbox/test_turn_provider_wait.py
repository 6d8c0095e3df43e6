"""A turn that waits for the provider's capacity is not timed out for it (issue 42, item 4).

The real entrypoint (`python -m agent_sandbox.turn`) runs a command that makes one model call
through a real gateway; the call queues at a real limiter service behind another attempt's call
that holds the only stream longer than the turn's whole budget. The entrypoint's budget and the
runtime's hard deadline (`TurnLaunch.wait_until_deadline`, asking the gateway's control API) are
both extended by the measured wait, so the turn ends on its own; the same turn without the
extension is timed out at its budget. The extension is capped at three budgets.
"""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_sandbox.provider_wait import PROVIDER_WAIT_KEY_ENV, PROVIDER_WAIT_URL_ENV, extended_deadline
from model_gateway.limiter_service import LimiterService
from model_gateway.limits import ProviderLimits
from model_gateway.local import LocalProcess, start_fake_provider, start_gateway
from orchestrator.backends.base import TurnLaunch

HOST = "model-gateway:8080"
TEXT = {"content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 10, "output_tokens": 2}}
CALL = """
import json, os, sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/v1/messages", method="POST",
    data=json.dumps({"model": "fake-claude", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"host": "model-gateway:8080", "x-api-key": sys.argv[2], "content-type": "application/json"})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
print(opener.open(req, timeout=300).status)
"""


class Stack:
    def __init__(self, tmp: Path, hold_s: float) -> None:
        self.procs: list[LocalProcess] = []
        self.service = LimiterService.start({"anthropic": ProviderLimits(concurrent_streams=1)}, secrets.token_hex(16))
        (tmp / "fake").mkdir()
        fake = start_fake_provider({"match": "any", "steps": [dict(TEXT, delay_s=hold_s)], "otherwise": TEXT},
                                   workdir=tmp / "fake")
        self.procs.append(fake)
        self.gateways = []
        for name in ("hog", "turn"):
            (tmp / name).mkdir()
            vkey = "pbv-" + secrets.token_hex(20)
            proc = start_gateway({"attempt_id": name, "hosts": [HOST], "limiter_url": self.service.url,
                                  "limits": {"anthropic": {"concurrent_streams": 1}},
                                  "providers": {"anthropic": {"base_url": fake.ready["url"], "models": ["fake-claude"]}}},
                                 {"virtual_keys": [vkey], "limiter_token": self.service.token}, workdir=tmp / name)
            self.procs.append(proc)
            self.gateways.append((proc, vkey))
        self.http = httpx.Client(timeout=300, trust_env=False)

    def control(self, which: int, method: str, path: str, **kw: Any) -> dict[str, Any]:
        proc = self.gateways[which][0]
        resp = self.http.request(method, proc.ready["control"] + path,
                                 headers={"authorization": f"Bearer {proc.control_token}"}, **kw)
        resp.raise_for_status()
        return resp.json()

    def hog(self) -> threading.Thread:
        """The other attempt's call, holding the only stream."""
        proc, vkey = self.gateways[0]
        thread = threading.Thread(target=lambda: self.http.post(
            proc.ready["proxy"] + "/v1/messages", headers={"host": HOST, "x-api-key": vkey},
            json={"model": "fake-claude", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}), daemon=True)
        thread.start()
        time.sleep(0.5)
        return thread

    def close(self) -> None:
        for proc in self.procs:
            proc.stop()
        self.service.stop()


@pytest.fixture
def make_stack(tmp_path: Path) -> Iterator[Any]:
    made: list[Stack] = []

    def make(hold_s: float) -> Stack:
        made.append(Stack(tmp_path, hold_s))
        return made[-1]

    yield make
    for stack in made:
        stack.close()


def run_turn(tmp: Path, stack: Stack, budget_s: float, *, extended: bool) -> tuple[int, dict[str, Any], float, bool]:
    """The entrypoint under the runtime's hard deadline; (exit, turn.json, seconds, hard-killed)."""
    turn_dir, workspace = tmp / f"turn-{extended}", tmp / f"ws-{extended}"
    (turn_dir / "out").mkdir(parents=True)
    workspace.mkdir()
    proc_gw, vkey = stack.gateways[1]
    (turn_dir / "prompt.txt").write_text("call the model once")
    (turn_dir / "system.json").write_text(json.dumps({"kind": "command", "name": "caller",
                                                      "argv": [sys.executable, "-c", CALL, proc_gw.ready["proxy"], vkey]}))
    (turn_dir / "context.json").write_text(json.dumps({"turn": 1, "budget_s": budget_s}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "WORKSPACE": str(workspace), "ERP_URL": "http://127.0.0.1:9",
           "ERP_TOKEN": "t", "TURN_BUDGET_S": f"{budget_s:g}", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    if extended:
        env.update({PROVIDER_WAIT_URL_ENV: proc_gw.ready["proxy"] + "/_gateway/provider-wait", PROVIDER_WAIT_KEY_ENV: vkey})
    stack.control(1, "POST", "/control/turn", json={"turn": 1})
    launch = TurnLaunch(n=1, files={}, env=env, budget_s=budget_s, host_turn_dir=turn_dir, log_path=tmp / "log",
                        provider_wait=(lambda: float(stack.control(1, "GET", "/control/provider-wait", params={"turn": 1})
                                                     ["provider_wait_s"])) if extended else None)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "agent_sandbox.turn", "--turn-dir", str(turn_dir)], env=env)
    killed = launch.wait_until_deadline(lambda left: proc.wait(left), (subprocess.TimeoutExpired,), started, 1.0)
    if killed:
        proc.kill()
    code = proc.wait(30)
    return code, json.loads((turn_dir / "out" / "turn.json").read_text()) if not killed else {}, \
        time.monotonic() - started, killed


@pytest.mark.parametrize(("hold_s", "budget_s"), [
    (8.0, 5.0),
    pytest.param(33.0, 20.0, marks=pytest.mark.heavy),  # the case: 30 s of provider wait
])
def test_a_turn_that_waited_for_the_provider_is_not_timed_out_for_it(make_stack: Any, tmp_path: Path,
                                                                      hold_s: float, budget_s: float) -> None:
    stack = make_stack(hold_s)
    hog = stack.hog()
    code, record, took, killed = run_turn(tmp_path, stack, budget_s, extended=True)
    hog.join(60)
    wait = stack.control(1, "GET", "/control/provider-wait", params={"turn": 1})["provider_wait_s"]
    assert not killed and code == 0 and record["timed_out"] is False, (code, record)
    assert wait >= hold_s - 3.0  # it did wait that long for capacity (less the turn's own start) ...
    assert budget_s < took < extended_deadline(0, budget_s, wait)  # ... longer than its budget, and was not cut


def test_without_the_extension_the_same_turn_is_timed_out(make_stack: Any, tmp_path: Path) -> None:
    stack = make_stack(8.0)
    hog = stack.hog()
    code, record, took, killed = run_turn(tmp_path, stack, 4.0, extended=False)
    hog.join(60)
    assert not killed and code == 124 and record["timed_out"] is True
    assert 4.0 <= took < 7.0


def test_the_extension_is_capped_at_the_budget() -> None:
    assert extended_deadline(100.0, 20.0, 5.0) == 125.0
    assert extended_deadline(100.0, 20.0, 50.0) == 170.0  # more than the budget itself
    assert extended_deadline(100.0, 20.0, 300.0) == 180.0  # a turn runs at most four budgets
    assert extended_deadline(100.0, 20.0, -3.0) == 120.0
