"""Variant images: an app image plus files taken out of a pinned wheel (the agent CLIs).

`ensure_variant(client, "agent-claude")` builds `pb-agent-claude:<hash12>`: the agent image's
own build (same context, same Dockerfile) with the variant's lines inserted right after its
FROM, and the files taken out of the pinned wheel (Claude Code's bundled `claude`) under
`cli/` in the context. The wheel comes from the host-built wheelhouse (cached by its pin like
every other); the build runs with no network. Because the big layer comes first, on the base,
the engine's layer cache keeps it when only the agent package changes.
The tag hashes the agent image's inputs, the variant's lines, the pin and the member paths.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from . import config
from .app import app_content_hash, write_context
from .ensure import build_lock, ensure_images
from .hashing import ContentHash, short
from .labels import oci_labels
from .model import ImageBuildError, ImageRef
from .wheelhouse import canonical_name, ensure_wheelhouse, read_pins

Report = Callable[[str], None]
BUILD_TIMEOUT_S = 900


def _parent_spec(spec: config.VariantImageSpec) -> config.AppImageSpec:
    for app in config.APP_IMAGES:
        if app.role == spec.from_role:
            return app
    raise ImageBuildError(f"variant {spec.role}: no app image {spec.from_role!r}")


def variant_content_hash(spec: config.VariantImageSpec, base_tag: str) -> str:
    """Hash of a variant's inputs: its parent app image's inputs, its lines, the pin and members."""
    h = ContentHash(spec.role)
    h.add_text("parent", app_content_hash(_parent_spec(spec), base_tag))
    h.add_file("Dockerfile", spec.dockerfile)
    pins = read_pins(spec.requirements)
    h.add_text("pins", "\n".join(f"{k}=={v}" for k, v in sorted(pins.items())))
    h.add_text("members", "\n".join(f"{src}->{dst}" for src, dst in spec.members))
    return h.hexdigest()


def variant_tag(spec: config.VariantImageSpec, base_tag: str) -> str:
    """`pb-agent-claude:<hash12>` for the current sources on this base."""
    return f"{spec.repository}:{short(variant_content_hash(spec, base_tag))}"


def variant_dockerfile(spec: config.VariantImageSpec) -> str:
    """The parent's Dockerfile with the variant's lines inserted right after its FROM line."""
    lines = _parent_spec(spec).dockerfile.read_text().splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("FROM ")), None)
    if at is None:
        raise ImageBuildError(f"{_parent_spec(spec).dockerfile} has no FROM line")
    return "\n".join([*lines[:at + 1], spec.dockerfile.read_text().rstrip(), *lines[at + 1:]]) + "\n"


def _wheel_file(spec: config.VariantImageSpec, wheelhouse: Path) -> Path:
    pins = read_pins(spec.requirements)
    version = pins.get(canonical_name(spec.wheel))
    if version is None:
        raise ImageBuildError(f"{spec.requirements} does not pin {spec.wheel}")
    for wheel in sorted(wheelhouse.glob("*.whl")):
        dist, ver = wheel.name.split("-")[:2]
        if canonical_name(dist) == canonical_name(spec.wheel) and ver == version:
            return wheel
    raise ImageBuildError(f"wheelhouse {wheelhouse} has no {spec.wheel}=={version} wheel")


def write_variant_context(spec: config.VariantImageSpec, parent_wheels: Path, wheelhouse: Path, dest: Path) -> None:
    """The parent's context, the variant's Dockerfile, and cli/<name> for every member taken
    out of the wheel (executable)."""
    write_context(_parent_spec(spec), parent_wheels, dest)
    (dest / "Dockerfile").write_text(variant_dockerfile(spec))
    (dest / "cli").mkdir()
    with zipfile.ZipFile(_wheel_file(spec, wheelhouse)) as zf:
        for src, name in spec.members:
            try:
                info = zf.getinfo(src)
            except KeyError:
                raise ImageBuildError(f"the {spec.wheel} wheel has no {src}") from None
            target = dest / "cli" / name
            with zf.open(info) as fh, open(target, "wb") as out:
                shutil.copyfileobj(fh, out, length=1 << 20)
            os.chmod(target, 0o755)


def ensure_variant(client: docker.DockerClient, role: str, *, force: bool = False,
                   report: Report = lambda _msg: None) -> ImageRef:
    """Make sure the variant image `role` exists for the current sources; build it if not.

    Builds (or finds) the image it is built FROM first. Raises ImageBuildError on failure."""
    spec = config.VARIANT_IMAGES.get(role)
    if spec is None:
        raise ImageBuildError(f"no variant image {role!r}; variants are {', '.join(sorted(config.VARIANT_IMAGES))}")
    images = ensure_images(client, report=report)
    base = images.base
    parent = _parent_spec(spec)
    content_hash = variant_content_hash(spec, base.tag)
    tag = f"{spec.repository}:{short(content_hash)}"
    with build_lock():
        if not force:
            try:
                image = client.images.get(tag)
            except docker.errors.ImageNotFound:
                image = None
            labels = (image.labels or {}) if image is not None else {}
            if image is not None and labels.get(config.LABEL_CONTENT_HASH) == content_hash \
                    and labels.get(config.LABEL_BASE_ID) == base.id:
                return ImageRef(role=role, tag=tag, id=image.id, content_hash=content_hash, labels=dict(labels))
        started = time.monotonic()
        wheelhouse = ensure_wheelhouse(role, spec.requirements, report=report)
        parent_wheels = ensure_wheelhouse(parent.role, parent.requirements, report=report)
        labels = oci_labels(role, content_hash) | {config.LABEL_BASE_ID: base.id}
        report(f"{tag}: building FROM {base.tag} (offline)")
        with tempfile.TemporaryDirectory(prefix=f"pb-{role}-context.") as tmp:
            write_variant_context(spec, parent_wheels, wheelhouse, Path(tmp))
            try:
                image, _log = client.images.build(
                    path=tmp, tag=tag, buildargs={"BASE_IMAGE": base.tag}, labels=labels,
                    network_mode="none", pull=False, rm=True, forcerm=True,
                    use_config_proxy=False, timeout=BUILD_TIMEOUT_S)
            except docker.errors.BuildError as exc:
                tail = "".join(str(c.get("stream") or c.get("error") or "") for c in list(exc.build_log)[-30:])
                raise ImageBuildError(f"building {tag} failed: {exc.msg}\n{tail.rstrip()}") from exc
            except docker.errors.APIError as exc:
                raise ImageBuildError(f"building {tag} failed: {exc}") from exc
    return ImageRef(role=role, tag=tag, id=image.id, content_hash=content_hash, built=True,
                    seconds=time.monotonic() - started, labels=dict(image.labels or {}))
