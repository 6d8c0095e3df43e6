"""The ERP and agent images: FROM the local base, a venv from the wheelhouse, one package.

The build context is generated in a temporary folder and holds only what the image needs, and
the build runs with `network_mode="none"`: if it needed anything from outside it would fail.
"""
from __future__ import annotations

import py_compile
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from . import config
from .hashing import ContentHash, short, tree_files
from .labels import oci_labels
from .model import ImageBuildError, ImageRef
from .wheelhouse import ensure_wheelhouse

Report = Callable[[str], None]
BUILD_TIMEOUT_S = 900


def app_content_hash(spec: config.AppImageSpec, base_tag: str) -> str:
    """Hash of an app image's inputs: Dockerfile, base tag, requirements, the extra files and
    every file (path and bytes) of the package copied in."""
    h = ContentHash(spec.role)
    h.add_file("Dockerfile", spec.dockerfile)
    h.add_text("base", base_tag)
    h.add_file("requirements.txt", spec.requirements)
    for name in spec.extra_files:
        h.add_file(f"extra/{name}", spec.definition_dir / name)
    for package in spec.packages:
        root = spec.source_root / package
        for rel in tree_files(root):
            h.add_file(f"app/{package}/{rel.as_posix()}", root / rel)
    h.add_text("bytecode", _bytecode_tag() or "none")  # the context's .pyc files (write_context)
    return h.hexdigest()


def _bytecode_tag() -> str | None:
    """The cache tag of the .pyc files `write_context` adds: this interpreter's, when it is the
    images' (CPython 3.11); None (no bytecode) otherwise."""
    tag = sys.implementation.cache_tag
    return tag if tag == f"cpython-{config.IMAGE_PYTHON_VERSION.replace('.', '')}" else None


def app_tag(spec: config.AppImageSpec, base_tag: str) -> str:
    """`pb-erp:<hash12>` / `pb-agent:<hash12>` for the current sources on this base."""
    return f"{spec.repository}:{short(app_content_hash(spec, base_tag))}"


def write_context(spec: config.AppImageSpec, wheelhouse: Path, dest: Path) -> None:
    """Lay out the build context in `dest`: Dockerfile; pb/ with requirements.txt, wheels/ and
    the extra files (one COPY step); app/<package>/ (the package's files only, even if none, and
    their bytecode when this interpreter is the images')."""
    shutil.copy2(spec.dockerfile, dest / "Dockerfile")
    support = dest / "pb"
    shutil.copytree(wheelhouse, support / "wheels")
    shutil.copy2(spec.requirements, support / "requirements.txt")
    for name in spec.extra_files:
        shutil.copy2(spec.definition_dir / name, support / name)
    for package in spec.packages:
        root, app = spec.source_root / package, dest / "app" / package
        app.mkdir(parents=True)
        for rel in tree_files(root):
            target = app / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, target)
            if target.suffix == ".py" and (tag := _bytecode_tag()):
                # The images run with PYTHONDONTWRITEBYTECODE and a read-only /opt/app: without
                # these, every start compiled the package again (~0.2 s of the ERP's CPU each time).
                # Unchecked: the source beside it is the very file compiled here.
                try:
                    py_compile.compile(str(target), cfile=str(target.parent / "__pycache__" / f"{target.stem}.{tag}.pyc"),
                                       doraise=True, optimize=0,
                                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                except py_compile.PyCompileError as exc:
                    raise ImageBuildError(f"{package}/{rel}: does not compile: {exc.msg}") from None


def _up_to_date(client: docker.DockerClient, tag: str, content_hash: str, base: ImageRef):
    """The existing image under `tag` if it was built from these inputs on this very base."""
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    labels = image.labels or {}
    if labels.get(config.LABEL_CONTENT_HASH) != content_hash or labels.get(config.LABEL_BASE_ID) != base.id:
        return None  # the base was re-imported (same content, new id) or the tag was reused
    return image


def ensure_app_image(client: docker.DockerClient, spec: config.AppImageSpec, base: ImageRef, *,
                     force: bool = False, no_cache: bool = False, wheelhouse: Path | None = None,
                     report: Report = lambda _msg: None) -> ImageRef:
    """Make sure the image of `spec` exists for the current sources on `base`; build it if not.

    `wheelhouse` is the folder of its wheels when the caller fetched them already; otherwise
    they are taken from the cache (fetched on a miss, refetched with `no_cache`)."""
    content_hash = app_content_hash(spec, base.tag)
    tag = f"{spec.repository}:{short(content_hash)}"
    if not (force or no_cache):
        image = _up_to_date(client, tag, content_hash, base)
        if image is not None:
            return ImageRef(role=spec.role, tag=tag, id=image.id, content_hash=content_hash,
                            labels=dict(image.labels or {}))
    started = time.monotonic()
    if wheelhouse is None:
        wheelhouse = ensure_wheelhouse(spec.role, spec.requirements, force=no_cache, report=report)
    labels = oci_labels(spec.role, content_hash) | {config.LABEL_BASE_ID: base.id}
    report(f"{tag}: building FROM {base.tag} (offline)")
    with tempfile.TemporaryDirectory(prefix=f"pb-{spec.role}-context.") as tmp:
        write_context(spec, wheelhouse, Path(tmp))
        try:
            image, _log = client.images.build(
                path=tmp, tag=tag, buildargs={"BASE_IMAGE": base.tag}, labels=labels,
                network_mode="none", pull=False, rm=True, forcerm=True, nocache=no_cache,
                use_config_proxy=False, timeout=BUILD_TIMEOUT_S,
            )
        except docker.errors.BuildError as exc:
            tail = "".join(str(chunk.get("stream") or chunk.get("error") or "")
                           for chunk in list(exc.build_log)[-30:])
            raise ImageBuildError(f"building {tag} failed: {exc.msg}\n{tail.rstrip()}") from exc
        except docker.errors.APIError as exc:
            raise ImageBuildError(f"building {tag} failed: {exc}") from exc
    return ImageRef(role=spec.role, tag=tag, id=image.id, content_hash=content_hash, built=True,
                    seconds=time.monotonic() - started, labels=dict(image.labels or {}))
