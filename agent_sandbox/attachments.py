"""How the `erp` command treats an attachment's bytes: text or binary, and its file name."""
from __future__ import annotations

from pathlib import Path

from agent_sandbox.client import ErpResponse

TEXT_TYPES = ("text/", "application/json", "application/xml", "application/csv")


def looks_like_text(answer: ErpResponse) -> bool:
    """Text by its media type, or (servers often say octet-stream) by being clean UTF-8."""
    if answer.content_type.startswith(TEXT_TYPES):
        return True
    if answer.content_type not in ("", "application/octet-stream"):
        return False
    try:
        text = answer.content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(ord(c) < 32 and c not in "\t\r\n\f" for c in text)


def attachment_filename(answer: ErpResponse) -> str | None:
    """The file name from Content-Disposition, if any."""
    disp = answer.headers.get("content-disposition", "")
    for part in disp.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key.lower() == "filename":
            return Path(value.strip().strip('"')).name or None
    return None
