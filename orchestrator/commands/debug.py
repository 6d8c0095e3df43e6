"""`orchestrate debug TASK --seed N`: an ERP, its web UI and an agent shell for one scenario (compose/).

    orchestrate debug payment-run --seed 0            # prepare, start the ERP and the UI, open the shell
    orchestrate debug payment-run --seed 0 --no-shell # start the ERP and the UI only; print how to attach
    orchestrate debug payment-run --seed 0 --down     # remove containers, networks, folders

Uses docker-compose (v1) with compose/docker-compose.yml and its `debug` profile. The scenario's
database and world go into runs/debug/<task>-seed-<n>/erp/ (mounted only into the ERP), the
handbook into .../workspace/ (the agent's /workspace). The control API is published on
127.0.0.1:<port> only; the control token is in .../erp/control.token. The web UI (erp_web, the
same pages as human mode, without turns) is published on 127.0.0.1:<web-port> only; the printed
sign-in link signs in as the task's agent user, and its sign-in page takes any user's token.
TASK may also be given as a cell (`null:payment-run`): only the task part is used. Not for
scored runs.

Exit status (docs/exit-codes.md): 0 done, 2 unknown task, 3 engine unavailable, docker-compose
missing or failing, or the ERP not healthy.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from orchestrator.attempt.credentials import issue_credentials, rekey_database
from orchestrator.config import REPO_ROOT

COMPOSE_FILE = REPO_ROOT / "compose" / "docker-compose.yml"


class ComposeError(RuntimeError):
    """docker-compose is missing or one of its commands failed (an infra_error)."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `debug` subcommand."""
    p = sub.add_parser("debug", help="an ERP and an agent shell for one scenario (docker-compose)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", help="task slug (or a cell SYSTEM:TASK)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=18081, help="host loopback port of the control API (default 18081)")
    p.add_argument("--web-port", type=int, default=18090, help="host loopback port of the web UI (default 18090)")
    p.add_argument("--subnet", default="10.232.0.0/27",
                   help="a /27 for the three debug networks (default 10.232.0.0/27, outside the attempts' range)")
    p.add_argument("--runs-root", type=Path, help="where debug/ lives (default: runs/ of the repo)")
    p.add_argument("--down", action="store_true", help="remove the debug stack and its folder")
    p.add_argument("--no-shell", action="store_true", help="do not open the agent shell")
    p.set_defaults(func=run)


def _compose(project: str, env_file: Path, *args: str, check: bool = True, interactive: bool = False) -> int:
    argv = ["docker-compose", "-f", str(COMPOSE_FILE), "-p", project, "--env-file", str(env_file), "--profile", "debug", *args]
    if interactive:
        return subprocess.call(argv)
    proc = subprocess.run(argv, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ComposeError(f"docker-compose {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.returncode


def _wait_http(url: str, timeout_s: float, headers: dict[str, str] | None = None) -> Any:
    """GET `url` until it answers 200 (the answer), or None after `timeout_s`."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            r = httpx.get(url, headers=headers or {}, timeout=2, trust_env=False)
            if r.status_code == 200:
                return r
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            return None
        time.sleep(0.3)


def _subnets(text: str) -> tuple[Any, Any, Any]:
    """attempt (/28), control and web (/29 each) out of the given /27 (or larger)."""
    import ipaddress

    net = ipaddress.IPv4Network(text)
    if net.prefixlen > 27:
        raise ValueError(f"--subnet {text}: a /27 or larger is needed for the three debug networks")
    attempt, rest = list(net.subnets(new_prefix=28))[:2]
    control, web = rest.subnets(new_prefix=29)
    return attempt, control, web


def run(args: argparse.Namespace) -> int:
    """Bring the debug stack of one scenario up (or `--down`); see the module docstring."""
    task = args.task.rsplit(":", 1)[-1].split("+", 1)[0]
    name = f"{task}-seed-{args.seed}"
    runs_root = args.runs_root.resolve() if args.runs_root else REPO_ROOT / "runs"
    folder = runs_root / "debug" / name
    # Another runs root is another stack (tests): its own compose project.
    suffix = "" if args.runs_root is None else "-" + hashlib.sha256(str(folder).encode()).hexdigest()[:6]
    project = f"pbdebug-{name}{suffix}".replace("_", "-")
    env_file = folder / "compose.env"

    if args.down:
        if env_file.exists():
            _compose(project, env_file, "down", "--volumes", "--remove-orphans", check=False)
        shutil.rmtree(folder, ignore_errors=True)
        print(f"removed debug stack {project} and {folder}")
        return 0
    from orchestrator.exit_codes import ExitCode, check_engine
    from orchestrator.images import ensure_images
    from orchestrator.scenarios.cache import ensure_scenario
    from tasks.registry import load_task

    load_task(task)  # an unknown task: PackError, bad_input (orchestrator.cli)
    try:
        attempt_net, control_net, web_net = _subnets(args.subnet)
    except ValueError as exc:
        print(f"orchestrate debug: bad_input: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if shutil.which("docker-compose") is None:
        print("orchestrate debug: infra_error: docker-compose (v1) is not installed", file=sys.stderr)
        return ExitCode.INFRA
    check_engine()  # before the scenario is built: a dead engine fails in a second, not a minute
    scenario = ensure_scenario(task, args.seed)
    images = ensure_images(report=lambda msg: print(msg, file=sys.stderr))
    erp_ip, control_ip = str(attempt_net.network_address + 2), str(control_net.network_address + 2)
    web_ip = str(web_net.network_address + 2)

    if folder.exists():
        _compose(project, env_file, "down", "--remove-orphans", check=False) if env_file.exists() else None
        shutil.rmtree(folder)
    (folder / "erp").mkdir(parents=True)
    shutil.copyfile(scenario.db, folder / "erp" / "scenario.db")
    credentials = issue_credentials(Path(scenario.db), scenario.meta)  # as every attempt: fresh secrets
    rekey_database(folder / "erp" / "scenario.db", credentials)
    shutil.copyfile(scenario.world, folder / "erp" / "world.json")
    token = secrets.token_hex(32)
    (folder / "erp" / "control.token").write_text(token)
    shutil.copytree(scenario.handbook_dir, folder / "workspace" / "handbook")
    login_key = secrets.token_urlsafe(24)
    (folder / "web").mkdir()
    (folder / "web" / "user.token").write_text(credentials.agent_token)
    (folder / "web" / "login.key").write_text(login_key)
    # The containers run as 1001 (ERP, web UI) and 1000 (agent); as root we hand the folders over.
    owned = ((folder / "erp", 1001), (folder / "web", 1001), (folder / "workspace", 1000))
    if os.geteuid() == 0:
        for root, owner in owned:
            for p in [root, *root.rglob("*")]:
                os.chown(p, owner, owner)
    else:
        for p in [q for root, _ in owned for q in (root, *root.rglob("*"))]:
            p.chmod(0o777 if p.is_dir() else 0o666)
    env_file.write_text(
        "\n".join([
            f"PB_ERP_IMAGE={images.erp.tag}",
            f"PB_AGENT_IMAGE={images.agent.tag}",
            f"PB_ATTEMPT_SUBNET={attempt_net}",
            f"PB_CONTROL_SUBNET={control_net}",
            f"PB_ERP_AGENT_IP={erp_ip}",
            f"PB_ERP_CONTROL_IP={control_ip}",
            f"PB_CONTROL_PORT={args.port}",
            f"PB_WEB_SUBNET={web_net}",
            f"PB_WEB_IP={web_ip}",
            f"PB_WEB_PORT={args.web_port}",
            f"PB_DEBUG_DIR={folder}",
            f"PB_AGENT_TOKEN={credentials.agent_token}",
        ]) + "\n"
    )
    _compose(project, env_file, "up", "-d", "erp", "web")
    url, web_url = f"http://127.0.0.1:{args.port}", f"http://127.0.0.1:{args.web_port}"
    r = _wait_http(f"{url}/control/health", 120, {"Authorization": f"Bearer {token}"})
    if r is None:
        _compose(project, env_file, "logs", "erp", check=False, interactive=True)
        print("orchestrate debug: infra_error: the ERP did not become healthy", file=sys.stderr)
        return ExitCode.INFRA
    if _wait_http(f"{web_url}/healthz", 120) is None:
        _compose(project, env_file, "logs", "web", check=False, interactive=True)
        print("orchestrate debug: infra_error: the web UI did not answer", file=sys.stderr)
        return ExitCode.INFRA
    shell = f"docker-compose -f {COMPOSE_FILE} -p {project} --env-file {env_file} --profile debug run --rm agent"
    print(f"ERP up: business date {r.json().get('business_date')}")
    print(f"control API: {url}  (token: {folder / 'erp' / 'control.token'})")
    print(f"  e.g. curl -H \"Authorization: Bearer $(cat {folder / 'erp' / 'control.token'})\" {url}/control/health")
    print(f"web UI:      {web_url}/login?key={login_key}  (signed in as {scenario.meta.get('agent_user')})")
    print(f"agent shell: {shell}")
    where = f" --runs-root {runs_root}" if args.runs_root else ""
    print(f"tear down:   orchestrate debug {task} --seed {args.seed}{where} --down")
    if args.no_shell or not sys.stdin.isatty():
        return 0
    return _compose(project, env_file, "run", "--rm", "agent", interactive=True)
