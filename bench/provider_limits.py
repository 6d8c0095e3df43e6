"""Fair under provider limits (issue 42, item 4): 20 attempts sharing one rate-limited provider.

    .venv/bin/python bench/provider_limits.py [--attempts 20] [--rpm 60] [--calls 5] [--concurrency 10]

One fake provider (model_gateway.fake_provider) runs on this host's loopback with
`--rate-limit-rpm RPM`: beyond RPM model calls in any 60 s it answers 429, as a real account
does. Two local campaigns of the same tiny model agent (CALLS Messages calls per turn, each a
failed turn when refused) on payment-run seed 0, ATTEMPTS repetitions, through the same
scheduler, runtime, gateway and limiter as `orchestrate campaign --backend local`:

- **with the limiter**: the model access declares `limits: {anthropic: {requests_per_minute: RPM}}`,
  so the campaign runs one limiter service and every gateway queues its calls there;
- **without**: no limits, no retry policy: each gateway forwards at once.

Printed side by side: calls made, calls the provider refused (its own count), turns and their
provider wait (from turns.jsonl: the gateway's figure), the largest wait, timed-out turns, and
the turn time charged to the agent (duration less the provider wait) against the budget. The
limiter's run must show 0 refusals, waits recorded per turn, and no turn timed out; the other
shows the refusals it avoids. The turn budget (--budget, default 60 s) is shorter than the
longest waits, so a charged wait would show as timeouts.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

AGENT = r'''
import json, os, sys, urllib.request, urllib.error
calls = int(sys.argv[1])
code = 0
for _ in range(calls):
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
        data=json.dumps({"model": os.environ["PB_MODEL"], "max_tokens": 64,
                         "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json",
                 "anthropic-version": "2023-06-01"})
    try:
        urllib.request.urlopen(req, timeout=600).read()
    except urllib.error.HTTPError as exc:
        print("refused:", exc.code, exc.read().decode()[:200]); code = 1
sys.exit(code)
'''
STEP = {"content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 50, "output_tokens": 5}}


def run_campaign(work: Path, label: str, fake_url: str, args: argparse.Namespace, *, limited: bool) -> dict[str, Any]:
    """One campaign; its figures from the attempt folders and the provider."""
    from orchestrator.cli import main

    access: dict[str, Any] = {"providers": {"anthropic": {"base_url": fake_url, "models": ["fake-claude"]}}}
    if limited:
        access["limits"] = {"anthropic": {"requests_per_minute": args.rpm}}
    (work / f"{label}.yaml").write_text(yaml.safe_dump(access))
    (work / "agent.py").write_text(AGENT)
    (work / "systems.yaml").write_text(yaml.safe_dump({"systems": {"tiny-model-agent": {
        "argv": [sys.executable, str(work / "agent.py"), str(args.calls)],
        "model": {"provider": "anthropic", "model": "fake-claude", "base_url_env": "ANTHROPIC_BASE_URL",
                  "key_env": "ANTHROPIC_API_KEY"}}}}))
    before = httpx.get(fake_url + "/_fake/health", timeout=10, trust_env=False).json()["rate_limited"]
    t0 = time.monotonic()
    rc = main(["campaign", "--backend", "local", "--cells", "tiny-model-agent:payment-run", "--seeds", "0",
               "--reps", str(args.attempts), "--concurrency", str(args.concurrency), "--label", label,
               "--runs-root", str(work / "runs"), "--retries", "0", "--timeout", f"{args.budget:g}",
               "--systems", str(work / "systems.yaml"), "--model-access", str(work / f"{label}.yaml")])
    wall = time.monotonic() - t0
    refused = httpx.get(fake_url + "/_fake/health", timeout=10, trust_env=False).json()["rate_limited"] - before
    turns: list[dict[str, Any]] = []
    for path in sorted((work / "runs" / label).rglob("turns.jsonl")):
        turns += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    waits = [float((t.get("usage") or {}).get("provider_wait_s") or 0.0) for t in turns]
    charged = [max(0.0, float(t.get("duration_s") or 0) - w) for t, w in zip(turns, waits, strict=True)]
    calls = sum(int((t.get("usage") or {}).get("requests") or 0) for t in turns)
    return {"rc": rc, "wall_s": wall, "calls": calls, "refused": refused, "turns": len(turns),
            "waited_turns": sum(1 for w in waits if w > 0), "max_wait_s": max(waits, default=0.0),
            "median_wait_s": statistics.median(waits) if waits else 0.0,
            "timed_out": sum(1 for t in turns if t.get("timed_out")),
            "failed_turns": sum(1 for t in turns if t.get("exit_code") not in (0, None)),
            "max_charged_s": max(charged, default=0.0), "budget_s": args.budget}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20)
    parser.add_argument("--rpm", type=int, default=60)
    parser.add_argument("--calls", type=int, default=5, help="model calls per turn")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--budget", type=float, default=60.0, help="every turn's budget, seconds")
    parser.add_argument("--settle-s", type=float, default=61.0, help="pause between the runs (the window empties)")
    args = parser.parse_args()

    from model_gateway.local import start_fake_provider

    with tempfile.TemporaryDirectory(prefix="pb-bench-limits-") as tmp:
        work = Path(tmp)
        (work / "fake").mkdir()
        fake = start_fake_provider({"match": "any", "steps": [], "otherwise": STEP}, workdir=work / "fake",
                                   rate_limit_rpm=args.rpm)
        try:
            url = str(fake.ready["url"])
            rows = {"with limiter": run_campaign(work, "limited", url, args, limited=True)}
            time.sleep(args.settle_s)  # the provider's window empties: the second run starts from the same state
            rows["without"] = run_campaign(work, "unlimited", url, args, limited=False)
        finally:
            fake.stop()
    print(f"\n{args.attempts} attempts x payment-run turns x {args.calls} calls, one provider at {args.rpm} "
          f"requests/min, concurrency {args.concurrency}, turn budget {args.budget:g} s")
    keys = [("wall_s", "campaign wall, s"), ("calls", "calls forwarded"), ("refused", "refused upstream (429)"),
            ("turns", "turns"), ("failed_turns", "turns failed (a refused call)"),
            ("waited_turns", "turns with provider wait"), ("median_wait_s", "median wait per turn, s"),
            ("max_wait_s", "largest wait of a turn, s"), ("timed_out", "turns timed out"),
            ("max_charged_s", "largest time charged to a turn, s")]
    print(f"{'':34}" + "".join(f"{name:>16}" for name in rows))
    for key, title in keys:
        print(f"{title:34}" + "".join(f"{v[key]:>16.1f}" if isinstance(v[key], float) else f"{v[key]:>16}"
                                      for v in rows.values()))
    limited = rows["with limiter"]
    ok = limited["refused"] == 0 and limited["timed_out"] == 0 and limited["waited_turns"] > 0 \
        and limited["max_charged_s"] <= args.budget
    print("\nwith the limiter: " + ("no call refused upstream, waits recorded per turn, no budget charged"
                                    if ok else "FAILED the done-when line"))
    print(f"without it: {rows['without']['refused']} call(s) refused upstream, the refusals the limiter avoids")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
