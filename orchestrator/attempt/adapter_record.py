"""The adapter's settings on record (spec §5: "record effective adapter token/iteration limits
separately from observed usage"): for a command system, which harness and version ran, with
which model, reasoning effort and limits, beside the usage the gateway observed.

Everything here is known on the host before the turn runs (the system's definition, the model
access, the image's pinned wheel, the turn's budget), never read from what the agent's container
wrote: the agent cannot move its own record. The one exception is `notes`, read from the CLI's
own output after the turn and marked as such (e.g. Codex's fallback model metadata).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_sandbox import harness_claude, harness_codex
from agent_sandbox.adapter_limits import harness_module
from agent_sandbox.systems import SystemSpec

# The fixed settings and own tool denials of each built-in harness adapter.
_HARNESSES: dict[str, Any] = {"agent_sandbox.harness_codex": harness_codex,
                              "agent_sandbox.harness_claude": harness_claude}


class AdapterSettings(BaseModel):
    """What the harness adapter of a command system applied to its CLI on a turn (or, in
    attempt.json, on every turn). Unset limits mean the CLI's own default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str
    harness: str | None = Field(description="the adapter module, e.g. agent_sandbox.harness_codex; None: the "
                                            "system's own command")
    harness_version: str | None = Field(description="the pinned wheel the CLI was taken from (name==version), "
                                                    "from the image's definition; None: an image the user gave")
    image: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    max_turns: int | None = None
    max_output_tokens: int | None = None
    turn_timeout_s: float | None = Field(default=None, description="the turn's budget; in attempt.json the "
                                                                   "declared override, None when each turn has its own")
    tools_allowed: list[str] | None = None
    tools_denied: list[str] = Field(default_factory=list)
    fixed: dict[str, Any] = Field(default_factory=dict, description="settings the adapter always applies")
    notes: list[str] = Field(default_factory=list, description="what the CLI itself said about its settings")

    def for_turn(self, budget_s: float, notes: list[str]) -> AdapterSettings:
        """The same settings with one turn's budget and notes."""
        return self.model_copy(update={"turn_timeout_s": budget_s, "notes": notes})


def image_pin(image: str | None) -> str | None:
    """`name==version` of the wheel a project CLI image (`agent-claude`, `agent-codex`) is made
    from; None for any other image."""
    from orchestrator.images import config as image_config
    from orchestrator.images.wheelhouse import canonical_name, read_pins

    spec = image_config.VARIANT_IMAGES.get(image or "")
    if spec is None:
        return None
    version = read_pins(spec.requirements).get(canonical_name(spec.wheel))
    return f"{spec.wheel}=={version}" if version else None


def adapter_settings(system: SystemSpec, model: str | None, turn_timeout_s: float | None, *,
                     in_image: bool = True) -> AdapterSettings:
    """The settings a command system's turns run with: its declared limits, its harness's own.
    `in_image`: the turns run in the system's image (docker), so its pinned CLI is the one run;
    otherwise (the local backend) the version is not known here."""
    module = harness_module(system.argv)
    harness = _HARNESSES.get(module or "")
    declared = system.limits
    denied = [*(harness.TOOLS_DENIED if harness else ()), *declared.tools_denied]
    return AdapterSettings(
        system=system.name,
        harness=module,
        harness_version=image_pin(system.image) if in_image else None,
        image=system.image,
        model=model,
        reasoning_effort=declared.reasoning_effort,
        max_turns=declared.max_turns,
        max_output_tokens=declared.max_output_tokens,
        turn_timeout_s=turn_timeout_s,
        tools_allowed=list(declared.tools_allowed) if declared.tools_allowed is not None else None,
        tools_denied=list(dict.fromkeys(denied)),
        fixed=dict(harness.FIXED_SETTINGS) if harness else {},
    )


def turn_notes(settings: AdapterSettings, out_dir: Path) -> list[str]:
    """What the CLI said about its settings in the turn's output (Codex: fallback model metadata)."""
    if settings.harness == "agent_sandbox.harness_codex":
        return harness_codex.fallback_metadata_notes(out_dir / "stdout.txt")
    return []


def attempt_adapter(run: Any) -> AdapterSettings | None:
    """attempt.json's `adapter` for an AttemptRun of a command system (None for policies, people).

    The model is the one the model access gives the system (the gateway later serves only it)."""
    system = run.resolved.system if run.resolved is not None else None
    if system is None:
        return None
    model = None
    if system.model is not None and run.spec.model_access is not None:
        from orchestrator.model_access import ModelAccessError, load_model_access

        try:
            model = load_model_access(Path(run.spec.model_access)).model_for(system.model.provider, system.model.model)
        except ModelAccessError:
            model = None  # refused as bad input when the gateway opens
    return adapter_settings(system, model, run.spec.timeout_override_s,
                            in_image=getattr(run.backend, "isolation", "") == "docker")


def turn_adapter(run: Any, budget_s: float, out_dir: Path) -> AdapterSettings | None:
    """A turn's `adapter`: the attempt's settings with this turn's budget, the served model, and
    what the CLI said about its settings."""
    settings = attempt_adapter(run)
    if settings is None:
        return None
    if run.model is not None:
        settings = settings.model_copy(update={"model": run.model.model})
    return settings.for_turn(budget_s, turn_notes(settings, out_dir))
