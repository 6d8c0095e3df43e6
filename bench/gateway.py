"""The model gateway's added latency per call and time to first streamed byte.

    .venv/bin/python bench/gateway.py [--calls 200] [--streams 30] [--chunk-delay-ms 20] [--json]

Starts the fake provider and a gateway in front of it (real `python -m model_gateway` processes
on loopback; nothing leaves the machine), then, with one keep-alive client each:

- `--calls` non-streamed Anthropic Messages calls straight to the fake provider and the same
  through the gateway: p50 and p99 latency and the gateway's added latency per call;
- `--streams` streamed calls (9 SSE events, `--chunk-delay-ms` apart) both ways: p50 and p99
  time to the first streamed byte, and the total stream time (the gateway must not buffer).

The two ways alternate call by call so that machine noise falls on both alike. Prints the
figures side by side with the ratio gateway / direct, from this one run. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model_gateway.local import start_fake_provider, start_gateway  # noqa: E402

HOST = "model-gateway:8080"
REAL_KEY = "sk-bench-" + "r" * 32
VKEY = "pbv-bench-" + "v" * 32
BODY = {"model": "fake-claude", "max_tokens": 64, "messages": [{"role": "user", "content": "hello " * 200}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]}


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def one_call(client: httpx.Client, url: str, headers: dict[str, str], stream: bool) -> tuple[float, float, float]:
    """(latency, time to first byte, bytes) of one call."""
    start = time.perf_counter()
    first = None
    size = 0
    with client.stream("POST", url + "/v1/messages", json=dict(BODY, stream=stream), headers=headers) as resp:
        resp.raise_for_status()
        for chunk in resp.iter_raw():
            if first is None:
                first = time.perf_counter() - start
            size += len(chunk)
    total = time.perf_counter() - start
    return total, first if first is not None else total, size


def measure(direct_url: str, gateway_url: str, n: int, stream: bool) -> dict[str, dict[str, float]]:
    """Alternate direct and gateway calls n times each; latency and TTFB percentiles."""
    direct_h = {"x-api-key": REAL_KEY, "anthropic-version": "2023-06-01"}
    gateway_h = {"x-api-key": VKEY, "anthropic-version": "2023-06-01", "host": HOST}
    out: dict[str, dict[str, list[float]]] = {"direct": {"total": [], "ttfb": []}, "gateway": {"total": [], "ttfb": []}}
    with httpx.Client(timeout=60, trust_env=False) as dc, httpx.Client(timeout=60, trust_env=False) as gc:
        for _ in range(3):  # warm both connections
            one_call(dc, direct_url, direct_h, stream)
            one_call(gc, gateway_url, gateway_h, stream)
        for _ in range(n):
            for way, client, url, headers in (("direct", dc, direct_url, direct_h), ("gateway", gc, gateway_url, gateway_h)):
                total, ttfb, _size = one_call(client, url, headers, stream)
                out[way]["total"].append(total)
                out[way]["ttfb"].append(ttfb)
    return {way: {f"{k}_p50_ms": statistics.median(v) * 1000 for k, v in d.items()}
            | {f"{k}_p99_ms": pct(v, 99) * 1000 for k, v in d.items()} for way, d in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--streams", type=int, default=30)
    parser.add_argument("--chunk-delay-ms", type=float, default=20.0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    usage = {"input_tokens": 1000, "output_tokens": 50}
    step = {"content": [{"type": "text", "text": "ok " * 50}], "usage": usage,
            "chunk_delay_s": args.chunk_delay_ms / 1000}
    fake = start_fake_provider({"match": "any", "steps": [], "otherwise": step})
    gateway = start_gateway({"attempt_id": "bench", "hosts": [HOST],
                             "providers": {"anthropic": {"base_url": fake.ready["url"], "models": ["fake-claude"]}}},
                            {"upstream_keys": {"anthropic": REAL_KEY}, "virtual_keys": [VKEY]})
    try:
        calls = measure(fake.ready["url"], gateway.ready["proxy"], args.calls, stream=False)
        streams = measure(fake.ready["url"], gateway.ready["proxy"], args.streams, stream=True)
    finally:
        gateway.stop()
        fake.stop()
    result: dict[str, Any] = {
        "calls": calls, "streams": streams,
        "added_ms_per_call": {"p50": calls["gateway"]["total_p50_ms"] - calls["direct"]["total_p50_ms"],
                              "p99": calls["gateway"]["total_p99_ms"] - calls["direct"]["total_p99_ms"]},
        "ratio": {
            "call_p50": calls["gateway"]["total_p50_ms"] / calls["direct"]["total_p50_ms"],
            "call_p99": calls["gateway"]["total_p99_ms"] / calls["direct"]["total_p99_ms"],
            "ttfb_p50": streams["gateway"]["ttfb_p50_ms"] / streams["direct"]["ttfb_p50_ms"],
            "ttfb_p99": streams["gateway"]["ttfb_p99_ms"] / streams["direct"]["ttfb_p99_ms"],
            "stream_total_p50": streams["gateway"]["total_p50_ms"] / streams["direct"]["total_p50_ms"],
        },
        "settings": vars(args),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"model gateway vs the fake provider directly, loopback, {args.calls} calls / {args.streams} streams each")
    print(f"{'':34}{'direct':>10}{'gateway':>10}{'ratio':>8}")
    rows = [("call latency p50 (ms)", calls, "total_p50_ms"), ("call latency p99 (ms)", calls, "total_p99_ms"),
            ("stream first byte p50 (ms)", streams, "ttfb_p50_ms"), ("stream first byte p99 (ms)", streams, "ttfb_p99_ms"),
            ("stream total p50 (ms)", streams, "total_p50_ms")]
    for label, table, key in rows:
        d, g = table["direct"][key], table["gateway"][key]
        print(f"{label:34}{d:10.2f}{g:10.2f}{g / d:8.2f}")
    added = result["added_ms_per_call"]
    print(f"added latency per call: p50 {added['p50']:.2f} ms, p99 {added['p99']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
