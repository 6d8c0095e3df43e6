"""The web UI's settings: which ERP, whose token, and whether a person works turns."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class WebConfig:
    """How one web UI process is set up (from `python -m erp_web serve` arguments)."""

    api_url: str  # the agent API, e.g. http://127.0.0.1:8080
    token: str | None = field(default=None, repr=False)  # pre-signed-in user (human mode); None: a sign-in page
    login_key: str | None = field(default=None, repr=False)  # the one-time secret of the sign-in link
    host_token: str | None = field(default=None, repr=False)  # the host's token for /_turn (human mode)
    handbook_dir: Path | None = None
    human: bool = False  # turns worked by a person: the UI is usable only while a turn is open
    title: str = "bb-erp"
