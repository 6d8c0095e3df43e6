"""The integrity suite (issue 12): what an agent does from inside its container never turns its
attempt into an `infra_error`.

Whole attempts through `run_attempt` on the docker backend, on the real `payment-run`
scenario, graded by the real grader. The agent is a command system (`PROBE` below, mounted
read-only with the task's own policies module): on every turn it does the oracle's work, and on
the turn its case names it also does one hostile thing — a 256 MiB request body, JSON nested
1,000 deep, exit 125 after writing out/traceback.txt, more output than the turn volume holds,
a workspace filled to the last byte, a child process that eats memory until the kernel kills it,
an ERP that dies after the agent's requests. Each case runs beside the control (the oracle's
work alone), and the test asserts the outcome and the verdict: graded and passed where the work
was done and the hostile thing met an ordinary error, `agent_error` with its cause where the
agent's own act ended the attempt — never `infra_error`. The control for the ERP's death is the
engine killing it from outside (`docker kill`): that stays an infrastructure error.
"""
from __future__ import annotations

import json
import shutil
import textwrap
import threading
import time
import uuid
from typing import Any

import pytest
from repo_paths import REPO_ROOT

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]

PYTHON = "/opt/venv/bin/python"
PROBE_TARGET = "/opt/integrity/probe.py"
POLICIES_TARGET = "/opt/integrity/policies.py"
REPO = REPO_ROOT
MIB = 1024 * 1024

PROBE = textwrap.dedent('''
    """Integrity probe: the oracle's work plus one hostile act (see tests/test_integrity_attempt.py)."""
    import errno, http.client, importlib.util, json, os, subprocess, sys, time, urllib.parse
    from pathlib import Path

    case, out_dir = sys.argv[1], Path(sys.argv[2])
    context = json.loads(Path("/turn/context.json").read_text())
    turn = context["turn"]
    workspace = Path(os.environ["WORKSPACE"])
    url = urllib.parse.urlparse(os.environ["ERP_URL"])
    token = os.environ["ERP_TOKEN"]
    report = {"case": case, "turn": turn}

    def save():
        (out_dir / "integrity.json").write_text(json.dumps(report))

    def oracle():
        spec = importlib.util.spec_from_file_location("task_policies", "/opt/integrity/policies.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["task_policies"] = mod   # its dataclasses look their module up there
        spec.loader.exec_module(mod)
        from agent_sandbox.client import ErpClient
        client = ErpClient(os.environ["ERP_URL"], token)
        try:
            mod.POLICIES["oracle"](turn, client, workspace, dict(context))
        finally:
            client.close()

    def post(path, chunks, length=None):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        if length is not None:
            headers["Content-Length"] = str(length)
        try:
            conn.request("POST", path, body=chunks, headers=headers, encode_chunked=length is None)
            r = conn.getresponse()
            return {"status": r.status, "code": json.loads(r.read() or b"{}").get("code")}
        except OSError as exc:
            return {"error": repr(exc)}
        finally:
            conn.close()

    def fill(path, limit):
        written, err = 0, None
        block = b"\\0" * MIB
        with open(path, "wb", buffering=0) as fh:
            try:
                while written < limit:
                    written += fh.write(block)
            except OSError as exc:
                err = errno.errorcode.get(exc.errno, str(exc.errno))
        return written, err

    MIB = 1024 * 1024
    oracle()
    if case == "big_body" and turn == 1:
        report["answer"] = post("/outbox", (b"x" * MIB for _ in range(256)))
    elif case == "deep_json" and turn == 1:
        report["answer"] = post("/outbox", [b"[" * 1000 + b"]" * 1000])
    elif case == "exit125" and turn == 2:
        (out_dir / "traceback.txt").write_text("turn setup error: the agent says so\\n")
        save()
        sys.exit(125)
    elif case == "big_out" and turn == 1:
        save()
        written, err = fill(out_dir / "flood.bin", 700 * MIB)
        with open(out_dir / "flood.bin", "r+b") as fh:   # room for the report
            fh.truncate(max(0, written - MIB))
        report.update(written=written, errno=err)
    elif case == "fill_workspace" and turn == 1:
        written, err = fill(workspace / "flood.bin", 3 * 1024 * MIB)
        report.update(written=written, errno=err)
    elif case == "oom_child" and turn == 1:
        child = subprocess.run([sys.executable, "-c",
                                "b = []\\nwhile True: b.append(bytearray(64 * 1024 * 1024))"])
        report["child_returncode"] = child.returncode
    elif case == "erp_crash" and turn == 1:
        def answers(timeout):
            try:
                c = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
                c.request("GET", "/openapi.json")
                c.getresponse().read()
                c.close()
                return True
            except OSError:
                return False
        report["erp_up"] = answers(60)   # the first answer builds the document: slow, not gone
        (workspace / ".crash-now").write_text("go")
        deadline, misses = time.time() + 90, 0
        while time.time() < deadline and misses < 2:   # until the ERP stops answering
            misses = 0 if answers(5) else misses + 1
            time.sleep(0.5)
        report["erp_gone"] = misses >= 2
    save()
''')

CASES = ("control", "big_body", "deep_json", "exit125", "big_out", "fill_workspace", "oom_child", "erp_crash")


@pytest.fixture(scope="module")
def lab(docker_client, images, tmp_path_factory):
    """A docker backend under a campaign label of this module, the payment-run task and
    scenario, and a systems file with one command system per case."""
    from escape_support import escape_scenario

    from orchestrator.attempt.inputs import load_task_pack
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import Images, RuntimeConfig

    root = tmp_path_factory.mktemp("integrity")
    campaign = f"pytest-integrity-{uuid.uuid4().hex[:8]}"
    cfg = RuntimeConfig.from_env(runs_root=root / "runs", campaign=campaign,
                                 images=Images(erp=images.erp.tag, agent=images.agent.tag))
    probe = root / "probe.py"
    probe.write_text(PROBE)
    policies = REPO / "tasks" / "payment_run" / "policies.py"
    systems = root / "systems.yaml"
    systems.write_text("systems:\n" + "".join(
        f"  integrity-{case.replace('_', '-')}:\n"
        f"    argv: [{PYTHON}, {PROBE_TARGET}, {case}, '{{out_dir}}']\n"
        f"    mounts: ['{probe}:{PROBE_TARGET}', '{policies}:{POLICIES_TARGET}']\n" for case in CASES))
    lab = {"config": cfg, "backend": DockerBackend(cfg, client=docker_client), "systems": systems,
           "task": load_task_pack("payment-run"), "scenario": escape_scenario("payment-run", 0),
           "client": docker_client, "results": {}}
    yield lab
    flt = {"label": f"pb.campaign={campaign}"}
    left = [f"container {c.name}" for c in docker_client.containers.list(all=True, filters=flt)]
    left += [f"volume {v.name}" for v in docker_client.volumes.list(filters=flt)]
    left += [f"network {n.name}" for n in docker_client.networks.list(filters=flt)]
    for c in docker_client.containers.list(all=True, filters=flt):
        c.remove(force=True)
    for v in docker_client.volumes.list(filters=flt):
        v.remove(force=True)
    for n in docker_client.networks.list(filters=flt):
        n.remove()
    assert not left, f"left behind: {left}"


def attempt(lab: dict[str, Any], case: str, rep: int = 1) -> dict[str, Any]:
    """Run (once per case and rep) a whole attempt of the case's system; its result record."""
    key = (case, rep)
    if key not in lab["results"]:
        from orchestrator.attempt import AttemptSpec, run_attempt
        from orchestrator.cells import parse_cell

        spec = AttemptSpec(parse_cell(f"integrity-{case.replace('_', '-')}:payment-run"), 0, rep=rep,
                           label="integrity", timeout_override_s=240, systems_file=lab["systems"])
        result = run_attempt(spec, backend=lab["backend"], task=lab["task"], scenario=lab["scenario"],
                             config=lab["config"])
        lab["results"][key] = {"record": result.record, "paths": result.paths}
    return lab["results"][key]


def probe_report(run: dict[str, Any], turn: int) -> dict[str, Any]:
    return json.loads((run["paths"].turn_dir(turn) / "out" / "integrity.json").read_text())


def assert_graded_like_control(lab, case: str) -> dict[str, Any]:
    control = attempt(lab, "control")["record"]
    rec = attempt(lab, case)["record"]
    assert control["outcome"] == "graded" and control["passed"], control.get("error") or control.get("checks")
    assert rec["outcome"] == "graded", (rec["outcome"], rec.get("error"), rec.get("turns"))
    assert rec["passed"] == control["passed"] and rec["breach"] == control["breach"], rec.get("checks")
    return rec


def test_the_control_does_the_oracles_work_and_passes(lab):
    rec = attempt(lab, "control")["record"]
    assert rec["outcome"] == "graded" and rec["passed"] and not rec["breach"], rec.get("error") or rec.get("checks")
    assert [t["exit_code"] for t in rec["turns"]] == [0, 0]


def test_a_256_mib_body_is_a_413_and_the_attempt_is_graded(lab):
    rec = assert_graded_like_control(lab, "big_body")
    answer = probe_report(attempt(lab, "big_body"), 1)["answer"]
    assert answer == {"status": 413, "code": "payload_too_large"}, answer
    assert rec["turns"][0]["exit_code"] == 0


def test_json_1000_deep_is_a_422_and_the_attempt_is_graded(lab):
    assert_graded_like_control(lab, "deep_json")
    assert probe_report(attempt(lab, "deep_json"), 1)["answer"] == {"status": 422, "code": "invalid"}


def test_exit_125_with_a_traceback_is_the_agents_error_not_the_runtimes(lab):
    rec = attempt(lab, "exit125")["record"]
    assert rec["outcome"] == "agent_error", (rec["outcome"], rec.get("error"))
    assert [t["exit_code"] for t in rec["turns"]] == [0, 125]
    assert "125" in json.dumps(rec.get("agent_errors") or rec.get("error") or rec["turns"][1])
    # The work of both turns is still graded (what the agent left), like the control's.
    assert rec["checks"] and [c["passed"] for c in rec["checks"]] == \
        [c["passed"] for c in attempt(lab, "control")["record"]["checks"]]


def test_output_past_the_turn_volume_is_enospc_and_the_attempt_is_graded(lab):
    assert_graded_like_control(lab, "big_out")
    report = probe_report(attempt(lab, "big_out"), 1)
    quota = lab["config"].turn_volume_bytes
    assert report["errno"] == "ENOSPC" and report["written"] <= quota, report
    flood = attempt(lab, "big_out")["paths"].turn_dir(1) / "out" / "flood.bin"
    assert flood.stat().st_size <= quota


def test_a_full_workspace_is_enospc_and_the_host_disk_moves_by_at_most_the_quota(lab):
    cfg = lab["config"]
    free_before = shutil.disk_usage(cfg.runs_root.parent).free
    lowest = [free_before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            lowest.append(shutil.disk_usage(cfg.runs_root.parent).free)
            time.sleep(0.2)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        assert_graded_like_control(lab, "fill_workspace")
    finally:
        stop.set()
        t.join(5)
    report = probe_report(attempt(lab, "fill_workspace"), 1)
    assert report["errno"] == "ENOSPC", report
    assert report["written"] <= cfg.workspace_volume_bytes
    # The host's free disk moved by at most the quota (plus the attempt's own small records).
    assert free_before - min(lowest) <= cfg.workspace_volume_bytes + 256 * MIB, (free_before, min(lowest))


def test_a_child_killed_for_memory_in_a_normal_turn_is_recorded_and_the_attempt_graded(lab):
    rec = assert_graded_like_control(lab, "oom_child")
    assert probe_report(attempt(lab, "oom_child"), 1)["child_returncode"] == -9
    first = rec["turns"][0]
    assert first["exit_code"] == 0 and first["oom_killed"] is True, first
    assert any("killed for memory" in note for note in first["notes"]), first["notes"]


def _crash_erp_when_asked(lab, how: str, done: threading.Event, seen: list[str]) -> None:
    """Wait until the probe asks (a file in its workspace), then end the ERP: `crash` from inside
    (its process killed as a crash would end it), `kill` from outside (the engine's API)."""
    client, campaign = lab["client"], lab["config"].campaign
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not done.is_set():
        for agent in client.containers.list(filters={"label": [f"pb.campaign={campaign}", "pb.role=agent"]}):
            code, _ = agent.exec_run(["test", "-f", "/workspace/.crash-now"])
            if code != 0:
                continue
            prefix = agent.labels["pb.attempt"]
            for erp in client.containers.list(filters={"label": [f"pb.attempt={prefix}", "pb.role=erp"]}):
                if how == "kill":
                    erp.kill()
                else:
                    # As the ERP's own user (the container has no capabilities to kill another's).
                    code, out = erp.exec_run([PYTHON, "-c", "import os\nfor p in os.listdir('/proc'):\n"
                                              " if p.isdigit() and int(p) != os.getpid() and "
                                              "b'erp_service' in open(f'/proc/{p}/cmdline','rb').read():\n"
                                              "  os.kill(int(p), 9)"], user=lab["config"].erp_user)
                    seen.append(f"exec exit {code}: {out.decode(errors='replace')[-300:]}")
                seen.append(erp.name)
            return
        time.sleep(0.3)


@pytest.mark.parametrize("how, expected", [("crash", "agent_error"), ("kill", "infra_error")])
def test_an_erp_that_dies_after_the_agents_requests_is_the_agents_unless_the_engine_killed_it(lab, how, expected):
    done, seen = threading.Event(), list[str]()
    t = threading.Thread(target=_crash_erp_when_asked, args=(lab, how, done, seen), daemon=True)
    t.start()
    try:
        run = attempt(lab, "erp_crash", rep=1 if how == "crash" else 2)
    finally:
        done.set()
        t.join(10)
    rec = run["record"]
    assert seen, "the test never saw the probe's request to end the ERP"
    assert not [x for x in seen if x.startswith("exec exit") and "Traceback" in x], seen
    assert probe_report(run, 1)["erp_gone"] is True   # the agent saw its ERP die
    assert rec["outcome"] == expected, (rec["outcome"], rec.get("error"))
    text = json.dumps(rec.get("error") or {})
    notes = rec["turns"][0]["notes"]
    if how == "crash":
        assert "after the agent" in text, text
        assert any("died during turn 1, after the agent's requests" in n for n in notes), notes
    else:
        assert "killed" in text, text
        assert any("kill signal=9 from outside" in n for n in notes), notes
