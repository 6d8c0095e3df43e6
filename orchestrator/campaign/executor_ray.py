"""The `ray` executor: each attempt is a Ray task on a node of a cluster (the head's side).

    orchestrate campaign ... --executor ray --ray-address HOST:PORT

- Each try is one Ray task needing one unit of the custom resource `docker_slots` (each worker
  node advertises how many attempts its Docker engine takes: `ray start --resources
  '{"docker_slots": 4}'`) and no CPU, with Ray's own retries off (`max_retries=0`): retries are
  the campaign's, decided here by the scheduler, for infra errors only.
- The task (orchestrator/campaign/ray_node.py, on the node) first says which node it runs on,
  then runs the attempt against that node's own engine and returns its folder whole as a
  tar.gz archive, unpacked here into the attempt's folder: the ledger, retries and resumes stay
  on the head.
- Scenarios are content-addressed: each is shipped once into Ray's object store as an archive
  with its tree hash; a node that lacks it receives it, and checks the hash before use.
- A node lost mid-attempt (the task's worker or node died, the object lost): the try is an
  infra error (the scheduler retries it, on a node still alive); the attempt's engine objects
  whose owner process is dead are removed by the head's sweep of that attempt (when the head
  shares the node's engine, as on one machine); on another host the node's own reap at its next
  start removes them (`DockerBackend.prepare`).
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from orchestrator.campaign.executor import Executor, Placed
from orchestrator.campaign.ray_node import node_attempt, pack_folder, unpack_folder
from orchestrator.campaign.runtime import FatalCampaignError
from orchestrator.hashing import tree_sha256
from orchestrator.identity import AttemptIdentity
from orchestrator.model_limits import campaign_limiter

SLOT_RESOURCE = "docker_slots"
NODE_FILE = "node.json"  # beside result.json: where the try ran (the ledger does not read it)
_POLL_S = 0.5
# How long the head waits for a lost node's processes to be gone before it gives up its sweep.
SWEEP_WAIT_S = 60.0


class RayUnavailable(RuntimeError):
    """Ray is not installed, the cluster cannot be reached, or no node offers a Docker slot."""


def import_ray() -> Any:
    """The `ray` module, or a clear error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--executor ray needs Ray: pip install -e '.[ray]' (the `ray` extra)") from None
    return ray


def sweep_attempt(client: Any, label: str, ident: AttemptIdentity) -> tuple[list[str], int]:
    """Remove the engine objects of `ident` in campaign `label` whose owner process is dead.

    A live owner's objects are kept (and counted: a lost node's processes may take a moment to
    die); containers go first (a network or volume in use cannot be removed). Returns what went
    and how many objects of the attempt are still owned by a live process.
    """
    from orchestrator import labels as L

    prefix = ident.run_id_prefix()
    filters = {"label": [f"{L.MANAGED}=1", f"{L.CAMPAIGN}={label}"]}
    api = client.api
    removed: list[str] = []
    alive = 0

    def mine(labels: dict[str, str] | None) -> bool:
        nonlocal alive
        labels = labels or {}
        if not labels.get(L.ATTEMPT, "").startswith(prefix):
            return False
        if L.owner_state(labels) is L.OwnerState.DEAD:
            return True
        alive += 1
        return False

    def remove(kind: str, name: str, call: Callable[[], Any]) -> None:
        try:
            call()
            removed.append(f"{kind} {name}")
        except Exception as exc:  # noqa: BLE001 — gone meanwhile, or in use: the next sweep or reap retries
            if getattr(exc, "status_code", None) == 404:
                removed.append(f"{kind} {name} [already gone]")

    for c in api.containers(all=True, filters=filters):
        if mine(c.get("Labels")):
            remove("container", c["Names"][0].lstrip("/"), partial(api.remove_container, c["Id"], force=True))
    for v in api.volumes(filters=filters).get("Volumes") or []:
        if mine(v.get("Labels")):
            remove("volume", v["Name"], partial(api.remove_volume, v["Name"], force=True))
    for n in api.networks(filters=filters):
        if mine(n.get("Labels")):
            remove("network", n["Name"], partial(api.remove_network, n["Id"]))
    return removed, alive


class RayExecutor(Executor):
    """Runs each try as a Ray task on a node with a free Docker slot; the head keeps the record."""

    name = "ray"

    def __init__(
        self,
        *,
        address: str,
        label: str,
        backend: str,
        sources: dict[str, Any],
        tasks: dict[str, dict[str, Any]],
        scenarios: dict[tuple[str, int], Any],
        turn_timeout_s: float | None,
        systems_file: str | None = None,
        model_access: str | None = None,
        engine: Any = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        """`sources` and `tasks` are the label's declaration (what every node must have the same);
        `scenarios` the head's built scenarios by (task, seed); `engine` a Docker client of the
        engine the head shares with its nodes (for the sweep after a lost node), or None."""
        self.address = address
        self.label = label
        self.backend = backend
        self.sources = sources
        self.tasks = tasks
        self.scenarios = scenarios
        self.turn_timeout_s = turn_timeout_s
        self.files = {k: (Path(v).name, Path(v).read_bytes()) for k, v in
                      (("systems", systems_file), ("model_access", model_access)) if v}
        self.engine = engine
        self.log = log or (lambda text: None)
        self._shipped: dict[tuple[str, int], dict[str, Any]] = {}
        self._task: Any = None
        self._ray: Any = None
        self.slots = 0

    # -- the cluster
    def prepare(self) -> None:
        """Connect, check that some node offers a Docker slot, ship every scenario once."""
        ray = import_ray()
        self._ray = ray
        if not ray.is_initialized():
            try:
                # The nodes' own logs stay on the nodes (Ray's session folders): the head prints
                # the campaign's progress, not every worker's lines.
                ray.init(address=self.address, log_to_driver=False, logging_level="WARNING",
                         configure_logging=True)
            except Exception as exc:  # noqa: BLE001 — ConnectionError, timeouts: say where
                raise RayUnavailable(f"cannot reach the Ray cluster at {self.address}: {exc}") from exc
        self.slots = int(ray.cluster_resources().get(SLOT_RESOURCE, 0))
        if self.slots < 1:
            raise RayUnavailable(
                f"no node of the Ray cluster at {self.address} advertises {SLOT_RESOURCE!r}: start worker nodes with "
                f"`ray start --address {self.address} --resources '{{\"{SLOT_RESOURCE}\": N}}'`")
        self._task = ray.remote(node_attempt).options(
            num_cpus=0, resources={SLOT_RESOURCE: 1}, max_retries=0, retry_exceptions=False,
            num_returns="streaming")
        for (task, seed), scenario in sorted(self.scenarios.items()):
            folder = Path(scenario.dir)
            self._shipped[(task, seed)] = {
                "task": task, "seed": seed, "key": scenario.key, "name": folder.name,
                "digest": tree_sha256(folder),
                "archive": [ray.put(pack_folder(folder))],  # in a list: fetched only by a node that lacks it
            }
        self.log(f"ray: {self.address}: {self.slots} Docker slot(s) on "
                 f"{sum(1 for n in ray.nodes() if n.get('Alive') and n['Resources'].get(SLOT_RESOURCE))} node(s); "
                 f"{len(self._shipped)} scenario(s) shipped")

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "address": self.address, "slots": self.slots}

    def close(self) -> None:
        """Disconnect from the cluster (the cluster itself keeps running)."""
        if self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()

    # -- one try
    def payload(self, ident: AttemptIdentity) -> dict[str, Any]:
        """What a node needs to run `ident`: the identity, the declaration to check, the inputs."""
        scenario = self._shipped.get((ident.task, ident.seed))
        if scenario is None:
            raise FatalCampaignError(f"{ident.cell.text}: no scenario of {ident.task} seed {ident.seed} was shipped")
        return {
            "label": self.label, "backend": self.backend, "ident": ident, "turn_timeout_s": self.turn_timeout_s,
            "sources": self.sources, "task_tree": self.tasks[ident.task]["tree_sha256"],
            "scenario": scenario, "files": self.files,
            "limiter": campaign_limiter(),  # the head's limiter service (orchestrator/model_limits.py), or None
        }

    def run(self, ident: AttemptIdentity, folder: Path, cancel: threading.Event, placed: Placed) -> dict[str, Any]:
        """Submit the try, report its node, wait for the folder, unpack it here."""
        ray = self._ray
        if ray is None or self._task is None:
            raise RuntimeError("RayExecutor.run before prepare()")
        stream = self._task.remote(self.payload(ident))
        node: dict[str, Any] = {}
        try:
            node = self._next(stream, cancel)
            placed(node["name"])
            out = self._next(stream, cancel)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if cancel.is_set():  # we asked: Ray's cancel ends the task with the interrupt it raised there
                raise Cancelled(f"cancelled on {node.get('name', '?')}: the campaign is stopping ({cause!r})") from None
            if isinstance(cause, FatalCampaignError):  # the node refused the inputs: stop, don't retry
                raise FatalCampaignError(f"{node.get('name', 'a node')}: {cause}") from None
            raise NodeAttemptFailed(f"on {node.get('name', '?')}: {cause!r}") from None
        except ray.exceptions.TaskCancelledError:
            raise Cancelled(f"cancelled on {node.get('name', '?')}: the campaign is stopping") from None
        except ray.exceptions.RayError as exc:  # the node or its worker died, an object was lost
            self._sweep(ident)
            raise NodeLost(f"node {node.get('name', '?')} lost mid-attempt: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        unpack_folder(out["archive"], folder)
        (folder / NODE_FILE).write_text(json.dumps(dict(out["node"], transfer_bytes=len(out["archive"])),
                                                   indent=2, sort_keys=True) + "\n")
        return dict(out["result"])

    def _next(self, stream: Any, cancel: threading.Event) -> Any:
        """The stream's next value; on `cancel`, ask the task to stop and wait for its teardown."""
        ray = self._ray
        asked = False
        while True:
            ready, _ = ray.wait([stream], timeout=_POLL_S)
            if ready:
                return ray.get(next(stream))
            if cancel.is_set() and not asked:
                ray.cancel(stream)  # KeyboardInterrupt in the task: it cancels the attempt, tears down
                asked = True

    def _sweep(self, ident: AttemptIdentity) -> None:
        """After a lost node: remove the attempt's engine objects once their owner is gone."""
        if self.engine is None or self.backend != "docker":
            return
        deadline = time.monotonic() + SWEEP_WAIT_S
        while True:
            try:
                gone, alive = sweep_attempt(self.engine, self.label, ident)
            except Exception as exc:  # noqa: BLE001 — the engine is busy: `orchestrate reap` finishes the job
                self.log(f"ray: sweep of {ident.attempt_id} failed: {exc}")
                return
            for line in gone:
                self.log(f"ray: swept {line} (its node was lost)")
            if not alive:
                return
            if time.monotonic() > deadline:  # still owned by a live process: its own teardown, or a reap
                self.log(f"ray: {alive} object(s) of {ident.attempt_id} still have a live owner; left to it")
                return
            time.sleep(1)


class NodeAttemptFailed(RuntimeError):
    """The node's task raised instead of returning the attempt's folder (an infra error)."""


class NodeLost(RuntimeError):
    """The node running a try died or lost it (an infra error: the campaign retries it elsewhere)."""


class Cancelled(RuntimeError):
    """The campaign stopped while the try ran; the node tore it down."""
