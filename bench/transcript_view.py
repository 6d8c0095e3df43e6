"""The report's transcript view on a large trajectory: render time and page size (issue 32).

    .venv/bin/python bench/transcript_view.py [--steps 1000] [--output-chars 4000] [--repeat 3]

Writes a synthetic attempt folder whose trajectory has `--steps` agent steps (each a model call
with a message, thinking, a shell tool call whose output is `--output-chars` long, and an ERP
request; every tenth refused, every fiftieth cited by a breach) beside day and prompt steps, then
renders the attempt page `--repeat` times and prints the best time and the page's size. The
target: a thousand steps render in under a second and the page stays under a few MB (long
output is cut at MAX_SHOWN characters and folded).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator.report.attempt_page import render_attempt_page
from orchestrator.trajectory.atif import atif_problems


def synthetic(n: int, output_chars: int) -> dict[str, Any]:
    """A valid ATIF trajectory of `n` model steps (and the day and prompt steps around them)."""
    steps: list[dict[str, Any]] = []

    def add(step: dict[str, Any]) -> None:
        step["step_id"] = len(steps) + 1
        steps.append(step)

    per_turn = 200
    for i in range(n):
        if i % per_turn == 0:
            add({"source": "system", "message": f"Business day 2026-10-{8 + i // per_turn:02d}: the clock advanced.",
                 "observation": {"results": [{"content": f"vendor-{k}: ap.invoice.create"} for k in range(5)]}})
            add({"source": "user", "message": "You work at Northgate Valve Co. ...\n" * 40})
        cid = f"toolu_{i:05d}"
        add({"source": "agent", "model_name": "fake-claude", "message": f"Step {i}: looking at invoice INV-{i:05d}.",
             "reasoning_content": "thinking " * 40,
             "tool_calls": [{"tool_call_id": cid, "function_name": "Bash", "arguments": {"command": f"erp get /ap-invoices/INV-{i:05d}"}}],
             "observation": {"results": [
                 {"source_call_id": cid, "content": ("x" * 99 + "\n") * (output_chars // 100), "extra": {"is_error": False}},
                 {"source_call_id": cid, "content": f"GET /ap-invoices/INV-{i:05d} -> ok (200)",
                  "extra": {"erp": {"audit_id": i + 1, "method": "GET", "path": f"/ap-invoices/INV-{i:05d}",
                                    "outcome": "refused" if i % 10 == 0 else "ok", "status": 403 if i % 10 == 0 else 200,
                                    "probe": i % 10 == 0, "breach": i % 50 == 0}}}]},
             "metrics": {"prompt_tokens": 3000 + i, "completion_tokens": 40, "cached_tokens": 2500, "cost_usd": 0.0021},
             "llm_call_count": 1, "extra": {"gateway": {"seq": i + 1, "status": "ok", "latency_s": 1.2}}})
    return {"schema_version": "ATIF-v1.7", "session_id": "bench", "agent": {"name": "claude-code", "version": "bench"},
            "steps": steps, "final_metrics": {"total_steps": len(steps), "extra": {"model_calls": n}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--output-chars", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    doc = synthetic(args.steps, args.output_chars)
    problems = atif_problems(doc)
    assert not problems, problems[:5]
    with tempfile.TemporaryDirectory(prefix="pb-bench-transcript-") as tmp:
        folder = Path(tmp)
        raw = json.dumps(doc)
        (folder / "trajectory.json").write_text(raw)
        (folder / "result.json").write_text(json.dumps({"outcome": "graded", "passed": False, "turns": []}))
        best = float("inf")
        page = ""
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            page = render_attempt_page(folder, {"attempt_id": "bench", "identity": {}}, label="bench", index_href="index.html")
            best = min(best, time.perf_counter() - t0)
    print(f"{len(doc['steps'])} steps ({args.steps} model steps), trajectory.json {len(raw) / 1e6:.2f} MB: "
          f"page rendered in {best * 1000:.0f} ms (best of {args.repeat}), {len(page.encode()) / 1e6:.2f} MB, "
          f"{page.count('<details>')} folded blocks")


if __name__ == "__main__":
    main()
