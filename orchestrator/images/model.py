"""The typed results of the image build, used by the runtime, the release and the tests."""
from __future__ import annotations

from dataclasses import dataclass, field


class ImageBuildError(RuntimeError):
    exit_class = "infra_error"  # orchestrator.exit_codes.Failure
    exit_prefix = "image build failed: "
    """An image could not be built; the message says which and why (with the build's tail)."""


@dataclass(frozen=True)
class ImageRef:
    """One image as built (or found up to date) on the engine."""

    role: str  # "base" | "erp" | "agent"
    tag: str  # "pb-erp:0123456789ab"
    id: str  # the engine's image id, "sha256:..."
    content_hash: str  # full SHA-256 hex of the image's inputs
    built: bool = field(default=False, compare=False)  # True when this call built or imported it
    seconds: float = field(default=0.0, compare=False)  # time spent building it in this call
    labels: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def repository(self) -> str:
        return self.tag.rsplit(":", 1)[0]


@dataclass(frozen=True)
class ImageSet:
    """The project's images, ready on the engine (variants such as agent-claude are built on
    demand by `ensure_variant` and are not part of the set)."""

    base: ImageRef
    erp: ImageRef
    agent: ImageRef
    gateway: ImageRef

    def __iter__(self):
        return iter((self.base, self.erp, self.agent, self.gateway))

    def by_role(self, role: str) -> ImageRef:
        """The image of one role ("base", "erp", "agent" or "gateway")."""
        for ref in self:
            if ref.role == role:
                return ref
        raise KeyError(f"no image role {role!r}; roles are base, erp, agent, gateway")

    @property
    def built_any(self) -> bool:
        """Whether this ensure built anything (False when everything was up to date)."""
        return any(ref.built for ref in self)

    def to_json(self) -> dict[str, dict[str, str]]:
        """Tags, ids and content hashes by role, for attempt records and manifests."""
        return {ref.role: {"tag": ref.tag, "id": ref.id, "content_hash": ref.content_hash} for ref in self}
