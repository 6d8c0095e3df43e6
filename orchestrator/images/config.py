"""Names, paths and fixed settings of the image build, in one place.

Everything another part needs to know about the images (repository names, users, paths inside
the images, the label keys) is here, so that the runtime and the tests never spell them twice.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGES_DIR = REPO_ROOT / "images"

# Bump when the builder itself changes in a way that changes what it produces; it is part of
# every content hash, so every image gets a new tag.
BUILDER_VERSION = "1"
HASH_LEN = 12  # characters of the SHA-256 used in tags

# --- base image (debootstrap -> docker import) ---------------------------------------------
BASE_REPOSITORY = "pb-base"
DEBIAN_SUITE = "bookworm"
# The mirror is not part of the hash: any mirror of the same suite gives the same packages.
DEBIAN_MIRROR = os.environ.get("PB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_PACKAGES_FILE = IMAGES_DIR / "base" / "packages.txt"
BASE_BUILD_SCRIPT = IMAGES_DIR / "base" / "build-rootfs.sh"
BASE_PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# --- wheelhouse: wheels for the images' interpreter, not the host's -------------------------
# Bookworm ships CPython 3.11 on glibc 2.36; wheels are chosen for exactly that target.
IMAGE_PYTHON_VERSION = "3.11"
IMAGE_PYTHON_ABI = "cp311"
IMAGE_GLIBC = (2, 36)
MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine())
IMAGE_PLATFORM = f"manylinux_{IMAGE_GLIBC[0]}_{IMAGE_GLIBC[1]}_{MACHINE}"
# Every platform tag such an interpreter accepts, newest first. pip's --platform does not
# expand PEP 600 tags to older glibc versions on every pip release, so the list is explicit.
IMAGE_PLATFORMS: tuple[str, ...] = tuple(
    f"manylinux_2_{minor}_{MACHINE}" for minor in range(IMAGE_GLIBC[1], 4, -1)
) + (f"manylinux2014_{MACHINE}", f"manylinux2010_{MACHINE}", f"manylinux1_{MACHINE}", f"linux_{MACHINE}")

# --- paths and users inside the images ------------------------------------------------------
VENV_DIR = "/opt/venv"
APP_DIR = "/opt/app"  # the one package copied in, on the venv's path through a .pth file
PYTHON = f"{VENV_DIR}/bin/python"
ERP_USER, ERP_UID = "erp", 1001
ERP_DATA_DIR = "/data"
AGENT_USER, AGENT_UID = "agent", 1000
AGENT_HOME = "/home/agent"
AGENT_WORKSPACE = "/workspace"
AGENT_TURN_DIR = "/turn"
ERP_COMMAND = "/usr/local/bin/erp"

# --- labels ---------------------------------------------------------------------------------
LABEL_CONTENT_HASH = "pb.content-hash"
LABEL_ROLE = "pb.image"
LABEL_BASE_ID = "pb.base-id"  # the id of the base image an app image was built FROM
OCI_VERSION = "org.opencontainers.image.version"
OCI_REVISION = "org.opencontainers.image.revision"
OCI_SOURCE = "org.opencontainers.image.source"
OCI_TITLE = "org.opencontainers.image.title"


@dataclass(frozen=True)
class AppImageSpec:
    """One image built FROM the base: which package goes in and which files define it."""

    role: str  # "erp" | "agent"
    repository: str  # image repository name, e.g. "pb-erp"
    package: str  # the top-level package copied into APP_DIR
    also: tuple[str, ...] = ()  # further packages it holds (the ERP image: erp_mcp, erp_web: the MCP server, the web UI)
    extra_files: tuple[str, ...] = ()  # files of the definition dir copied to the context root
    source_root: Path = REPO_ROOT  # where the package folder is (tests point it elsewhere)

    @property
    def definition_dir(self) -> Path:
        """images/<role>: the Dockerfile, requirements.txt and extra files."""
        return IMAGES_DIR / self.role

    @property
    def dockerfile(self) -> Path:
        return self.definition_dir / "Dockerfile"

    @property
    def requirements(self) -> Path:
        return self.definition_dir / "requirements.txt"

    @property
    def package_dir(self) -> Path:
        return self.source_root / self.package

    @property
    def packages(self) -> tuple[str, ...]:
        """Every package copied into APP_DIR: `package`, then `also`."""
        return (self.package, *self.also)


ERP_IMAGE = AppImageSpec(role="erp", repository="pb-erp", package="erp_service", also=("erp_mcp", "erp_web"))
AGENT_IMAGE = AppImageSpec(role="agent", repository="pb-agent", package="agent_sandbox", extra_files=("erp",))
GATEWAY_IMAGE = AppImageSpec(role="gateway", repository="pb-gateway", package="model_gateway")
APP_IMAGES: tuple[AppImageSpec, ...] = (ERP_IMAGE, AGENT_IMAGE, GATEWAY_IMAGE)
GATEWAY_USER, GATEWAY_UID = "gateway", 1002
GATEWAY_DIR = "/gateway"  # where the runtime puts the gateway's config, keys and control token


@dataclass(frozen=True)
class VariantImageSpec:
    """An app image's build with extra files taken out of pinned wheels (see images/variant.py).

    Built only when asked for (`ensure_variant`): the agent CLIs are large, and most runs
    (scripted policies, the test suite) never need them."""

    role: str  # "agent-claude" | "agent-codex"
    repository: str  # "pb-agent-claude" | "pb-agent-codex"
    from_role: str  # the app image whose build it extends ("agent")
    wheel: str  # canonical name of the pinned wheel the files come from
    members: tuple[tuple[str, str], ...]  # (path inside the wheel, name in the context's pb/)

    @property
    def definition_dir(self) -> Path:
        return IMAGES_DIR / self.role

    @property
    def dockerfile(self) -> Path:
        return self.definition_dir / "Dockerfile"

    @property
    def requirements(self) -> Path:
        return self.definition_dir / "requirements.txt"


AGENT_CLAUDE_IMAGE = VariantImageSpec(
    role="agent-claude", repository="pb-agent-claude", from_role="agent", wheel="claude-agent-sdk",
    members=(("claude_agent_sdk/_bundled/claude", "claude"),))
AGENT_CODEX_IMAGE = VariantImageSpec(
    role="agent-codex", repository="pb-agent-codex", from_role="agent", wheel="openai-codex-cli-bin",
    members=(("codex_cli_bin/bin/codex", "codex"), ("codex_cli_bin/codex-path/rg", "rg")))
VARIANT_IMAGES: dict[str, VariantImageSpec] = {spec.role: spec for spec in (AGENT_CLAUDE_IMAGE, AGENT_CODEX_IMAGE)}
CLAUDE_COMMAND = "/usr/local/bin/claude"
CODEX_COMMAND = "/usr/local/bin/codex"
ROLES = ("base", "erp", "agent", "gateway")


def cache_dir() -> Path:
    """Where rootfs tarballs and wheelhouses are kept: $PB_CACHE_DIR, else ~/.cache/process-bench."""
    explicit = os.environ.get("PB_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "process-bench"


def helper_labels(purpose: str) -> dict[str, str]:
    """Labels for a short-lived container the image tooling (or its tests) starts: the runtime's
    attempt labels (managed, owner pid/start/boot/host), so the reaper knows whose it is."""
    from orchestrator import labels  # the runtime's label convention

    return labels.attempt_labels(campaign="images", attempt_id=purpose, role="helper")
