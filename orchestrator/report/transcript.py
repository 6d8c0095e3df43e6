"""The attempt page's transcript view: what the agent said and did, turn by turn (issue 32).

Read from the attempt's `trajectory.json` (ATIF v1.7, orchestrator/trajectory/): each business
day's opening (clock advance, counterparties, faults), the prompt, then every step — the model's
message and thinking, each tool call with its output (long output folded), each ERP request the
call made (method, path, outcome; a refused one marked as a probe, one a breach cites marked as a
breach), tokens and cost per step from the gateway — and a transcript mismatch at the top when
the harness's transcript and the gateway's usage log disagree. Plain HTML with `<details>` for
folding: no script, no external asset; text is cut at `MAX_SHOWN` characters per block, so a
thousand steps stay fast and small (bench/transcript_view.py measures it).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.report.charts import esc

MAX_SHOWN = 3000  # characters of one text block on the page (trajectory.json has the rest)
FOLD_LINES = 12  # a block longer than this many lines, or MAX_SHOWN / 4 characters, starts folded

TRANSCRIPT_CSS = """
.tx{font-size:13px}.tx .st{border-left:3px solid #ccc;margin:.35em 0;padding:.2em .6em}
.tx .system{border-color:#8e7cc3;background:#f7f5fc}.tx .user{border-color:#1f5fa8;background:#f3f7fc}
.tx .agent{border-color:#3c8d3c}.tx .hd{color:#555;font-size:12px}.tx .hd b{color:#222}
.tx pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;font-size:12px;background:#fafafa;padding:.3em}
.tx .msg{white-space:pre-wrap;margin:.2em 0}.tx .tool{margin:.2em 0 .2em 1em}
.tx .erp{margin:0 0 0 2em;font-family:monospace;font-size:12px}.tx .probe{color:#a04000;font-weight:bold}
.tx .brc{color:#fff;background:#c0392b;padding:0 4px;font-weight:bold}.tx .only{color:#a04000}
.tx details>summary{cursor:pointer;color:#1f5fa8}.mismatch{border:2px solid #c0392b;padding:.4em .8em;background:#fdf2f0}
"""


def _block(text: str, label: str) -> str:
    """A text block, cut at MAX_SHOWN and folded when long."""
    text = text or ""
    cut = text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + f"\n[... {len(text) - MAX_SHOWN} more characters in trajectory.json]"
    body = f"<pre>{esc(cut)}</pre>"
    lines = text.count("\n") + 1
    if lines > FOLD_LINES or len(text) > MAX_SHOWN // 4:
        return f"<details><summary>{esc(label)} ({lines} lines, {len(text)} characters)</summary>{body}</details>"
    return body


def _header(step: dict[str, Any]) -> str:
    extra = step.get("extra") or {}
    bits = [f"<b>#{step.get('step_id')}</b> {esc(step.get('source'))}"]
    if step.get("model_name"):
        bits.append(esc(step["model_name"]))
    m = step.get("metrics") or {}
    if m:
        tokens = f"{m.get('prompt_tokens', 0)} in ({m.get('cached_tokens', 0)} cached) / {m.get('completion_tokens', 0)} out"
        bits.append(esc(tokens) + (f" · ${m['cost_usd']:.4f}" if isinstance(m.get("cost_usd"), (int, float)) else ""))
    gw = extra.get("gateway") or {}
    if gw.get("seq") is not None:
        bits.append(f"gateway #{esc(gw.get('seq'))} {esc(gw.get('status'))}"
                    + (f" {float(gw['latency_s']):.1f}s" if isinstance(gw.get("latency_s"), (int, float)) else ""))
    if step.get("llm_call_count") == 0:
        bits.append("no model call")
    if extra.get("not_in_transcript"):
        bits.append("<span class='only'>not in the harness's transcript: metered by the gateway only</span>")
    if extra.get("harness_only"):
        bits.append("<span class='only'>in the harness's transcript only: the gateway metered no such call</span>")
    if step.get("timestamp"):
        bits.append(esc(str(step["timestamp"])[11:23]))
    return "<div class='hd'>" + " · ".join(bits) + "</div>"


def _erp_line(erp: dict[str, Any]) -> str:
    marks = ""
    if erp.get("probe"):
        marks += " <span class='probe'>probe (refused)</span>"
    if erp.get("breach"):
        marks += " <span class='brc'>breach</span>"
    code = f" {erp.get('error_code')}" if erp.get("error_code") else ""
    return (f"<div class='erp'>ERP #{esc(erp.get('audit_id'))} {esc(erp.get('method'))} {esc(erp.get('path'))} &rarr; "
            f"{esc(erp.get('outcome'))} {esc(erp.get('status'))}{esc(code)}{marks}</div>")


def _agent_body(step: dict[str, Any]) -> str:
    out = []
    if step.get("reasoning_content"):
        out.append(f"<details><summary>thinking</summary><pre>{esc(str(step['reasoning_content'])[:MAX_SHOWN])}</pre></details>")
    if step.get("message"):
        out.append(f"<div class='msg'>{esc(str(step['message'])[:MAX_SHOWN])}</div>")
    results = (step.get("observation") or {}).get("results") or []
    by_call: dict[Any, list[dict[str, Any]]] = {}
    for r in results:
        by_call.setdefault(r.get("source_call_id"), []).append(r)
    for call in step.get("tool_calls") or []:
        cid = call.get("tool_call_id")
        args = call.get("arguments") or {}
        shown = args.get("command") if isinstance(args.get("command"), str) else json.dumps(args, sort_keys=True)
        out.append(f"<div class='tool'><b>{esc(call.get('function_name'))}</b> <code>{esc(str(shown)[:600])}</code>")
        for r in by_call.pop(cid, []):
            erp = (r.get("extra") or {}).get("erp")
            if isinstance(erp, dict):
                out.append(_erp_line(erp))
            elif step.get("llm_call_count") != 0:
                failed = " (error)" if (r.get("extra") or {}).get("is_error") else ""
                out.append(_block(str(r.get("content") or ""), "output" + failed))
        out.append("</div>")
    for rest in by_call.values():  # results not tied to a tool call (ERP requests placed by time only)
        for r in rest:
            erp = (r.get("extra") or {}).get("erp")
            out.append(_erp_line(erp) if isinstance(erp, dict) else _block(str(r.get("content") or ""), "output"))
    return "".join(out)


def _system_body(step: dict[str, Any]) -> str:
    out = [f"<div class='msg'>{esc(step.get('message'))}</div>"]
    results = (step.get("observation") or {}).get("results") or []
    if results:
        text = "\n".join(str(r.get("content") or "") for r in results)
        out.append(f"<details><summary>{len(results)} event(s)</summary><pre>{esc(text[:MAX_SHOWN * 4])}</pre></details>")
    return "".join(out)


def _mismatch(found: dict[str, Any]) -> str:
    items = "".join(f"<li>{esc(d)}</li>" for d in found.get("differences") or [])
    return ("<div class='mismatch'><b>Transcript mismatch</b>: the harness's own transcript and the model gateway's usage log "
            f"disagree (gateway: {esc(found.get('gateway_calls'))} call(s); harness: {esc(found.get('harness_calls', '-'))}). "
            "The harness's accounting cannot be trusted for this attempt, or something else talked to the model; "
            f"every figure here is the gateway's.<ul>{items}</ul></div>")


def transcript_section(folder: Path, result: dict[str, Any]) -> str:
    """The transcript view of one attempt (its `<h2>` and body), or a note when it has no trajectory."""
    path = folder / "trajectory.json"
    head = "<h2 id='transcript'>Transcript</h2>"
    found = result.get("transcript_mismatch")
    warn = _mismatch(found) if isinstance(found, dict) else ""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return head + warn + "<p class='meta'>No trajectory was recorded for this attempt.</p>"
    steps = [s for s in doc.get("steps") or [] if isinstance(s, dict)]
    fm = doc.get("final_metrics") or {}
    out = [head, warn, f"<p class='meta'>{len(steps)} steps ({esc(doc.get('schema_version'))}, <code>trajectory.json</code>); "
                       f"{esc((fm.get('extra') or {}).get('model_calls', 0))} model call(s), {esc(fm.get('total_prompt_tokens', 0))} prompt "
                       f"and {esc(fm.get('total_completion_tokens', 0))} completion tokens"
                       + (f", ${fm['total_cost_usd']:.4f}" if isinstance(fm.get("total_cost_usd"), (int, float)) else "")
                       + " (the gateway's figures).</p><div class='tx'>"]
    for step in steps:
        source = str(step.get("source"))
        if source == "user":
            body = _block(str(step.get("message") or ""), "prompt")
        elif source == "agent":
            body = _agent_body(step)
        else:
            body = _system_body(step)
        out.append(f"<div class='st {esc(source)}' id='step-{esc(step.get('step_id'))}'>{_header(step)}{body}</div>")
    out.append("</div>")
    return "".join(out)
