"""Where the repository and the test helpers are, for tests at any depth under tests/."""
from __future__ import annotations

from pathlib import Path

SUPPORT_DIR = Path(__file__).resolve().parent
REPO_ROOT = SUPPORT_DIR.parents[1]
