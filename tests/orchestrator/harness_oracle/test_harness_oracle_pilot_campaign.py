"""The isolated pilot's campaign file, run keyless as written: the whole matrix (six pilot tasks ×
claude-code and codex × five repetitions, seed 0) with every attempt played by the harness
oracle, in containers. Every attempt must be graded and pass, each in the oracle's canonical
hash, and the campaign exit 0. About an hour on 2 cores: `make test-heavy` only.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.heavy, pytest.mark.timeout(4 * 3600)]

PILOT_DIR = REPO_ROOT / "campaigns" / "pilot-isolated"


def test_the_pilot_runs_keyless_and_every_attempt_passes(images, tmp_path: Path) -> None:
    from orchestrator.scenarios.cache import ensure_scenario
    from orchestrator.scenarios.oracle_run import load_oracle_run

    label = "pilot-isolated-smoke"
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "campaign", "--cells", str(PILOT_DIR / "campaign.yaml"),
         "--model-access", str(PILOT_DIR / "model-access-harness-oracle.yaml"), "--label", label,
         "--runs-root", str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = [json.loads(p.read_text()) for p in sorted((tmp_path / label).rglob("result.json"))
               if p.parent.name.startswith("rep-")]
    assert len(results) == 12 * 5
    oracle = {t: load_oracle_run(ensure_scenario(t, 0).oracle_run_dir).canonical_db
              for t in {r["task"] for r in results}}
    bad = [(r["cell"], r["rep"], r["outcome"], [c["name"] for c in r.get("checks", []) if not c["passed"]])
           for r in results if not r.get("passed") or r["hashes"]["canonical_db"] != oracle[r["task"]]]
    assert not bad, bad
