"""Live attempts for the escape suite: real sandboxes of the docker backend, started from a real
scenario snapshot, whose agent turns run `tests/escape_probe.py` as a command system.

`EscapeLab` owns everything the suite creates (a backend with a campaign label of its own, the
sandboxes, positive-control containers and networks, a canary HTTP service on the host) and
removes it in `close()`, which also lists whatever the engine still holds under that label.
"""
from __future__ import annotations

import hashlib
import http.server
import json
import secrets
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROBE_SCRIPT = Path(__file__).resolve().with_name("escape_probe.py")
PROBE_TARGET = "/opt/escape/escape_probe.py"
PYTHON = "/opt/venv/bin/python"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


# -- the canary ---------------------------------------------------------------------------------


class Canary:
    """An HTTP service on the host, on 0.0.0.0 (every host address), answering a secret."""

    def __init__(self) -> None:
        self.secret = "canary-" + secrets.token_hex(8)
        self.hits: list[str] = []
        canary = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 — http.server's naming
                canary.hits.append(self.client_address[0])
                body = canary.secret.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def host_ipv4_addresses() -> dict[str, str]:
    """Interface -> IPv4 address of this host (loopback excluded), from `ip`."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    addrs = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[2] == "inet" and f[1] != "lo":
            addrs[f[1]] = f[3].split("/")[0]
    return addrs


# -- one live attempt ---------------------------------------------------------------------------


@dataclass
class LiveAttempt:
    """A sandbox with its ERP running and healthy, and its workspace seeded."""

    name: str
    sandbox: Any
    endpoints: Any
    control_token: str
    control: Any
    agent_token: str
    paths: Any
    turns: int = 0

    @property
    def erp_name(self) -> str:
        return self.sandbox.containers["erp"].name

    @property
    def netns(self) -> Any:
        return self.sandbox.containers["netns"]

    def agent_ip(self) -> str:
        """The agent side's address (the namespace holder every turn joins) on the attempt net."""
        net = self.sandbox.networks["attempt"].name
        self.netns.reload()
        return self.netns.attrs["NetworkSettings"]["Networks"][net]["IPAddress"]

    def erp_ipv4(self) -> dict[str, str]:
        """Network name -> IPv4 address of the ERP container, as the engine reports them."""
        self.sandbox.containers["erp"].reload()
        nets = self.sandbox.containers["erp"].attrs["NetworkSettings"]["Networks"]
        return {name: n["IPAddress"] for name, n in nets.items() if n.get("IPAddress")}

    def erp_all_addresses(self) -> list[str]:
        """Every address of the ERP container: engine-reported IPv4/IPv6 and the kernel's IPv6 list."""
        erp = self.sandbox.containers["erp"]
        erp.reload()
        addrs = set(self.erp_ipv4().values())
        for n in erp.attrs["NetworkSettings"]["Networks"].values():
            for key in ("GlobalIPv6Address", "LinkLocalIPv6Address"):
                if n.get(key):
                    addrs.add(n[key])
        rc, out = erp.exec_run(["cat", "/proc/net/if_inet6"], user="1001:1001")
        for line in out.decode().splitlines() if rc == 0 else []:
            f = line.split()
            if len(f) >= 6 and f[5] != "lo":
                raw = f[0]
                addr = ":".join(raw[i : i + 4] for i in range(0, 32, 4))
                addrs.add(addr + ("%eth0" if raw.startswith("fe80") else ""))
        return sorted(addrs)


class EscapeLab:
    """Backend, scenario, live attempts, positive controls and a canary, all torn down in `close()`."""

    def __init__(self, client: Any, images: Any, scenario: Any, root: Path):
        from orchestrator.backends.docker.sandbox import DockerBackend
        from orchestrator.config import Images, RuntimeConfig

        self.client, self.scenario, self.root = client, scenario, root
        self.campaign = f"pytest-escape-{uuid.uuid4().hex[:8]}"
        self.config = RuntimeConfig.from_env(
            runs_root=root / "runs", campaign=self.campaign, images=Images(erp=images.erp.tag, agent=images.agent.tag)
        )
        self.backend = DockerBackend(self.config, client=client)
        self.backend.ensure_prepared()
        self.agent_image = images.agent.tag
        self.attempts: list[LiveAttempt] = []
        self.extra: list[Any] = []  # test-made containers and networks (positive controls)
        self.canary: Canary | None = None

    # -- attempts --------------------------------------------------------------------------------

    def labels(self, role: str, attempt: str = "controls") -> dict[str, str]:
        from orchestrator.labels import attempt_labels

        return attempt_labels(self.campaign, f"escape-{attempt}", role)

    def open_attempt(self, name: str) -> LiveAttempt:
        """Networks, volumes, the ERP from the scenario snapshot (healthy), handbook in the workspace."""
        from orchestrator.attempt.control_client import ControlClient
        from orchestrator.attempt.credentials import issue_credentials
        from orchestrator.backends.base import AttemptContext
        from orchestrator.cells import Cell
        from orchestrator.errors import ErpUnhealthy
        from orchestrator.identity import AttemptIdentity
        from orchestrator.paths import AttemptPaths
        from orchestrator.services.erp import ERP, ErpEndpoints, ErpLaunch, erp_service

        paths = AttemptPaths.for_identity(self.config.runs_root, "escape",
                                            AttemptIdentity.of(Cell("escape-probe", self.scenario.slug), 0, len(self.attempts), 1))
        paths.prepare()
        attempt_id = f"escape-{name.lower()}-{uuid.uuid4().hex[:6]}"
        sandbox = self.backend.open_attempt(AttemptContext(attempt_id, self.campaign, paths))
        # As the runner does: every token re-keyed with a fresh secret, the agent given its own.
        credentials = issue_credentials(Path(self.scenario.db), self.scenario.meta)
        live = LiveAttempt(name, sandbox, None, secrets.token_hex(32), None, credentials.agent_token, paths)
        self.attempts.append(live)  # closed in close() even if the ERP fails to start
        launch = ErpLaunch(db=Path(self.scenario.db), world=Path(self.scenario.world), control_token=live.control_token,
                           token_secrets=credentials.token_secrets)
        live.endpoints = ErpEndpoints.of(sandbox.start_service(erp_service(launch, self.config)))
        live.control = ControlClient(live.endpoints.control_url, live.control_token, timeout_s=self.config.control_timeout_s)
        sandbox.wait_service_healthy(ERP, error=ErpUnhealthy)  # progress-based; gives the start slot back
        sandbox.seed_workspace(Path(self.scenario.handbook_dir))
        return live

    def turn(self, live: LiveAttempt, spec: dict[str, Any], *, budget_s: float = 120) -> tuple[Any, dict[str, Any] | None]:
        """One agent turn of `live` through the backend's own `run_turn`, whose command system
        runs the probe with `spec`; returns (TurnRun, the probe's report or None)."""
        from agent_sandbox.systems import SystemSpec
        from orchestrator.backends.base import Mount, TurnLaunch

        live.turns += 1
        n = live.turns
        system = SystemSpec(
            name="escape-probe",
            argv=(PYTHON, PROBE_TARGET, "--spec", f"{self.config.container_paths.turn_dir}/probe.json", "--out", "{out_dir}/probe.json"),
        )
        context = {"turn": n, "date": str(self.scenario.meta.get("start_date")), "agent_user": self.scenario.meta.get("agent_user"), "budget_s": budget_s}
        files = {
            "prompt.txt": b"Escape probe turn.\n",
            "system.json": json.dumps(system.system_json({})).encode(),
            "context.json": json.dumps(context).encode(),
            "probe.json": json.dumps(spec).encode(),
        }
        env = {"ERP_URL": live.endpoints.agent_url, "ERP_TOKEN": live.agent_token, "TURN_BUDGET_S": f"{budget_s:g}"}
        run = live.sandbox.run_turn(
            TurnLaunch(
                n=n,
                files=files,
                env=env,
                budget_s=budget_s,
                host_turn_dir=live.paths.turn_dir(n),
                log_path=live.paths.turn_log(n),
                mounts=(Mount(PROBE_SCRIPT, PROBE_TARGET),),
            )
        )
        report_path = live.paths.turn_dir(n) / "out" / "probe.json"
        report = json.loads(report_path.read_text()) if report_path.is_file() else None
        return run, report

    def turn_diagnostics(self, live: LiveAttempt) -> str:
        """The last turn's stderr and log, for assertion messages."""
        n = live.turns
        parts = []
        for p in (live.paths.turn_dir(n) / "out" / "stderr.txt", live.paths.turn_log(n)):
            if p.is_file():
                parts.append(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    # -- positive controls -----------------------------------------------------------------------

    def plain_network(self) -> tuple[Any, Any]:
        """An ordinary bridge network (not internal, the host holds its gateway address)."""
        from networks.topology import NetworkSpec

        spec = NetworkSpec("plain", True, "escape positive control", False, {}, False, ("probe",))
        block, net = self.backend.create_network(f"pb-escape-{uuid.uuid4().hex[:6]}-plain", spec, self.labels("plain-net"))
        self.extra.append(net)
        return block, net

    def control_probe(
        self,
        spec: dict[str, Any],
        *,
        network: str | None = None,
        read_only: bool = True,
        environment: dict[str, str] | None = None,
        plant: dict[str, bytes] | None = None,
        background_argv: list[str] | None = None,
        timeout_s: float = 180,
    ) -> dict[str, Any]:
        """Run the probe in a test-made container of the agent image (as the agent's user) on
        `network` (None: no network); `plant` files go under /opt/planted first. Returns the report."""
        from orchestrator.backends.docker.archives import Entry, build_tar

        script = f"{PYTHON} {PROBE_TARGET} --spec env:ESCAPE_SPEC --out -"
        if background_argv:
            script = " ".join(_shq(w) for w in background_argv) + " & " + script
        kwargs: dict[str, Any] = {"network": network} if network else {"network_mode": "none"}
        c = self.client.containers.create(
            self.agent_image,
            entrypoint=["sh", "-c", script],
            command=[],
            name=f"pb-escape-control-{uuid.uuid4().hex[:8]}",
            labels=self.labels("positive-control"),
            user="1000:1000",
            read_only=read_only,
            environment={**(environment or {}), "ESCAPE_SPEC": json.dumps(spec)},
            volumes={str(PROBE_SCRIPT): {"bind": PROBE_TARGET, "mode": "ro"}},
            tmpfs={"/tmp": "rw,size=64m,mode=1777"} if read_only else {},
            **kwargs,
        )
        self.extra.append(c)
        try:
            if plant:
                entries = [Entry("planted", None, 1000, 1000, 0o755)] + [Entry(f"planted/{k}", v, 1000, 1000, 0o644) for k, v in plant.items()]
                c.put_archive("/opt", build_tar(entries))
            c.start()
            status = c.wait(timeout=timeout_s)
            lines = c.logs(stdout=True, stderr=False).decode(errors="replace").strip().splitlines()
            if status.get("StatusCode") != 0 or not lines:
                raise AssertionError(f"exit {status.get('StatusCode')}")
            return json.loads(lines[-1])
        except Exception as exc:
            raise AssertionError(f"positive-control probe failed: {exc}\n{c.logs().decode(errors='replace')[-3000:]}") from exc
        finally:
            self._remove(c)

    def _remove(self, obj: Any) -> None:
        try:
            obj.remove(force=True) if hasattr(obj, "exec_run") else obj.remove()
        except Exception:  # noqa: BLE001 — already gone
            pass
        if obj in self.extra:
            self.extra.remove(obj)

    # -- teardown --------------------------------------------------------------------------------

    def close(self) -> list[str]:
        """Remove everything; return problems and whatever the engine still holds under our label."""
        problems: list[str] = []
        for live in self.attempts:
            if live.control is not None:
                live.control.close()
            problems += live.sandbox.close()
        for obj in [o for o in self.extra if hasattr(o, "exec_run")] + [o for o in self.extra if not hasattr(o, "exec_run")]:
            self._remove(obj)
        if self.canary is not None:
            self.canary.close()
        flt = {"label": f"pb.campaign={self.campaign}"}
        left = [f"container {c.name}" for c in self.client.containers.list(all=True, filters=flt)]
        left += [f"network {n.name}" for n in self.client.networks.list(filters=flt)]
        left += [f"volume {v.name}" for v in self.client.volumes.list(filters=flt)]
        if left:  # remove them anyway, then report
            for c in self.client.containers.list(all=True, filters=flt):
                c.remove(force=True)
            for v in self.client.volumes.list(filters=flt):
                v.remove(force=True)
            for n in self.client.networks.list(filters=flt):
                n.remove()
        return problems + [f"left behind: {x}" for x in left]


def _shq(word: str) -> str:
    import shlex

    return shlex.quote(word)


@dataclass
class ForbiddenSet:
    """Hashes of host-only files the agent must never see (scenario, truth, reference, task code)."""

    hashes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, scenario: Any, repo: Path) -> ForbiddenSet:
        out: dict[str, str] = {}
        sdir = Path(scenario.dir)
        for name in ("scenario.db", "world.json", "truth.json", "turns.yaml", "scenario.json"):
            if (sdir / name).is_file():
                out[f"scenario/{name}"] = sha256_file(sdir / name)
        for p in sorted(Path(scenario.reference_dir).glob("**/*")):
            if p.is_file():
                out[f"reference/{p.relative_to(scenario.reference_dir)}"] = sha256_file(p)
        for pkg in (repo / "tasks", repo / "erp_service", repo / "orchestrator"):
            for p in sorted(pkg.rglob("*.py")):
                data = p.read_bytes()
                if len(data) > 200:  # tiny files (empty __init__.py) match innocently
                    out[str(p.relative_to(repo))] = sha256_bytes(data)
        return cls(out)



def escape_scenario(slug: str = "payment-run", seed: int = 0) -> Any:
    """The task's scenario for the escape suite.

    Any real scenario snapshot serves the escape probes, so when the current task tree cannot
    generate (another part mid-edit in a working tree), the newest complete cached snapshot of
    the same task is used instead, with a warning; with nothing cached the error stands.
    """
    import warnings

    from orchestrator.scenarios.cache import ensure_scenario
    from orchestrator.scenarios.folder import Scenario, cache_root_default

    try:
        return ensure_scenario(slug, seed)
    except Exception as exc:  # noqa: BLE001 — GenerationError, ScenarioError, PackError alike
        cached = sorted(
            (d for d in (cache_root_default() / slug).glob(f"*-seed-{seed}") if (d / ".complete").exists() and (d / "reference").is_dir()),
            key=lambda d: (d / ".complete").stat().st_mtime,
        )
        if not cached:
            raise
        warnings.warn(f"{slug} seed {seed} does not generate ({exc.__class__.__name__}); using cached {cached[-1].name}", stacklevel=2)
        return Scenario(slug, seed, cached[-1], cached[-1].name.split("-seed-")[0])
