"""Usage extractors: read what a command system reported about its own token use.

A command system names an extractor (`usage:` in the systems file). After the turn the
extractor reads the turn's output folder and returns the usage.json fields it could find:
`input_tokens`, `cached_input_tokens`, `output_tokens`, `cost_usd`, `requests`. Missing figures
are left out, never guessed. Extractors use the standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Extractor = Callable[[Path], dict[str, Any]]
FIELDS = ("requests", "input_tokens", "cached_input_tokens", "output_tokens", "cost_usd")


def _json_objects(path: Path) -> Iterator[dict[str, Any]]:
    """JSON objects in a file: each JSON line, or the whole file if it is one document."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        yield whole
        return
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def usage_file(out_dir: Path) -> dict[str, Any]:
    """`usage-file`: the system wrote `agent-usage.json` in the output folder with our field names."""
    for obj in _json_objects(out_dir / "agent-usage.json"):
        return {k: obj[k] for k in FIELDS if _number(obj.get(k)) is not None}
    return {}


def codex_jsonl(out_dir: Path) -> dict[str, Any]:
    """`codex-jsonl`: `codex exec --json` on stdout; sums the `usage` of `turn.completed` events."""
    totals: dict[str, float] = {}
    turns = 0
    for obj in _json_objects(out_dir / "stdout.txt"):
        if obj.get("type") != "turn.completed" or not isinstance(obj.get("usage"), dict):
            continue
        turns += 1
        for key in ("input_tokens", "cached_input_tokens", "output_tokens"):
            n = _number(obj["usage"].get(key))
            if n is not None:
                totals[key] = totals.get(key, 0) + n
    return {k: int(v) for k, v in totals.items()} if turns else {}


def claude_json(out_dir: Path) -> dict[str, Any]:
    """`claude-json`: `claude -p --output-format json|stream-json`; reads the final `result` object.

    `input_tokens` is every prompt token (fresh + cache reads + cache writes), comparable with
    the gateway's `prompt_tokens`; `requests` is Claude Code's own count of model turns."""
    result: dict[str, Any] | None = None
    for obj in _json_objects(out_dir / "stdout.txt"):
        if obj.get("type") == "result" or "total_cost_usd" in obj:
            result = obj
    if result is None:
        return {}
    out: dict[str, Any] = {}
    raw = result.get("usage")
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
    fresh = _number(usage.get("input_tokens"))
    created = _number(usage.get("cache_creation_input_tokens")) or 0
    cached = _number(usage.get("cache_read_input_tokens"))
    if fresh is not None:
        out["input_tokens"] = int(fresh + created + (cached or 0))
    if cached is not None:
        out["cached_input_tokens"] = int(cached)
    output = _number(usage.get("output_tokens"))
    if output is not None:
        out["output_tokens"] = int(output)
    cost = _number(result.get("total_cost_usd"))
    if cost is not None:
        out["cost_usd"] = float(cost)
    turns = _number(result.get("num_turns"))
    if turns is not None:
        out["requests"] = int(turns)
    return out


EXTRACTORS: dict[str, Extractor] = {
    "usage-file": usage_file,
    "codex-jsonl": codex_jsonl,
    "claude-json": claude_json,
}


def extract_usage(name: str | None, out_dir: Path) -> dict[str, Any]:
    """Run the named extractor on a turn's output folder; `{}` without one or on failure."""
    if not name:
        return {}
    extractor = EXTRACTORS.get(name)
    if extractor is None:
        raise KeyError(f"unknown usage extractor {name!r}; known: {', '.join(sorted(EXTRACTORS))}")
    return extractor(out_dir)
