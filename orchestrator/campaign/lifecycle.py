"""The life of a campaign: one method per phase, as the attempt's (`attempt/runner.py: AttemptRun`).

    campaign = Campaign(spec, runs_root=..., executor="local", say=print)
    campaign.check()      # every input, the plan and the declaration; a label holding another
                          # campaign is refused here (nothing prepared, nothing written)
    campaign.prepare()    # the engine (reap, images) and every scenario with its reference;
                          # the Ray executor and its nodes
    campaign.declare()    # campaign.json written (new label) or the resume recorded
    run = campaign.run(on_event=..., poll=...)    # the scheduler over the plan
    summary = campaign.export()                   # attempts.jsonl, summary.json, provenance.json
    campaign.close()

| phase | what happens | a failure here is |
|---|---|---|
| check | inputs (`attempt.inputs.check_inputs`), label, plan, declaration compared | `ConfigError` / `DeclarationChanged` (bad input) |
| prepare | backend prepared, scenarios built, executor prepared | whatever `exit_codes.failure_for` says (a scenario that cannot be built is a task error) |
| declare | campaign.json, only now | `DeclarationChanged` (another orchestrator declared the label meanwhile) |
| run | attempts through the executor; infra errors retried | `FatalCampaignError` (the runtime found bad input) |
| export | ledger, summary, provenance rebuilt from the folders | |

The command (`commands/campaign.py`) parses flags, calls the phases, shows progress and maps the
ending to an exit code.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.attempt.inputs import CheckedInputs, check_inputs
from orchestrator.campaign import runtime
from orchestrator.campaign.declaration import (
    CampaignDeclaration,
    DeclarationChanged,
    build_declaration,
    check_or_write_declaration,
    declaration_changes,
    load_declaration,
    plan_attempts,
)
from orchestrator.campaign.declared import DeclaredStudy, refuse_undeclared
from orchestrator.campaign.executor import Executor
from orchestrator.campaign.executor_local import LocalExecutor
from orchestrator.campaign.limits import EngineLimits
from orchestrator.campaign.scheduler import AttemptEvent, CampaignRun, Scheduler
from orchestrator.campaign.sources import label_sources
from orchestrator.campaign.spec import CampaignSpec, CampaignSpecError
from orchestrator.hashing import canonical_json, sha256_bytes
from orchestrator.identity import AttemptIdentity
from orchestrator.model_access import ModelAccess, load_model_access
from orchestrator.model_limits import CostBudget, start_campaign_limiter, stop_campaign_limiter


def default_label(spec: CampaignSpec) -> str:
    """A label derived from what the campaign is, so the same command resumes the same label."""
    key = canonical_json(
        {"cells": spec.cells, "seeds": spec.seeds, "reps": spec.reps, "timeout": spec.turn_timeout_s,
         "backend": spec.backend or "docker"}
    )
    return "campaign-" + sha256_bytes(key.encode())[:10]


# A campaign on docker keeps this many attempts' networks and ERP ready ahead (PB_WARM_ERP_SLOTS
# overrides): one is enough to take the ERP's start off the next attempt's path on this host.
CAMPAIGN_WARM_ERP_SLOTS = 1


class Campaign:
    """One run (or resume) of a campaign under its label."""

    def __init__(self, spec: CampaignSpec, *, runs_root: Path | None, executor: str = "local",
                 ray_address: str | None = None, say: Callable[[str], None] = lambda _t: None,
                 declared: DeclaredStudy | None = None) -> None:
        from orchestrator.config import RuntimeConfig

        if executor == "ray" and not ray_address:
            raise CampaignSpecError("--executor ray needs --ray-address HOST:PORT (or RAY_ADDRESS)")
        self.spec, self.executor_name, self.ray_address, self.say = spec, executor, ray_address, say
        self.declared = declared  # the study this campaign must follow (`--declared`), if any
        self.label = spec.label or default_label(spec)
        self.backend = spec.backend or "docker"
        self.cells = spec.cell_refs
        overrides: dict[str, Any] = {"campaign": self.label}
        if self.backend == "docker" and "PB_WARM_ERP_SLOTS" not in os.environ:
            overrides["warm_erp_slots"] = CAMPAIGN_WARM_ERP_SLOTS  # ERP slots made ahead (warm_pool.py)
        if runs_root is not None:
            overrides["runs_root"] = runs_root
        self.config = RuntimeConfig.from_env(**overrides)
        self.runs_root = Path(runs_root or self.config.runs_root).resolve()
        self.root = self.runs_root / self.label
        self.concurrency = spec.concurrency or 1
        self.checked: CheckedInputs | None = None
        self.plan: list[AttemptIdentity] = []
        self.declaration: CampaignDeclaration | None = None
        self.resuming = False
        self.engine: Any = None
        self.scenarios = runtime.ScenarioCache()
        self.executor: Executor | None = None
        self.scheduler: Scheduler | None = None
        self._stop_asked = False
        self._closed = False

    # -- phases ------------------------------------------------------------------------------------

    def check(self) -> None:
        """Every input, the plan and the declaration; refuse a label that holds another campaign."""
        spec = self.spec
        self.checked = check_inputs(self.cells, systems_file=spec.systems, label=self.label,
                                    turn_timeout_s=spec.turn_timeout_s, model_access=spec.model_access)
        tasks = self.checked.tasks
        self.plan = plan_attempts(self.cells, spec.seeds, spec.reps, {k: v["version"] for k, v in tasks.items()})
        self.declaration = build_declaration(
            label=self.label, cells=self.cells, seeds=spec.seeds, reps=spec.reps, task_info=tasks,
            systems=self.checked.systems, turn_timeout_s=spec.turn_timeout_s, backend=self.backend,
            sources=label_sources(),  # a resume after a change of the ERP, grader, generator or images is refused
            volatile={
                "concurrency": self.concurrency,
                "infra_retries": spec.budgets.infra_retries,
                "runs_root": str(self.runs_root),
                "argv": sys.argv[1:],
                # Where attempts run does not change what they are: a label resumes under either.
                "executor": self.executor_name,
            },
        )
        if self.declared is not None:  # before anything is prepared: a difference runs nothing
            self.declaration.study = self.declared.check(spec, self.declaration.to_json())
        else:
            refuse_undeclared(self.root)
        old = load_declaration(self.root)
        self.resuming = old is not None
        if old is not None and declaration_changes(old.to_json(), self.declaration.to_json()):
            check_or_write_declaration(self.root, self.declaration)  # raises, naming every change

    def prepare(self) -> None:
        """The engine and every scenario (with the oracle's reference projections), before any
        attempt; on Ray, the executor and its nodes."""
        from orchestrator.leftovers import sweep_cache

        for gone in sweep_cache(self.config):  # temporary folders of killed runs (never a live one's)
            self.say(f"removed {gone} (left by a killed run)")
        try:
            if self.executor_name == "local":
                self.engine = runtime.limited_backend(self.backend, self.config, EngineLimits.for_concurrency(self.concurrency))
                self.say(f"backend {self.backend}: preparing (reap what dead runs left; build missing images)")
                runtime.prepare_backend(self.engine)
            for task, seed in sorted({(c.task, s) for c in self.cells for s in self.spec.seeds}):
                self.say(f"scenario {task} seed {seed}: building (with the oracle's reference projections)")
                self.scenarios.get(task, seed)
            if self.executor_name == "ray":  # the nodes prepare their own engines (reap, images by content hash)
                self.executor = self._ray_executor()
                self.executor.prepare()
                if self.spec.concurrency is None:  # as many attempts in flight as the cluster has Docker slots
                    self.concurrency = max(1, getattr(self.executor, "slots", 1))
                    self._declared().volatile["concurrency"] = self.concurrency
        except BaseException:
            self.close()
            raise

    def declare(self) -> None:
        """Write campaign.json now, and only now (or record the resume)."""
        try:
            if self.declared is not None:
                self.declared.store(self.root)
            check_or_write_declaration(self.root, self._declared())
        except DeclarationChanged:  # another orchestrator declared it meanwhile
            self.close()
            raise

    def run(self, *, on_event: Callable[[AttemptEvent], None] | None = None,
            poll: Callable[[], None] | None = None) -> CampaignRun:
        """Every planned attempt not finished yet, through the executor; `stop()` ends it early."""
        spec = self.spec
        if self.executor is None:
            self.executor = LocalExecutor(runtime.make_job(
                backend=self.engine, runs_root=self.runs_root, label=self.label, turn_timeout_s=spec.turn_timeout_s,
                systems_file=spec.systems, config=self.config, scenarios=self.scenarios,
                model_access=spec.model_access,
            ))
        access = self._model_access()
        if access is not None and access.limits:  # one limiter for every attempt (orchestrator/model_limits.py)
            service = start_campaign_limiter(access)
            self.say(f"provider limits: one limiter for the campaign at {service.url if service else '?'}")
        self.scheduler = Scheduler(
            runs_root=self.runs_root, label=self.label, job=self.executor, concurrency=self.concurrency,
            infra_retries=spec.budgets.infra_retries, on_event=on_event, fatal=(runtime.FatalCampaignError,),
            cost_budget=CostBudget.of(access),
        )
        if self._stop_asked:  # a signal arrived before the scheduler existed
            self.scheduler.stop()
        try:
            return self.scheduler.run(self.plan, poll=poll)
        finally:
            self.close()

    def export(self) -> dict[str, Any]:
        """Rebuild attempts.jsonl, summary.json and provenance.json from the folders; the summary."""
        from orchestrator.campaign.export import export_label

        return export_label(self.runs_root, self.label)

    # -- around the phases -------------------------------------------------------------------------

    def stop(self) -> None:
        """Start no further attempt; those in flight cancel and tear down (SIGINT/SIGTERM)."""
        self._stop_asked = True
        if self.scheduler is not None:
            self.scheduler.stop()

    @property
    def stopping(self) -> bool:
        """True once `stop()` was called during `run`."""
        return self._stop_asked or (self.scheduler is not None and self.scheduler.stopping)

    def close(self) -> None:
        """Release the executor (a Ray connection) and the campaign's limiter, once; remove the
        engine's warm slots."""
        shutdown = getattr(self.engine, "shutdown", None)  # docker: its warm pool (warm_pool.py)
        if callable(shutdown):
            shutdown()
        if self.executor is not None and not self._closed:
            self._closed = True
            self.executor.close()
        stop_campaign_limiter()

    def _model_access(self) -> ModelAccess | None:
        if not self.spec.model_access:
            return None
        return load_model_access(Path(self.spec.model_access))

    def _declared(self) -> CampaignDeclaration:
        if self.declaration is None:
            raise RuntimeError("phase order: check() has not run")
        return self.declaration

    def _ray_executor(self) -> Executor:
        """The Ray executor: the declaration's sources and tasks, the built scenarios, and (docker
        backend) the head's engine for the sweep after a lost node, when the head has one."""
        from orchestrator.campaign.executor_ray import RayExecutor

        engine = None
        if self.backend == "docker":
            try:
                import docker

                engine = docker.from_env(version="1.41")
                engine.ping()
            except Exception:  # noqa: BLE001 — a head without an engine: each node's own reap cleans up
                engine = None
        declaration, spec = self._declared(), self.spec
        built = {(c.task, s): self.scenarios.get(c.task, s) for c in self.cells for s in spec.seeds}
        return RayExecutor(
            address=str(self.ray_address), label=self.label, backend=self.backend, sources=declaration.sources or {},
            tasks=declaration.tasks, scenarios=built, turn_timeout_s=spec.turn_timeout_s, systems_file=spec.systems,
            model_access=spec.model_access, engine=engine, log=self.say,
        )
