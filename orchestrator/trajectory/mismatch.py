"""Transcript against gateway: do the model calls a harness reports match the calls the gateway metered?

Per turn, the gateway's forwarded calls (usage-log rows `ok`, `upstream_status`, `upstream_error`)
against the calls in the harness's own transcript (orchestrator/trajectory/transcripts.py):

- a harness that reports each call's tokens (Claude Code): the same number of calls, and call by
  call, in order, the same input, output, cache-read and cache-write tokens;
- a harness that reports only a turn's totals (Codex's `turn.completed`): the same prompt, cached
  and output token sums;
- a system whose output has no known transcript format (a scripted policy, an unknown command):
  nothing is claimed, so nothing is compared.

A difference is recorded on the attempt (`ResultRecord.transcript_mismatch`, with the
differences) and shown in the report: the harness's own accounting cannot be trusted for that
attempt, or something else talked to the model. Published figures come from the gateway either way.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.trajectory.transcripts import CallUsage, HarnessCall, HarnessTurn

FORWARDED = ("ok", "upstream_status", "upstream_error")
MAX_DIFFERENCES = 50


class TranscriptMismatch(BaseModel):
    """Where a harness's transcript and the gateway's usage log disagree (result.json `transcript_mismatch`)."""

    model_config = ConfigDict(extra="forbid")

    harness: str
    gateway_calls: int  # forwarded model calls the gateway metered, all turns
    harness_calls: int | None  # calls the harness's transcripts report (None: it reports totals only)
    differences: list[str] = Field(default_factory=list)  # one line each, turn by turn, in order


def forwarded(rows: Iterable[dict[str, Any]], turn: int | None = None) -> list[dict[str, Any]]:
    """The usage-log rows that are model calls (sent upstream), of one turn or all, in usage-log order."""
    out = [r for r in rows if r.get("status") in FORWARDED and (turn is None or r.get("turn") == turn)]
    return sorted(out, key=lambda r: int(r.get("seq") or 0))


def _gateway_usage(row: dict[str, Any]) -> CallUsage:
    return CallUsage(int(row.get("input_tokens") or 0), int(row.get("output_tokens") or 0),
                     int(row.get("cache_read_tokens") or 0), int(row.get("cache_write_tokens") or 0))


def _prompt(row: dict[str, Any]) -> int:
    return int(row.get("prompt_tokens") or 0)


def _fmt(u: CallUsage) -> str:
    return f"input {u.input}, output {u.output}, cache read {u.cache_read}, cache write {u.cache_write}"


def align(rows: list[dict[str, Any]], calls: list[HarnessCall], *, by_usage: bool) -> list[tuple[dict[str, Any] | None, HarnessCall | None]]:
    """Pair a turn's forwarded usage-log rows with the harness's calls, in order.

    By usage (a harness that reports each call's tokens): the longest run of calls whose tokens
    equal a row's, in order, pairs them; between two such pairs, rows and calls pair up in order
    and what is left over stands alone (a row the transcript does not have, a call the gateway
    never served). Otherwise: in order, one for one."""
    if not by_usage:
        return [(rows[i] if i < len(rows) else None, calls[i] if i < len(calls) else None) for i in range(max(len(rows), len(calls)))]
    keys_r = [_gateway_usage(r).as_dict().values() for r in rows]
    keys_c = [c.usage.as_dict().values() if c.usage is not None else None for c in calls]
    matcher = difflib.SequenceMatcher(a=[tuple(k) for k in keys_r], b=[tuple(k) if k is not None else None for k in keys_c], autojunk=False)
    out: list[tuple[dict[str, Any] | None, HarnessCall | None]] = []
    i = j = 0
    for a, b, size in matcher.get_matching_blocks():
        gap_r, gap_c = rows[i:a], calls[j:b]
        k = min(len(gap_r), len(gap_c)) if len(gap_r) == len(gap_c) else 0  # unequal gaps: nothing pairs by guess
        out += list(zip(gap_r[:k], gap_c[:k], strict=True))
        out += [(r, None) for r in gap_r[k:]] + [(None, c) for c in gap_c[k:]]
        out += list(zip(rows[a:a + size], calls[b:b + size], strict=True))
        i, j = a + size, b + size
    return out


def _per_call(n: int, rows: list[dict[str, Any]], turn: HarnessTurn) -> list[str]:
    out: list[str] = []
    calls = turn.calls
    if len(calls) != len(rows):
        out.append(f"turn {n}: the gateway metered {len(rows)} model call(s), the harness's transcript reports {len(calls)}")
    for k, (row, call) in enumerate(align(rows, calls, by_usage=True), 1):
        if call is None and row is not None:
            out.append(f"turn {n} call {k} (gateway seq {row.get('seq')}, {_fmt(_gateway_usage(row))}): not in the transcript")
        elif row is None and call is not None:
            said = _fmt(call.usage) if call.usage is not None else "no tokens"
            out.append(f"turn {n} call {k} ({said}): in the transcript, never metered by the gateway")
        elif row is not None and call is not None and call.usage != _gateway_usage(row):
            said = _fmt(call.usage) if call.usage is not None else "no tokens"
            out.append(f"turn {n} call {k} (gateway seq {row.get('seq')}): gateway {_fmt(_gateway_usage(row))}; transcript {said}")
    return out


def _totals(n: int, rows: list[dict[str, Any]], turn: HarnessTurn) -> list[str]:
    said = turn.total
    prompt = sum(_prompt(r) for r in rows)
    cached = sum(int(r.get("cache_read_tokens") or 0) for r in rows)
    output = sum(int(r.get("output_tokens") or 0) for r in rows)
    if said is None:
        return [f"turn {n}: the gateway metered {len(rows)} model call(s), the harness's transcript reports no usage"] if rows else []
    said_prompt = said.input + said.cache_read + said.cache_write
    if (said_prompt, said.cache_read, said.output) != (prompt, cached, output):
        return [f"turn {n}: gateway prompt {prompt}, cached {cached}, output {output} over {len(rows)} call(s); "
                f"transcript prompt {said_prompt}, cached {said.cache_read}, output {said.output}"]
    return []


def compare(turns: dict[int, HarnessTurn], usage: list[dict[str, Any]]) -> TranscriptMismatch | None:
    """The disagreement between the harness's transcripts (by turn number) and the usage, or None."""
    kinds = {t.harness for t in turns.values()}
    harness = next(iter(kinds)) if len(kinds) == 1 else ",".join(sorted(kinds))
    claims = [n for n, t in turns.items() if t.harness in ("claude-code", "codex")]
    if not claims:
        return None
    differences: list[str] = []
    for n in sorted(turns):
        turn = turns[n]
        rows = forwarded(usage, n)
        if turn.harness == "claude-code":
            differences += _per_call(n, rows, turn)
        elif turn.harness == "codex":
            differences += _totals(n, rows, turn)
    stray = [r for r in forwarded(usage) if r.get("turn") not in turns]
    if stray:
        differences.append(f"{len(stray)} model call(s) metered outside every turn (gateway seq "
                           f"{', '.join(str(r.get('seq')) for r in stray[:10])})")
    if not differences:
        return None
    per_call = all(turns[n].harness == "claude-code" for n in claims)
    return TranscriptMismatch(
        harness=harness,
        gateway_calls=len(forwarded(usage)),
        harness_calls=sum(len(turns[n].calls) for n in claims) if per_call else None,
        differences=differences[:MAX_DIFFERENCES] + ([f"... {len(differences) - MAX_DIFFERENCES} more"]
                                                     if len(differences) > MAX_DIFFERENCES else []),
    )
