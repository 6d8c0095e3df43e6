"""The error of a scenario that could not be generated, shared by the task framework
(`tasks/packs.py`, `tasks/generate.py`), the company generator (`tasks/northgate/`) and the packs'
generators. It lives apart from both so that neither imports the other for it (the framework
reaches the company's history cache; the company's ERP driver raises this)."""
from __future__ import annotations


class GenerationError(RuntimeError):
    """A pack's scenario could not be generated: its plan is inconsistent (a generator's own
    check failed, or a request it made to the ERP was refused: then `status` and `code` are
    the ERP's answer), or the generator's process failed (the message carries the tail of its
    stderr). Generators raise it as `tasks.packs.GenerationError`."""

    def __init__(self, message: str, *, status: int = 0, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
