"""The orchestrator's logs: structured with structlog, JSON lines on disk, human on the console.

    log = get_logger(__name__)
    log.info("phase_end", phase="freeze", duration_s=1.234)

Every line carries what is bound in the context (`bind(attempt_id=...)` per attempt thread, see
`AttemptLog`), a UTC timestamp, the level and the logger. Two files take them as JSON
lines, one object per line:

* `logs/runtime.jsonl` of each attempt (`AttemptLog`): that attempt's thread only, so concurrent
  attempts in one process keep their logs apart, from its first line (resolve) to its last;
* `runs/<label>/events.jsonl` of a campaign (`CampaignLog`): the scheduler's events (started,
  retry, finished, skipped) and every attempt's phase events, from all threads.

Fields used across the orchestrator: `event` (what happened: `phase_start`, `phase_end`,
`phase_failed`, `attempt_started`, ...), `attempt_id` (and an attempt's `run_id`), `phase`, `duration_s`, `outcome`.
The console (`configure_console`) is rendered by rich for people. Records of plain `logging`
loggers (libraries, older code) pass through the same formatters.
"""
from __future__ import annotations

import contextlib
import logging
import logging.handlers
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog
from rich.console import Console
from rich.logging import RichHandler

ROOT = "orchestrator"
_configured = False
_lock = threading.Lock()

# Run on structlog events before they become stdlib records, and on plain stdlib records.
_SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
]


def _configure() -> None:
    global _configured
    with _lock:
        if _configured:
            return
        structlog.configure(
            processors=[*_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.stdlib.BoundLogger,
            cache_logger_on_first_use=True,
        )
        # INFO reaches the orchestrator's own handlers; the console handler has its own level.
        logging.getLogger(ROOT).setLevel(logging.INFO)
        _configured = True


def get_logger(name: str) -> Any:
    """A structlog logger (stdlib-backed) for module `name`."""
    _configure()
    return structlog.stdlib.get_logger(name)


def json_formatter() -> logging.Formatter:
    """One JSON object per record (structlog events and plain stdlib records alike)."""
    _configure()
    return structlog.stdlib.ProcessorFormatter(
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(sort_keys=True, default=str),
        ],
        foreign_pre_chain=[*_SHARED, structlog.stdlib.ExtraAdder()],
    )


class _JsonLinesHandler(logging.FileHandler):
    def __init__(self, path: Path, thread: int | None) -> None:
        super().__init__(path, encoding="utf-8")
        self.setFormatter(json_formatter())
        if thread is not None:
            self.addFilter(lambda record: record.thread == thread)


@contextlib.contextmanager
def _attached(handler: logging.Handler) -> Iterator[None]:
    logger = logging.getLogger(ROOT)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()


class AttemptLog:
    """One attempt's log: within `with AttemptLog(attempt_id, run_id=...) as alog:` every
    orchestrator line of this thread carries `attempt_id` (and the try's `run_id`); lines are held in memory until `alog.open(path)`, then
    written (the held ones first) to `path` as JSON lines. Never opened (bad input before the
    attempt folder exists): the held lines are dropped."""

    def __init__(self, attempt_id: str, *, run_id: str | None = None) -> None:
        _configure()
        self.attempt_id, self.run_id = attempt_id, run_id
        self.thread = threading.get_ident()
        self._held = logging.handlers.MemoryHandler(capacity=100_000, flushLevel=logging.CRITICAL + 1, flushOnClose=False)
        self._held.addFilter(lambda record: record.thread == self.thread)
        self._file: _JsonLinesHandler | None = None
        self._bound: Any = None

    def __enter__(self) -> AttemptLog:
        ids = {"attempt_id": self.attempt_id, **({"run_id": self.run_id} if self.run_id else {})}
        self._bound = structlog.contextvars.bound_contextvars(**ids)
        self._bound.__enter__()
        logging.getLogger(ROOT).addHandler(self._held)
        return self

    def open(self, path: Path) -> None:
        """Start writing to `path`: the held lines, then every new one."""
        self._file = _JsonLinesHandler(path, self.thread)
        logger = logging.getLogger(ROOT)
        logger.addHandler(self._file)
        logger.removeHandler(self._held)
        self._held.setTarget(self._file)
        self._held.flush()
        self._held.close()

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger(ROOT)
        logger.removeHandler(self._held)
        self._held.close()
        if self._file is not None:
            logger.removeHandler(self._file)
            self._file.close()
        self._bound.__exit__(*exc)


@contextlib.contextmanager
def campaign_log(path: Path) -> Iterator[Any]:
    """Within the block, every thread's orchestrator log lines go to `path` as JSON lines; yields
    a logger for the campaign's own events."""
    _configure()
    path.parent.mkdir(parents=True, exist_ok=True)
    with _attached(_JsonLinesHandler(path, None)):
        yield get_logger("orchestrator.campaign")


def _drop_shown_by_rich(_logger: Any, _name: str, event: Any) -> Any:
    """Rich prints the time, level and logger itself."""
    for key in ("ts", "level", "logger"):
        event.pop(key, None)
    return event


def configure_console(verbose: bool = False) -> None:
    """Human log lines on stderr, rendered by rich: warnings and errors, or INFO with `verbose`.

    Replaces an earlier console handler of this module (commands may call it more than once).
    """
    _configure()
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_pb_console", False):
            root.removeHandler(h)
    handler = RichHandler(console=Console(stderr=True, file=sys.stderr), show_path=False, rich_tracebacks=False)
    handler.setLevel(logging.INFO if verbose else logging.WARNING)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                _drop_shown_by_rich,
                structlog.dev.ConsoleRenderer(colors=False, pad_event_to=0, pad_level=False),
            ],
            foreign_pre_chain=[structlog.contextvars.merge_contextvars, structlog.stdlib.ExtraAdder()],
        )
    )
    handler._pb_console = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    if root.level > handler.level or root.level == logging.NOTSET:
        root.setLevel(handler.level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per control call is noise
