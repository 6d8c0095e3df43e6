"""The model gateway inside whole campaigns on the local backend (real host processes: the ERP,
the gateway, the fake provider, the campaign scheduler, no mocks):

- a provider failing every call is an infrastructure error of the attempt, and the campaign runs
  it again (`--retries 1`): the ledger line keeps the first try with its provider cause and the
  cell counts one infra error left out of the rates;
- a real upstream key (the fake provider started on loopback with `require_key: K`, the campaign
  naming it through `key_env`) reaches the provider, the attempt is graded, and K appears in no
  byte of the attempt folder nor of the campaign's records (events.jsonl included).
"""
from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from orchestrator.cli import main

# Each test is one local campaign (an ERP, a fake provider and a gateway per try): about 10 s on
# a quiet machine once payment-run seed 0 is in the scenario cache (first use builds it).
pytestmark = pytest.mark.slow

# The "agent": one Messages call per turn through the gateway (base URL and virtual key from the
# environment the system declares); a refused call fails the turn.
AGENT = r'''
import json, os, sys, urllib.request, urllib.error
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
    data=json.dumps({"model": os.environ["PB_MODEL"], "max_tokens": 64,
                     "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json",
             "anthropic-version": "2023-06-01"})
try:
    print(urllib.request.urlopen(req, timeout=30).read().decode()); code = 0
except urllib.error.HTTPError as exc:
    print(exc.read().decode()); code = 1
sys.exit(code)
'''

STEP = {"content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 50, "output_tokens": 5}}
KEY_ENV = "PB_TEST_UPSTREAM_KEY"


def systems_file(tmp_path: Path) -> Path:
    """A command system that calls the Messages API (declares its model, so it gets a gateway)."""
    (tmp_path / "agent.py").write_text(AGENT)
    path = tmp_path / "systems.yaml"
    path.write_text(yaml.safe_dump({"systems": {"tiny-model-agent": {
        "argv": [sys.executable, str(tmp_path / "agent.py")],
        "model": {"provider": "anthropic", "model": "fake-claude", "base_url_env": "ANTHROPIC_BASE_URL",
                  "key_env": "ANTHROPIC_API_KEY"}}}}))
    return path


def campaign(tmp_path: Path, label: str, access: dict[str, Any], retries: int) -> tuple[int, Path]:
    """`orchestrate campaign` of tiny-model-agent on payment-run seed 0, local backend."""
    access_file = tmp_path / f"{label}-access.yaml"
    access_file.write_text(yaml.safe_dump(access))
    runs = tmp_path / "runs"
    rc = main(["campaign", "--backend", "local", "--cells", "tiny-model-agent:payment-run", "--seeds", "0",
               "--label", label, "--runs-root", str(runs), "--retries", str(retries),
               "--systems", str(systems_file(tmp_path)), "--model-access", str(access_file)])
    return rc, runs / label


def ledger(root: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (root / "attempts.jsonl").read_text().splitlines() if x.strip()]


@pytest.mark.heavy  # a whole campaign twice over (~25 s under load); the unit tests of retries stay in make test
def test_a_provider_outage_is_an_infra_error_retried_once(tmp_path: Path) -> None:
    (tmp_path / "outage.yaml").write_text(yaml.safe_dump(
        {"match": "any", "steps": [], "otherwise": {"fail": {"status": 503, "type": "api_error"}}}))
    access = {"providers": {"anthropic": {"fake_script": "outage.yaml", "models": ["fake-claude"]}}}
    rc, root = campaign(tmp_path, "outage", access, retries=1)
    assert rc == 3  # infra errors left after the retries (docs/exit-codes.md)
    [line] = ledger(root)
    assert line["outcome"] == "infra_error" and line["passed"] is False
    assert any("provider" in e["message"] for e in line["errors"]), line["errors"]
    # Retried exactly once: the earlier try is kept aside with its own provider cause.
    [retry] = line["retries"]
    assert retry["try"] == 1 and retry["outcome"] == "infra_error", retry
    assert any("provider" in e["message"] for e in retry["errors"]), retry
    # Both tries reached the gateway and the provider refused every call: real outages.
    folder = root / "tiny-model-agent__payment-run" / "seed-0" / "rep-1"
    tries = [folder, *sorted(p for p in folder.parent.iterdir() if p.name.startswith("rep-1.try-"))]
    assert len(tries) == 2, sorted(p.name for p in folder.parent.iterdir())
    for t in tries:
        rows = [json.loads(x) for x in (t / "gateway.jsonl").read_text().splitlines() if x.strip()]
        assert rows and all(r["status"] != "ok" for r in rows), rows
    cell = json.loads((root / "summary.json").read_text())["cells"]["tiny-model-agent:payment-run"]
    assert cell["infra_errors"] == 1 and cell["scored"] == 0 and cell["pass_at_1"] is None, cell


@pytest.fixture()
def keyed_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any]]:
    """The fake provider on loopback accepting only the key K; K in the host environment."""
    from model_gateway.local import start_fake_provider

    key = "sk-test-" + secrets.token_hex(24)
    workdir = tmp_path / "fake"
    workdir.mkdir()
    fake = start_fake_provider({"match": "any", "require_key": key, "steps": [STEP] * 8}, workdir=workdir)
    monkeypatch.setenv(KEY_ENV, key)
    try:
        yield key, fake
    finally:
        fake.stop()


def test_a_real_upstream_key_reaches_the_provider_and_no_record(tmp_path: Path, keyed_provider) -> None:
    key, fake = keyed_provider
    access = {"providers": {"anthropic": {"base_url": fake.ready["url"], "key_env": KEY_ENV,
                                          "models": ["fake-claude"]}}}
    rc, root = campaign(tmp_path, "keyed", access, retries=0)
    [line] = ledger(root)
    assert rc == 0 and line["outcome"] == "graded", (rc, line["errors"])
    assert line["retries"] == []
    # K reached the provider on every call (it refuses any other key), and each call was metered.
    received = httpx.get(fake.ready["url"] + "/_fake/requests", timeout=10, trust_env=False).json()["items"]
    assert received and all(r["headers"].get("x-api-key") == key for r in received), received
    folder = root / "tiny-model-agent__payment-run" / "seed-0" / "rep-1"
    rows = [json.loads(x) for x in (folder / "gateway.jsonl").read_text().splitlines() if x.strip()]
    assert rows and all(r["status"] == "ok" for r in rows), rows
    assert len(rows) == len(line["turns"]) and line["usage"]["requests"] == len(rows)
    assert len(received) == len(rows)
    # Not one byte of K anywhere the campaign wrote: attempt folder (logs, databases, records)
    # and the campaign's own files (events.jsonl, ledger, summary, declaration, provenance).
    needle = key.encode()
    written = [p for p in root.rglob("*") if p.is_file()]
    assert folder / "logs" / "runtime.jsonl" in written and root / "events.jsonl" in written
    assert len([p for p in written if p.is_relative_to(folder)]) > 10
    leaks = [str(p.relative_to(root)) for p in written if needle in p.read_bytes()]
    assert leaks == []
