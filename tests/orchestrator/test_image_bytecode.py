"""The app images' build context carries its packages' bytecode (orchestrator/images/app.py):
the images run with PYTHONDONTWRITEBYTECODE and a read-only /opt/app, so without it every ERP
start compiled erp_service again."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.images import app, config
from orchestrator.images.model import ImageBuildError

#: Imports the ERP's server from the context's copy, counting modules compiled from source.
PROBE = """
import importlib._bootstrap_external as be, sys
compiled = []
original = be.SourceLoader.source_to_code
def counting(self, data, path, *a, **k):
    compiled.append(path)
    return original(self, data, path, *a, **k)
be.SourceLoader.source_to_code = counting
import erp_service.server
assert sys.modules["erp_service"].__file__.startswith(sys.argv[1]), sys.modules["erp_service"].__file__
print([p for p in compiled if p.startswith(sys.argv[1])])
"""


def _erp_spec() -> config.AppImageSpec:
    return next(s for s in vars(config).values() if isinstance(s, config.AppImageSpec) and s.role == "erp")


@pytest.mark.skipif(sys.implementation.cache_tag != "cpython-311", reason="bytecode only from the images' CPython 3.11")
def test_erp_context_holds_bytecode_the_interpreter_uses(tmp_path: Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (tmp_path / "wheels").mkdir()
    app.write_context(_erp_spec(), tmp_path / "wheels", ctx)
    sources = sorted((ctx / "app" / "erp_service").rglob("*.py"))
    assert len(sources) > 50
    missing = [p for p in sources if not (p.parent / "__pycache__" / f"{p.stem}.cpython-311.pyc").is_file()]
    assert missing == []
    env = {**os.environ, "PYTHONPATH": str(ctx / "app"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    out = subprocess.run([sys.executable, "-c", PROBE, str(ctx / "app")], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # nothing of the package compiled at start


@pytest.mark.skipif(sys.implementation.cache_tag != "cpython-311", reason="bytecode only from the images' CPython 3.11")
def test_a_package_file_that_does_not_compile_fails_the_context(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "broken_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("x = (\n")
    spec = dataclasses.replace(_erp_spec(), package="broken_pkg", also=(), source_root=tmp_path / "src")
    (tmp_path / "ctx").mkdir()
    (tmp_path / "wheels").mkdir()
    with pytest.raises(ImageBuildError, match="broken_pkg/__init__.py: does not compile"):
        app.write_context(spec, tmp_path / "wheels", tmp_path / "ctx")
