"""Reading the JSON-lines files an attempt leaves (audit, faults, usage log, turns) for display
and review: the report, the trajectory and the review read them leniently, because a damaged
line must not hide the rest of an attempt from the person reading it (verification, not these
readers, is where a damaged file is refused)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_objects(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, in order ([] when absent or unreadable); a line that
    is not a JSON object is skipped."""
    if not path.is_file():
        return []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for text in lines:
        try:
            row = json.loads(text)
        except ValueError:
            continue
        if isinstance(row, dict):
            out.append(row)
    return out
