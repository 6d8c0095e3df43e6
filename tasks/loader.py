"""The one loader of pack modules (`generator.py`, `policies.py`, anything a pack holds).

A pack folder is a Python package. The repository's packs are imported under their real name
(`tasks.payment_run.generator`), the name mypy checks them under. Packs in another root (a
test's temporary folder, `PB_TASKS_ROOT`) are imported under a private package name made from
the root, so two roots never collide. Nothing edits `sys.path`.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tasks.packs import PackError, TaskPack, _rel

if TYPE_CHECKING:
    from tasks.context import GeneratorContext

TASKS_PACKAGE_DIR = Path(__file__).resolve().parent
Generator = Callable[["GeneratorContext"], None]


def package_name(pack_dir: Path) -> str:
    """The package a pack folder's modules are imported under."""
    pack_dir = Path(pack_dir).resolve()
    if pack_dir.parent == TASKS_PACKAGE_DIR:
        return f"tasks.{pack_dir.name}"
    digest = hashlib.sha256(str(pack_dir.parent).encode()).hexdigest()[:12]
    return f"_pb_packs_{digest}.{pack_dir.name}"


def _ensure_package(name: str, directory: Path) -> None:
    """Register `name` (and its private parent) as packages over `directory` if not imported."""
    if name in sys.modules:
        return
    parent, _, _leaf = name.rpartition(".")
    if parent and parent not in sys.modules and parent != "tasks":
        holder = importlib.util.spec_from_loader(parent, loader=None, is_package=True)
        assert holder is not None
        module = importlib.util.module_from_spec(holder)
        module.__path__ = []
        sys.modules[parent] = module
    init = directory / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, init if init.exists() else None, submodule_search_locations=[str(directory)])
    if spec is None:
        raise PackError(f"{_rel(directory)}: cannot be imported as a package")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)


def load_module(pack_dir: Path, module: str) -> ModuleType | None:
    """Import `<pack>/<module>.py` under the pack's package name; None when the file is absent."""
    pack_dir = Path(pack_dir).resolve()
    if not (pack_dir / f"{module}.py").exists():
        return None
    name = package_name(pack_dir)
    if not name.startswith("tasks."):
        _ensure_package(name, pack_dir)
    elif not (pack_dir / "__init__.py").exists():
        raise PackError(f"{_rel(pack_dir)}: no __init__.py (a pack folder is a package; add an empty one)")
    return importlib.import_module(f"{name}.{module}")


def load_generator(pack: TaskPack) -> Generator | None:
    """The pack's `generate(ctx)`, or None for a variant without a generator of its own."""
    mod = load_module(pack.dir, "generator")
    if mod is None:
        if pack.variant_of is None:
            raise PackError(f"{_rel(pack.generator)}: file missing (a pack that is not a variant needs a generator)")
        return None
    fn: Any = getattr(mod, "generate", None)
    if not callable(fn):
        raise PackError(f"{_rel(pack.generator)}: defines no function generate(ctx)")
    return fn


def load_policies_module(pack: TaskPack) -> dict[str, Any]:
    """The POLICIES mapping of the pack's policies module (its parent's for a variant without)."""
    path = Path(pack.policies_module)
    if not path.exists():
        return {}
    mod = load_module(path.parent, path.stem)
    policies = getattr(mod, "POLICIES", None)
    if not isinstance(policies, dict):
        raise PackError(f"{_rel(path)}: defines no POLICIES mapping")
    return policies
