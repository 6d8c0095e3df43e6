"""The project's container images, built offline and cached by content hash.

Other parts call `ensure_images()` and use the tags of the `ImageSet` it returns; names, users
and paths inside the images are in `orchestrator.images.config`.
"""
from .config import AGENT_CLAUDE_IMAGE, AGENT_CODEX_IMAGE, AGENT_IMAGE, APP_IMAGES, ERP_IMAGE, GATEWAY_IMAGE
from .ensure import docker_client, ensure_images
from .model import ImageBuildError, ImageRef, ImageSet
from .tags import planned_tags
from .variant import ensure_variant

__all__ = [
    "AGENT_CLAUDE_IMAGE", "AGENT_CODEX_IMAGE", "AGENT_IMAGE", "APP_IMAGES", "ERP_IMAGE", "GATEWAY_IMAGE", "ImageBuildError", "ImageRef",
    "ImageSet", "docker_client", "ensure_images", "ensure_variant", "planned_tags",
]
