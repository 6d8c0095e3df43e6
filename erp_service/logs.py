"""The ERP's own log: JSON lines on stderr, one object per event, written through structlog.

stdout stays the process's contract with its host (the ready line, error lines, the stopped
line; docs/contracts.md §1); everything else the process has to say goes to stderr as
``{"timestamp": ..., "level": ..., "logger": ..., "event": ..., ...}``. uvicorn's own loggers
(server errors, tracebacks of failed requests) are routed through the same renderer, so the
file a backend captures holds nothing but JSON lines.

Use `get_logger(__name__)` (safe to call at import: nothing is written before
`configure_logging`) and log an event name with keyword fields:
``log.info("day_advanced", date="2026-10-09", actions=3, refusals=0, duration_s=0.04)``.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

#: Processors shared by structlog's own events and stdlib records (uvicorn's).
_SHARED: list[Any] = [
    structlog.stdlib.add_logger_name,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure_logging(level: str = "warning", stream: TextIO | None = None) -> None:
    """Send structlog events and stdlib logging (uvicorn) to `stream` (stderr) as JSON lines,
    at `level` and above. Idempotent: a second call replaces the handler."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    out = stream if stream is not None else sys.stderr
    handler = logging.StreamHandler(out)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_SHARED, structlog.stdlib.ExtraAdder()],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    structlog.processors.JSONRenderer(sort_keys=True)]))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_bb_erp", False)]:
        root.removeHandler(old)
    handler._bb_erp = True  # type: ignore[attr-defined]  # marks the handler this module owns
    root.addHandler(handler)
    # The ERP's own events (info) always; uvicorn's at the level asked for.
    root.setLevel(min(numeric, logging.INFO))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # uvicorn's loggers would otherwise print their own text lines.
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
        lg.setLevel(numeric)


def get_logger(name: str) -> Any:
    """A structlog logger for module `name`, over the stdlib logger of that name: until
    `configure_logging` installs the handler (the server does), info events go nowhere, so
    generators and tests that drive the ERP in process print nothing."""
    return structlog.wrap_logger(logging.getLogger(name), wrapper_class=structlog.stdlib.BoundLogger,
                                 processors=[structlog.contextvars.merge_contextvars, *_SHARED,
                                             structlog.stdlib.ProcessorFormatter.wrap_for_formatter])
