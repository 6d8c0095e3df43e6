"""The real Codex CLI for host-side tests: the `codex` binary of the pinned PyPI wheel
`openai-codex-cli-bin` (codex_cli_bin/bin/codex, x86_64 musl, runs offline), fetched once into
the wheelhouse cache like the images' wheels (the pin is the agent-codex image's)."""
from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

MEMBER = "codex_cli_bin/bin/codex"


def codex_binary() -> Path:
    """The codex binary of the pinned wheel, extracted once into the cache."""
    from orchestrator.images import AGENT_CODEX_IMAGE, config
    from orchestrator.images.wheelhouse import ensure_wheelhouse

    wheelhouse = ensure_wheelhouse(AGENT_CODEX_IMAGE.role, AGENT_CODEX_IMAGE.requirements)
    (wheel,) = wheelhouse.glob("openai_codex_cli_bin-*.whl")
    target = config.cache_dir() / "cli" / wheel.stem / "codex"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        with zipfile.ZipFile(wheel) as zf, zf.open(MEMBER) as src, open(partial, "wb") as out:
            shutil.copyfileobj(src, out, length=1 << 20)
        partial.chmod(0o755)
        partial.rename(target)
    return target
