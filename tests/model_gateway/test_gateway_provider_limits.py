"""Provider limits through real gateways (issue 42, item 4): two or more gateway processes share
one limiter service over HTTP in front of one fake provider, all on loopback. Calls queue rather
than reach a busy provider, the waits land on the usage-log rows and in the turn's provider wait,
a flood from one attempt does not starve another, and a 429 / 529 still answered is retried
within the declared policy (Retry-After honoured, capped) — each beside the case that differs."""
from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from model_gateway.limiter_service import LimiterService
from model_gateway.limits import ProviderLimits
from model_gateway.local import LocalProcess, start_fake_provider, start_gateway

HOST = "model-gateway:8080"
REAL_KEY = "sk-real-" + "r" * 32
TEXT = {"content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 100, "output_tokens": 5}}
BODY = {"model": "fake-claude", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}


class Gw:
    """One attempt's gateway process, as a test talks to it."""

    def __init__(self, proc: LocalProcess, vkey: str) -> None:
        self.proc, self.vkey = proc, vkey
        self.url, self.control_url = proc.ready["proxy"], proc.ready["control"]
        self.http = httpx.Client(timeout=120, trust_env=False)

    def call(self, text: str = "hi") -> httpx.Response:
        body = dict(BODY, messages=[{"role": "user", "content": text}])
        return self.http.post(self.url + "/v1/messages", json=body, headers={"host": HOST, "x-api-key": self.vkey})

    def control(self, path: str, **params: Any) -> dict[str, Any]:
        resp = self.http.get(self.control_url + path, params=params,
                             headers={"authorization": f"Bearer {self.proc.control_token}"})
        resp.raise_for_status()
        return resp.json()

    def mark_turn(self, n: int) -> None:
        self.http.post(self.control_url + "/control/turn", json={"turn": n},
                       headers={"authorization": f"Bearer {self.proc.control_token}"}).raise_for_status()

    def rows(self) -> list[dict[str, Any]]:
        return self.control("/control/usage-log")["items"]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Any]:
    procs: list[LocalProcess] = []
    services: list[LimiterService] = []

    def fake(steps: list[dict[str, Any]], otherwise: dict[str, Any] = TEXT, rate_limit_rpm: int | None = None) -> str:
        work = tmp_path / f"fake{len(procs)}"
        work.mkdir()
        proc = start_fake_provider({"match": "any", "require_key": REAL_KEY, "steps": steps, "otherwise": otherwise},
                                   workdir=work, rate_limit_rpm=rate_limit_rpm)
        procs.append(proc)
        return str(proc.ready["url"])

    def limiter(**limits: int) -> LimiterService:
        service = LimiterService.start({"anthropic": ProviderLimits(**limits)}, secrets.token_hex(16))
        services.append(service)
        return service

    def gateway(upstream: str, attempt: str, *, service: LimiterService | None = None,
                limits: dict[str, int] | None = None, retry: dict[str, Any] | None = None) -> Gw:
        work = tmp_path / f"gw{len(procs)}"
        work.mkdir()
        vkey = "pbv-" + secrets.token_hex(20)
        config: dict[str, Any] = {"attempt_id": attempt, "hosts": [HOST],
                                  "providers": {"anthropic": {"base_url": upstream, "models": ["fake-claude"]}}}
        keys: dict[str, Any] = {"upstream_keys": {"anthropic": REAL_KEY}, "virtual_keys": [vkey]}
        if service is not None or limits is not None:
            config["limits"] = {"anthropic": limits or {}}
        if service is not None:
            config["limiter_url"] = service.url
            keys["limiter_token"] = service.token
        if retry is not None:
            config["retry"] = retry
        proc = start_gateway(config, keys, workdir=work)
        procs.append(proc)
        return Gw(proc, vkey)

    yield fake, limiter, gateway
    for proc in procs:
        proc.stop()
    for service in services:
        service.stop()


def in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def test_two_attempts_share_one_limiter_and_the_wait_is_recorded(stack: Any) -> None:
    fake, limiter, gateway = stack
    upstream = fake([dict(TEXT, delay_s=2.0)])  # the first call holds the only stream for 2 s
    service = limiter(concurrent_streams=1)
    a, b = gateway(upstream, "attempt-a", service=service), gateway(upstream, "attempt-b", service=service)
    a.mark_turn(1)
    b.mark_turn(1)
    first, got_a = in_thread(a.call)
    time.sleep(0.4)
    assert b.call().status_code == 200  # queued behind a's call, then served
    first.join(30)
    assert got_a[0].status_code == 200
    (row_b,) = b.rows()
    (row_a,) = a.rows()
    # Relative bounds (a loaded machine slows every HTTP hop): b waited for most of a's 2 s call.
    assert row_b["queued_s"] >= 1.2 and row_b["retries"] == 0
    assert row_a["queued_s"] < row_b["queued_s"] - 0.8
    wait_b = b.control("/control/provider-wait", turn=1)["provider_wait_s"]
    wait_a = a.control("/control/provider-wait", turn=1)["provider_wait_s"]
    assert wait_b >= 1.2  # b's turn waited for capacity ...
    assert wait_a < wait_b - 0.8  # ... a's was being served
    stats = service.stats()["providers"]["anthropic"]
    assert stats["granted"] == {"attempt-a": 1, "attempt-b": 1}
    # The same two calls with no limiter: nothing queues (the control for the measurement above).
    plain = fake([dict(TEXT, delay_s=2.0)])
    c, d = gateway(plain, "attempt-c"), gateway(plain, "attempt-d")
    t, _ = in_thread(c.call)
    time.sleep(0.4)
    assert d.call().status_code == 200
    t.join(30)
    assert d.rows()[0]["queued_s"] == 0.0


def test_a_flood_from_one_attempt_does_not_starve_another(stack: Any) -> None:
    fake, limiter, gateway = stack
    upstream = fake([], otherwise=dict(TEXT, delay_s=0.25))
    service = limiter(concurrent_streams=1)
    flood, quiet = gateway(upstream, "flood", service=service), gateway(upstream, "quiet", service=service)
    threads = [in_thread(flood.call) for _ in range(16)]  # 16 calls of 0.25 s each: 4 s of the stream
    deadline = time.monotonic() + 60
    while service.stats()["providers"]["anthropic"]["waiting"] < 10:  # the flood is in line first
        assert time.monotonic() < deadline, service.stats()
        time.sleep(0.05)
    assert quiet.call("quiet").status_code == 200
    for thread, _ in threads:
        thread.join(120)
    assert all(out and out[0].status_code == 200 for _, out in threads)
    stats = service.stats()["providers"]["anthropic"]
    # While the quiet attempt's call waited, the flood got at most one grant (round-robin): not
    # the ten or more of its calls that were in line before it.
    assert stats["granted"] == {"flood": 16, "quiet": 1}
    assert stats["overtaken"]["quiet"] <= 1, stats
    assert stats["overtaken"]["flood"] >= 10
    assert quiet.rows()[0]["queued_s"] < max(r["queued_s"] for r in flood.rows()) / 2  # the flood waited behind itself


def test_a_rate_limit_answer_is_retried_with_retry_after_honoured_and_capped(stack: Any) -> None:
    fake, _limiter, gateway = stack
    upstream = fake([{"fail": {"status": 429, "type": "rate_limit_error", "retry_after": 1}},
                     {"fail": {"status": 529, "type": "overloaded_error", "retry_after": 100}}])
    gw = gateway(upstream, "a", retry={"max_retries": 3, "max_wait_s": 1.5, "total_wait_s": 10})
    gw.mark_turn(1)
    started = time.monotonic()
    resp = gw.call()
    took = time.monotonic() - started
    assert resp.status_code == 200, resp.text  # the agent never saw the two refusals
    (row,) = gw.rows()
    assert row["retries"] == 2
    assert row["throttled_s"] == pytest.approx(2.5)  # 1 s as asked, then 100 s capped at 1.5 s
    assert 2.4 <= took < 5
    assert gw.control("/control/provider-wait", turn=1)["provider_wait_s"] >= 2.4


def test_retries_end_within_the_policy_and_pass_the_providers_answer(stack: Any) -> None:
    fake, _limiter, gateway = stack
    upstream = fake([], rate_limit_rpm=1)  # a provider that answers 429 beyond one call a minute
    gw = gateway(upstream, "a", retry={"max_retries": 2, "max_wait_s": 0.3, "total_wait_s": 5})
    no_retry = gateway(upstream, "b")
    assert gw.call().status_code == 200
    resp = gw.call()
    assert resp.status_code == 429  # after two retries the provider's own answer reaches the agent
    assert resp.json()["error"]["type"] == "rate_limit_error"
    row = gw.rows()[-1]
    assert (row["retries"], row["throttled_s"], row["status"]) == (2, pytest.approx(0.6), "upstream_status")
    plain = no_retry.call()  # no policy declared: the 429 passes at once, as before
    assert plain.status_code == 429 and no_retry.rows()[-1]["retries"] == 0
    health = httpx.get(upstream + "/_fake/health", timeout=10, trust_env=False).json()
    assert health["rate_limited"] == 4


def test_the_provider_wait_answers_the_attempts_own_key_only(stack: Any) -> None:
    fake, limiter, gateway = stack
    gw = gateway(fake([]), "a", limits={"concurrent_streams": 2})
    ok = gw.http.get(gw.url + "/_gateway/provider-wait", headers={"host": HOST, "x-api-key": gw.vkey})
    assert ok.status_code == 200 and ok.json()["provider_wait_s"] == 0.0
    wrong = gw.http.get(gw.url + "/_gateway/provider-wait", headers={"host": HOST, "x-api-key": "pbv-" + "x" * 40})
    assert wrong.status_code == 401
    host = gw.http.get(gw.url + "/_gateway/provider-wait", headers={"host": "elsewhere:80", "x-api-key": gw.vkey})
    assert host.status_code == 421
    assert gw.rows() == []  # never a model call


def test_the_limiter_service_refuses_a_caller_without_its_token(stack: Any) -> None:
    _fake, limiter, _gateway = stack
    service = limiter(requests_per_minute=5)
    resp = httpx.post(service.url + "/limiter/acquire", json={"provider": "anthropic", "attempt": "x"},
                      headers={"authorization": "Bearer wrong"}, timeout=10, trust_env=False)
    assert resp.status_code == 401
    assert service.stats()["providers"]["anthropic"]["granted"] == {}
