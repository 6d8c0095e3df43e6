"""A private copy of a built scenario's database, open, with its metadata (scenario.json)."""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from erp_service.kernel.db import Database


@contextmanager
def scenario_copy(folder: Path, task: str = "payment-run", seed: int = 0) -> Iterator[tuple[Database, dict[str, Any]]]:
    """`task`'s scenario for `seed` (built and cached if missing, without its reference run),
    copied into `folder` and open; closed on exit."""
    from orchestrator.scenarios.cache import ensure_scenario

    scen = ensure_scenario(task, seed, reference=False)
    path = folder / "scenario.db"
    shutil.copy(scen.dir / "scenario.db", path)
    db = Database(path)
    try:
        yield db, json.loads((scen.dir / "scenario.json").read_text())
    finally:
        db.close()
