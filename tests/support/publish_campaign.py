"""A real campaign for the report and publication tests, run once per test session.

The local backend (real ERP and agent processes, no containers) runs, at seed 0:

- payment-run: oracle and null (clean), oracle and the negative control `neg:blind-retry` under the
  `lost-writes` fault condition, and `tiny-model-agent` — a command system that calls the model
  gateway (the fake provider) and, as a hostile agent would, prints the virtual key it was given
  and a "real" provider key it read from a file into its output and its workspace;
- payment-run-need-to-know: oracle and `neg:share_bank_details` (which mails the restricted bank
  details to a colleague without visibility).

`campaign(tmp_path_factory)` returns a `Campaign` with the runs root, the label and the secrets
the records are known to hold (so the tests can check that a bundle holds none of them).
"""
from __future__ import annotations

import json
import os
import secrets
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

LABEL = "pub"
CELLS = ["oracle:payment-run", "null:payment-run", "oracle:payment-run+lost-writes",
         "neg:blind-retry:payment-run+lost-writes", "tiny-model-agent:payment-run",
         "oracle:payment-run-need-to-know", "neg:share_bank_details:payment-run-need-to-know"]

# The "agent": one Messages call through the gateway, then it leaks the keys it can find.
AGENT = r'''
import json, os, sys, urllib.request
key = os.environ["ANTHROPIC_API_KEY"]
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
    data=json.dumps({"model": os.environ["PB_MODEL"], "max_tokens": 16,
                     "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01"})
body = json.load(urllib.request.urlopen(req, timeout=60))
real = open(sys.argv[2]).read().strip()
print("my key is", key, "and I found", real)
print(json.dumps({"api_key": key, "found": real}), file=sys.stderr)
with open(os.path.join(os.environ["WORKSPACE"], "notes.md"), "a") as fh:
    fh.write(f"keys: {key} {real}\n")
json.dump({"requests": 1}, open(os.path.join(sys.argv[1], "agent-usage.json"), "w"))
'''
STEP = {"content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 50, "output_tokens": 5}}


@dataclass
class Campaign:
    """A finished campaign and what its records hold."""

    runs: Path
    label: str
    work: Path
    model_access: Path
    real_key: str

    @property
    def root(self) -> Path:
        return self.runs / self.label

    def folders(self) -> list[Path]:
        """Every attempt folder."""
        return sorted(p.parent for p in self.root.glob("*/seed-*/rep-*/result.json"))

    def virtual_keys(self) -> list[str]:
        """The gateway virtual keys the agent printed (read from the original record)."""
        out = []
        for p in self.root.glob("*/seed-*/rep-*/turns/*/out/stdout.txt"):
            for word in p.read_text(errors="replace").split():
                if word.startswith("pbv-"):
                    out.append(word)
        return sorted(set(out))

    def tokens(self) -> list[str]:
        """Every ERP API token of the campaign's final databases."""
        out: set[str] = set()
        for folder in self.folders():
            conn = sqlite3.connect(folder / "final.db")
            try:
                out.update(str(r[0]) for r in conn.execute("SELECT secret FROM tokens"))
            finally:
                conn.close()
        return sorted(out)

    def restricted(self) -> list[Any]:
        """The vendor_bank values (payment-run-need-to-know's restricted class), by the grader's query."""
        from orchestrator.grading.audit import AuditContext
        from orchestrator.grading.rules.disclosure import restricted_values

        out: set[Any] = set()
        for folder in self.folders():
            conn = sqlite3.connect(folder / "final.db")
            conn.row_factory = sqlite3.Row
            try:
                out.update(restricted_values(AuditContext(events=[], db=conn, agent_user="", agent_token_id=None),
                                             ["vendor_bank"]))
            finally:
                conn.close()
        return sorted(out, key=lambda r: (r.owner, r.value))


_CACHE: dict[str, Campaign] = {}


def campaign(tmp_path_factory: Any) -> Campaign:
    """Run (once per session) and return the campaign."""
    if "c" in _CACHE:
        return _CACHE["c"]
    from orchestrator.cli import main

    reuse = os.environ.get("PB_PUBLISH_CAMPAIGN_DIR")  # a developer's shortcut: a folder an earlier run built
    if reuse and (Path(reuse) / "runs" / LABEL / "attempts.jsonl").is_file():
        work = Path(reuse)
        _CACHE["c"] = Campaign(work / "runs", LABEL, work, work / "real-access.yaml", (work / "real.key").read_text().strip())
        return _CACHE["c"]
    work = tmp_path_factory.mktemp("pubcampaign")
    (work / "agent.py").write_text(AGENT)
    real_key = "sk-ant-api03-" + secrets.token_urlsafe(40)
    (work / "real.key").write_text(real_key + "\n")
    systems = work / "systems.yaml"
    systems.write_text(yaml.safe_dump({"systems": {"tiny-model-agent": {
        "argv": [sys.executable, str(work / "agent.py"), "{out_dir}", str(work / "real.key")], "usage": "usage-file",
        "model": {"provider": "anthropic", "model": "fake-claude", "base_url_env": "ANTHROPIC_BASE_URL",
                  "key_env": "ANTHROPIC_API_KEY"}}}}))
    (work / "script.yaml").write_text(yaml.safe_dump({"match": "any", "steps": [STEP, STEP, STEP]}))
    access = work / "access.yaml"
    access.write_text(yaml.safe_dump({"providers": {"anthropic": {"fake_script": "script.yaml", "models": ["fake-claude"]}}}))
    # The declaration a publisher holds for the real provider: its key is read to be redacted.
    real_access = work / "real-access.yaml"
    real_access.write_text(yaml.safe_dump({"providers": {"anthropic": {
        "base_url": "https://api.anthropic.com", "key_file": str(work / "real.key"), "models": ["fake-claude"]}}}))
    runs = work / "runs"
    code = main(["campaign", "--backend", "local", "--label", LABEL, "--runs-root", str(runs), "--cells", ",".join(CELLS),
                 "--seeds", "0", "--reps", "1", "--concurrency", "2", "--systems", str(systems),
                 "--model-access", str(access)])
    lines = [json.loads(t) for t in (runs / LABEL / "attempts.jsonl").read_text().splitlines()]
    assert code in (0, 1), f"campaign ended with {code}"
    assert len(lines) == len(CELLS), [ln["identity"]["cell"] for ln in lines]
    _CACHE["c"] = Campaign(runs, LABEL, work, real_access, real_key)
    return _CACHE["c"]
