"""Provider limits in a whole campaign on the local backend (real host processes: the ERP, one
gateway per attempt, the campaign's limiter service, one fake provider on loopback shared by
every attempt, the scheduler): two attempts at once share one provider stream, so calls queue at
the limiter instead of overlapping; the waits are on the usage-log rows, in turns.jsonl and on
the attempt page, and the provider never served two calls at once."""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from model_gateway.local import LocalProcess, start_fake_provider
from orchestrator.cli import main

pytestmark = pytest.mark.slow  # one local campaign of two attempts (~30 s under load)

# The agents meet before their first calls (a file each in a shared folder: the local backend
# does not isolate), so the two attempts' calls overlap however slowly each one starts.
AGENT = r'''
import json, os, sys, time, urllib.request, urllib.error
meet = sys.argv[1]
open(os.path.join(meet, str(os.getpid())), "w").close()
deadline = time.time() + 120
while len(os.listdir(meet)) < 2 and time.time() < deadline:
    time.sleep(0.1)
for _ in range(2):
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
        data=json.dumps({"model": os.environ["PB_MODEL"], "max_tokens": 64,
                         "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json"})
    urllib.request.urlopen(req, timeout=120).read()
'''
STEP = {"content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 50, "output_tokens": 5}, "delay_s": 1.0}


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[LocalProcess]:
    (tmp_path / "fake").mkdir()
    fake = start_fake_provider({"match": "any", "steps": [], "otherwise": STEP}, workdir=tmp_path / "fake")
    yield fake
    fake.stop()


def test_attempts_queue_for_one_stream_and_their_waits_are_recorded(tmp_path: Path, provider: LocalProcess) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "meet").mkdir()
    (tmp_path / "systems.yaml").write_text(yaml.safe_dump({"systems": {"tiny-model-agent": {
        "argv": [sys.executable, str(tmp_path / "agent.py"), str(tmp_path / "meet")],
        "model": {"provider": "anthropic", "model": "fake-claude", "base_url_env": "ANTHROPIC_BASE_URL",
                  "key_env": "ANTHROPIC_API_KEY"}}}}))
    access: dict[str, Any] = {"providers": {"anthropic": {"base_url": provider.ready["url"], "models": ["fake-claude"]}},
                              "limits": {"anthropic": {"concurrent_streams": 1}}}
    (tmp_path / "access.yaml").write_text(yaml.safe_dump(access))
    runs = tmp_path / "runs"
    rc = main(["campaign", "--backend", "local", "--cells", "tiny-model-agent:payment-run", "--seeds", "0",
               "--reps", "2", "--concurrency", "2", "--label", "lim", "--runs-root", str(runs),
               "--systems", str(tmp_path / "systems.yaml"), "--model-access", str(tmp_path / "access.yaml")])
    assert rc in (0, 1), rc  # graded (the tiny agent fails the task); never an infra error
    turns = [json.loads(x) for p in sorted((runs / "lim").rglob("turns.jsonl")) for x in p.read_text().splitlines()]
    assert turns and all("provider_wait_s" in t["usage"] for t in turns)
    assert all(not t["timed_out"] for t in turns)
    rows = [json.loads(x) for p in sorted((runs / "lim").rglob("gateway.jsonl")) for x in p.read_text().splitlines()]
    assert rows and all(r["status"] == "ok" for r in rows)
    assert sum(r["queued_s"] for r in rows) > 0.5  # the two attempts met at the one stream
    assert sum(t["usage"]["provider_wait_s"] for t in turns) > 0.5
    # The provider never served two calls at once: each call ends at least its 1 s of service
    # after the one before (`wall_time` is when the gateway received it, `latency_s` until its end).
    ends = sorted(r["wall_time"] + r["latency_s"] for r in rows)
    assert all(b - a >= 0.95 for a, b in zip(ends, ends[1:], strict=False)), [round(e - ends[0], 2) for e in ends]
    assert main(["report", "lim", "--runs-root", str(runs)]) == 0
    # The attempt page shows each turn's provider wait beside its budget.
    longest = max(turns, key=lambda t: t["usage"]["provider_wait_s"])["usage"]["provider_wait_s"]
    pages = [p.read_text() for p in (runs / "lim").rglob("*.html")]
    assert any("provider wait" in page and f"<td>{longest:.2f}s</td>" in page for page in pages)
