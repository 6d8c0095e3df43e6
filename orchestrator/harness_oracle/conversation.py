"""The harness oracle's scripted conversation: a `model_gateway.fake_script` document.

For each turn of a recorded oracle run, "the model" asks the harness's shell tool to run the
oracle's requests of that turn with the `erp` command, a few per call and in the order the ERP
audited them; on the last turn it then writes each file the oracle left in its workspace; a
text-only answer ends the turn's session. The next turn's session takes the next step: the fake
provider hands out steps only to requests that carry tools (the agent's main loop, `match:
tools`), so each turn's CLI process starts where the previous one stopped.

The shell tool is each harness's own:

    anthropic (Messages; Claude Code)   Bash           {"command", "description", "timeout"}
    openai (Responses; Codex)           exec_command   {"cmd", "login": false, "yield_time_ms"}

Each `erp` call sends what the oracle sent: the path, a read's query parameters, a write's JSON
body (inline, ASCII-escaped) and its Idempotency-Key. The ERP audits the same rows, so the
attempt's canonical database hash is the oracle's. Answers go to /dev/null (the script does not
read them; an error still prints its one-line summary on stderr).
"""
from __future__ import annotations

import base64
import json
import posixpath
import shlex
from collections.abc import Collection
from pathlib import Path
from typing import Any

from orchestrator.scenarios.oracle_run import ORACLE_RUN_DIR, OracleRun, RecordedRequest, load_oracle_run

# Requests per shell call: few enough that a batch ends well inside Codex's longest wait for a
# command (30 s; beyond it exec_command returns and the command runs on in the background).
BATCH = 6
# What each scripted answer reports as usage (the fake's figures; the gateway meters them).
STEP_USAGE = {"input_tokens": 1500, "output_tokens": 80, "cache_read_tokens": 0, "cache_write_tokens": 0}
FINAL_USAGE = {"input_tokens": 1600, "output_tokens": 20}
HEREDOC_END = "PB_END_OF_FILE"  # never a line of base64 text
PROVIDERS = ("anthropic", "openai")


def erp_command(r: RecordedRequest) -> str:
    """The `erp` command line that sends exactly this request (its answer to /dev/null)."""
    method = r.method.upper()
    words = ["erp", method.lower(), shlex.quote(r.path)]
    if r.is_read:
        words += [shlex.quote(f"{k}={v}") for k, v in sorted((r.query or {}).items())]
    else:
        if r.body is None and method != "DELETE":
            # erp sends `{}` for a write without --data; the oracle's client does the same, so an
            # audited write without a body did not come from either.
            raise ValueError(f"{method} {r.path}: a write without a body cannot be sent by erp")
        if r.body is not None:
            words += ["--data", shlex.quote(json.dumps(r.body, separators=(",", ":"), ensure_ascii=True))]
        if r.idem_key:
            words += ["--key", shlex.quote(r.idem_key)]
    return " ".join(words) + " >/dev/null"


def batch_command(requests: list[RecordedRequest], first: int, total: int, turn: int) -> str:
    """One shell call: a comment, one `erp` line per request, and a line saying what was sent."""
    last = first + len(requests) - 1
    lines = [f"# turn {turn}: the oracle's requests {first}-{last} of {total}, in order"]
    lines += [erp_command(r) for r in requests]
    lines.append(f"echo 'requests {first}-{last} of {total} sent'")
    return "\n".join(lines)


def file_command(rel: str, data: bytes) -> str:
    """One shell call writing a workspace file byte for byte (relative to the workspace, the
    harness's working directory)."""
    parent = posixpath.dirname(rel)
    text = base64.encodebytes(data).decode("ascii")
    head = f"mkdir -p {shlex.quote(parent)} && " if parent else ""
    return f"{head}base64 -d > {shlex.quote(rel)} <<'{HEREDOC_END}'\n{text}{HEREDOC_END}"


def tool_call(provider: str, command: str, what: str) -> dict[str, Any]:
    """A `tool_use` block of the fake script that runs `command` in the harness's shell tool."""
    if provider == "anthropic":
        return {"type": "tool_use", "name": "Bash", "input": {"command": command, "description": what,
                                                              "timeout": 600000}}
    if provider == "openai":
        # Not a login shell: the agent's PATH (where `erp` is) stays as the harness was given it.
        return {"type": "tool_use", "name": "exec_command", "input": {"cmd": command, "login": False,
                                                                      "yield_time_ms": 30000}}
    raise ValueError(f"no harness oracle for provider {provider!r} (known: {', '.join(PROVIDERS)})")


def _step(provider: str, say: str, command: str, what: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": say}, tool_call(provider, command, what)], "usage": dict(STEP_USAGE)}


def conversation(run: OracleRun, provider: str, *, batch: int = BATCH, drop: Collection[int] = ()) -> dict[str, Any]:
    """The fake-script document of `run` for a harness speaking `provider`'s API.

    `drop`: positions in `run.requests` (from 0) left out of the script, so a test can show that
    the check a request serves fails without it."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    tool_call(provider, "true", "")  # refuse an unknown provider before building anything
    steps: list[dict[str, Any]] = []
    kept = [(i, r) for i, r in enumerate(run.requests) if i not in set(drop)]
    last_turn = run.turns[-1][0] if run.turns else None
    for n, date in run.turns:
        mine = [r for _, r in kept if r.turn == n]
        for start in range(0, len(mine), batch):
            part = mine[start:start + batch]
            first = start + 1
            steps.append(_step(provider, f"Turn {n} ({date}): sending requests {first}-{first + len(part) - 1} "
                                         f"of {len(mine)} with erp.",
                               batch_command(part, first, len(mine), n), f"erp requests {first}-{first + len(part) - 1}"))
        if n == last_turn:
            for rel, data in sorted(run.files.items()):
                steps.append(_step(provider, f"Writing {rel} in the workspace.", file_command(rel, data), f"write {rel}"))
        steps.append({"content": [{"type": "text", "text": f"Done for turn {n}: {len(mine)} request(s) sent."}],
                      "usage": dict(FINAL_USAGE)})
    return {"match": "tools", "steps": steps,
            "otherwise": {"content": [{"type": "text", "text": "Nothing more to do today."}],
                          "usage": dict(FINAL_USAGE)}}


def script_bytes(doc: dict[str, Any]) -> bytes:
    """A script document as the file the fake provider reads (JSON, which is YAML too)."""
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")


def harness_oracle_script(scenario_dir: Path, provider: str) -> bytes:
    """The harness-oracle script of the scenario in `scenario_dir`, for `provider`'s API."""
    return script_bytes(conversation(load_oracle_run(Path(scenario_dir) / ORACLE_RUN_DIR), provider))
