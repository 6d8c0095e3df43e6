"""The node's side of the `ray` executor: one Ray task runs one try of one attempt.

`node_attempt(payload)` runs in a Ray worker process on a node that advertises `docker_slots`.
It yields twice: first where it runs (the node's name: `PB_RAY_NODE` from the node's
environment, else its host name, and its Ray node id), then the attempt's result and folder as
a tar.gz archive. It writes nothing the head reads except what it returns.

Before the attempt it checks that the node has what the label declares, and refuses (a
`FatalCampaignError`: the campaign stops) when it does not:
- the same sources (the declaration's `sources.parts`) and task tree;
- the same images: built on the node's engine from the same content hash if missing
  (`DockerBackend.prepare`, which also reaps what the node's dead processes left on its engine,
  so a node that comes back after a loss cleans up), then the tags compared with the label's;
- the scenario: content-addressed by the task's tree key and the folder's tree hash; a node
  that lacks it receives it from the head (an archive in Ray's object store), unpacks it into
  its scenario cache atomically, and checks the hash before every use.

Each try works in a folder of its own under the node's work root (`PB_RAY_WORK`, default
`<tmp>/pb-ray-work`), claimed by the worker process (orchestrator/leftovers.py): the folders of a
killed node's tries are removed by the next task on that host, and a node's first task also
sweeps its scratch and scenario-build leftovers (`sweep_cache`).

The attempt runs in a thread of its own: Ray's cancel (a KeyboardInterrupt in the task's main
thread) sets the attempt's cancel event and waits for its teardown before the task ends.
"""
from __future__ import annotations

import fcntl
import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.campaign.declaration import read_result
from orchestrator.campaign.runtime import FatalCampaignError
from orchestrator.hashing import tree_sha256
from orchestrator.identity import AttemptIdentity
from orchestrator.model_limits import LIMITER_TOKEN_ENV, LIMITER_URL_ENV

NODE_NAME_ENV = "PB_RAY_NODE"
WORK_ENV = "PB_RAY_WORK"
# One backend per (label, backend name) per worker process: prepared (reap, images) once.
_BACKENDS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def pack_folder(folder: Path) -> bytes:
    """`folder` as a tar.gz archive whose one top entry is the folder's name."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=3) as tar:
        tar.add(folder, arcname=folder.name)
    return buf.getvalue()


def unpack_folder(archive: bytes, dest: Path) -> None:
    """Unpack an archive of `pack_folder` as `dest` (which must not exist yet), atomically.

    The `tar` filter refuses members outside the destination (an agent's workspace is in the
    archive); symlinks are kept as written (the ledger hashes their target text).
    """
    if dest.exists():
        raise FileExistsError(f"{dest} exists: a try's folder is never unpacked over another")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            names = {m.name.split("/", 1)[0] for m in tar.getmembers()}
            if len(names) != 1:
                raise ValueError(f"an attempt archive holds one folder, not {sorted(names)}")
            tar.extractall(tmp, filter="tar")
        (tmp / names.pop()).rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def node_info() -> dict[str, Any]:
    """Where this task runs: the node's name, Ray node id, host and worker pid."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    host = socket.gethostname()
    name = os.environ.get(NODE_NAME_ENV) or f"{host}:{node_id[:8]}"
    return {"name": name, "node_id": node_id, "host": host, "pid": os.getpid()}


def check_sources(payload: dict[str, Any]) -> None:
    """Refuse when this node's sources or task tree differ from the label's declaration."""
    from orchestrator.attempt.inputs import task_info
    from orchestrator.campaign.sources import source_parts

    ident: AttemptIdentity = payload["ident"]
    want = (payload["sources"] or {}).get("parts") or {}
    have = source_parts()
    differ = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
    if differ:
        raise FatalCampaignError(f"this node's sources differ from the label's: {', '.join(differ)} "
                                 "(install the same commit on every node)")
    tree = task_info([ident.task])[ident.task]["tree_sha256"]
    if tree != payload["task_tree"]:
        raise FatalCampaignError(f"this node's task pack {ident.task} differs from the label's (tree {tree[:12]}, "
                                 f"declared {str(payload['task_tree'])[:12]})")


def node_backend(label: str, name: str, runs_root: Path) -> Any:
    """This process's backend for the label, prepared once: dead owners reaped, images resolved."""
    from orchestrator.campaign import runtime
    from orchestrator.campaign.limits import EngineLimits
    from orchestrator.config import RuntimeConfig

    with _LOCK:
        backend = _BACKENDS.get((label, name))
        if backend is None:
            config = RuntimeConfig.from_env(campaign=label, runs_root=runs_root)
            from orchestrator.leftovers import sweep_cache

            sweep_cache(config)  # what this node's killed processes left in its caches
            # One Ray task per worker process at a time: the node's slots bound its attempts.
            backend = runtime.limited_backend(name, config, EngineLimits.for_concurrency(1))
            runtime.prepare_backend(backend)
            _BACKENDS[(label, name)] = backend
        return backend


def check_images(backend: Any, sources: dict[str, Any]) -> None:
    """Refuse when the images this node's engine runs are not the label's content-hash tags."""
    want = (sources or {}).get("images") or {}
    have = {"erp": getattr(backend, "erp_image", None), "agent": getattr(backend, "agent_image", None)}
    differ = [f"{role}: {have[role]} (label: {want[role]})" for role in have if role in want and have[role] != want[role]]
    if differ:
        raise FatalCampaignError("this node's images differ from the label's: " + "; ".join(differ))


def node_scenario(shipped: dict[str, Any]) -> Any:
    """The shipped scenario in this node's scenario cache, received if missing, hash checked."""
    import ray

    from orchestrator.scenarios.folder import Scenario, cache_root_default

    final = cache_root_default() / shipped["task"] / shipped["name"]
    final.parent.mkdir(parents=True, exist_ok=True)
    if not final.exists():
        with open(final.parent / f".{final.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another attempt on this node may be receiving it
            if not final.exists():
                staged = final.parent / f".{final.name}.received-{os.getpid()}"
                shutil.rmtree(staged, ignore_errors=True)
                unpack_folder(ray.get(shipped["archive"][0]), staged)
                if tree_sha256(staged) != shipped["digest"]:
                    shutil.rmtree(staged, ignore_errors=True)
                    raise FatalCampaignError(f"scenario {final.name}: the received archive does not hash to the head's")
                staged.rename(final)
    digest = tree_sha256(final)
    if digest != shipped["digest"]:
        raise FatalCampaignError(f"scenario {final}: this node's copy hashes to {digest[:12]}, the head's to "
                                 f"{shipped['digest'][:12]} (remove it from the node's cache to receive the head's)")
    return Scenario(shipped["task"], int(shipped["seed"]), final, shipped["key"])


def _input_files(files: dict[str, tuple[str, bytes]], into: Path) -> dict[str, str]:
    """Write the head's systems / model access files on this node; their paths here."""
    out = {}
    for kind, (name, data) in files.items():
        path = into / "inputs" / kind / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out[kind] = str(path)
    return out


def work_root() -> Path:
    """Where this host's tries work (`PB_RAY_WORK`, or `<tmp>/pb-ray-work`)."""
    return Path(os.environ.get(WORK_ENV) or Path(tempfile.gettempdir()) / "pb-ray-work")


def new_work_folder(ident: AttemptIdentity) -> Path:
    """A claimed folder for one try; first removes the folders of tries whose process is dead."""
    from orchestrator.leftovers import claim, sweep_owned

    root = work_root()
    root.mkdir(parents=True, exist_ok=True)
    sweep_owned(root)
    work = Path(tempfile.mkdtemp(prefix=f"{ident.attempt_id}-", dir=root))
    claim(work)
    return work


def node_attempt(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The Ray task: yield where it runs, then `{"node", "result", "archive"}` of one try."""
    from orchestrator.campaign import runtime

    node = node_info()
    yield node
    ident: AttemptIdentity = payload["ident"]
    label = payload["label"]
    work = new_work_folder(ident)
    try:
        check_sources(payload)
        runs_root = work / "runs"
        backend = node_backend(label, payload["backend"], runs_root)
        if payload["backend"] == "docker":
            check_images(backend, payload["sources"])
        scenarios = runtime.ScenarioCache()
        scenarios.put(ident.task, ident.seed, node_scenario(payload["scenario"]))
        files = _input_files(payload.get("files") or {}, work)
        if payload.get("limiter"):  # this node's gateways consult the head's limiter service
            os.environ[LIMITER_URL_ENV], os.environ[LIMITER_TOKEN_ENV] = payload["limiter"]
        job = runtime.make_job(
            backend=backend, runs_root=runs_root, label=label, turn_timeout_s=payload["turn_timeout_s"],
            systems_file=files.get("systems"), model_access=files.get("model_access"), config=backend.config,
            scenarios=scenarios,
        )
        folder = ident.folder(runs_root, label)
        result = _run_cancellable(job, ident, folder)
        result = read_result(folder) or result
        yield {"node": node, "result": result, "archive": pack_folder(folder)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_cancellable(job: Any, ident: AttemptIdentity, folder: Path) -> dict[str, Any]:
    """Run the attempt in a thread; a KeyboardInterrupt here (Ray's cancel) cancels it and waits."""
    cancel = threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = job(ident, folder, cancel)
        except BaseException as exc:  # noqa: BLE001 — handed to the task's thread, raised there
            box["error"] = exc

    thread = threading.Thread(target=work, name=f"attempt-{ident.attempt_id}", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.2)
    except KeyboardInterrupt:
        cancel.set()
        thread.join()  # the attempt tears down before the task ends
        raise
    if "error" in box:
        raise box["error"]
    return dict(box["result"])
