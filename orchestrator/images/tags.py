"""`planned_tags`: the tag each image would have for the current sources, by role, computed from
the sources alone (no engine). The campaign identity records them, and `images prune` keeps them.

It names the base and app images (`base.py`, `app.py`) and the variants (`variant.py`, which
builds on `ensure.py`), so it lives apart from both builders.
"""
from __future__ import annotations

from . import config
from .app import app_content_hash
from .base import base_tag
from .hashing import short
from .variant import variant_tag


def planned_tags() -> dict[str, str]:
    """The tags the current sources would have, by role, without asking the engine."""
    base = base_tag()
    tags = {"base": base} | {s.role: f"{s.repository}:{short(app_content_hash(s, base))}"
                             for s in config.APP_IMAGES}
    for spec in config.VARIANT_IMAGES.values():
        tags[spec.role] = variant_tag(spec, base)
    return tags
