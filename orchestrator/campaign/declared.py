"""A campaign run `--declared study.json` (issue 39): its seeds, and the check that it is the
declared study (orchestrator/study/declaration.py), made in `Campaign.check()` before anything is
prepared or written.

Sealed seeds come from the user's secret (`--seed-secret FILE`), checked against the declared
commitment; they are added to the public seeds and live only in the label's host-side records
(campaign.json, the attempt folders, the scenario cache), never on the agent's side. The secret
itself is never written anywhere by the campaign.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.campaign.declaration import DeclarationChanged
from orchestrator.campaign.spec import CampaignSpec
from orchestrator.study.declaration import STUDY_FILE, build_study, load_study, study_differences, study_sha256
from orchestrator.study.seeds import SealedSeedError, read_secret, reveal_seeds


class DeclaredStudy:
    """The study a campaign must follow, with its sealed seeds when the secret was given."""

    def __init__(self, path: Path, seed_secret: Path | None = None) -> None:
        self.path = Path(path)
        self.raw = self.path.read_bytes() if self.path.is_file() else b""
        self.study = load_study(self.path)
        self.sha256 = study_sha256(self.study)
        self.sealed: list[int] = []
        block = self.study.get("sealed_seeds")
        if block:
            if seed_secret is None:
                raise DeclarationChanged(f"{path} declares sealed seeds: give the secret (--seed-secret FILE)")
            try:
                self.sealed = reveal_seeds(block, read_secret(seed_secret), self.study.get("seeds") or [])
            except SealedSeedError as exc:
                raise DeclarationChanged(f"--seed-secret: {exc}") from None
        elif seed_secret is not None:
            raise DeclarationChanged(f"--seed-secret given, but {path} declares no sealed seeds")

    def seeds(self, public: list[int] | None) -> list[int]:
        """The campaign's seeds: the public ones (from the flags, or else the declared ones) and the sealed."""
        chosen = list(public) if public is not None else list(self.study.get("seeds") or [])
        return sorted(set(chosen) | set(self.sealed))

    def check(self, spec: CampaignSpec, declaration: dict[str, Any]) -> dict[str, Any]:
        """Refuse (`DeclarationChanged`, every difference listed) a campaign that is not the declared
        study; return the `study` block campaign.json records."""
        public = sorted(set(spec.seeds) - set(self.sealed))
        current = build_study(declaration, public_seeds=public, turn_s=spec.turn_timeout_s,
                              infra_retries=spec.budgets.infra_retries, model_access=spec.model_access,
                              analysis=self.study.get("analysis") or {}, sealed=self.study.get("sealed_seeds"))
        changes = study_differences(self.study, current)
        if changes:
            raise DeclarationChanged(
                f"the campaign is not the study declared in {self.path} (SHA-256 {self.sha256}); nothing was run:\n  "
                + "\n  ".join(changes))
        return {"sha256": self.sha256, "budgets": current["budgets"], "limits": current["limits"]}

    def store(self, root: Path) -> None:
        """Keep the declaration in the label byte for byte (refuse another one already there)."""
        dest = root / STUDY_FILE
        if dest.is_file() and dest.read_bytes() != self.raw:
            raise DeclarationChanged(f"{dest} holds another study declaration")
        root.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(self.raw)


def refuse_undeclared(root: Path) -> None:
    """A label that holds a study declaration resumes only under it."""
    if (root / STUDY_FILE).is_file():
        raise DeclarationChanged(f"label {root.name!r} is a declared study ({root / STUDY_FILE}): "
                                 "run it with --declared (and --seed-secret for sealed seeds)")
