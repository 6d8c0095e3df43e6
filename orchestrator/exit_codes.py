"""One mapping from failure class to exit code and one-line message, for every `orchestrate` command.

Every command ends in one of a few classes; each class has one exit code whatever the command:

    0   ok                  the command did what was asked (an attempt was graded, pass or fail)
    1   agent_error         `attempt`: the agent's harness failed (crashed, timed out)
    1   check_failed        a checking command found problems (validate, handbook check/lint,
                            export --verify)
    2   bad_input           a flag, cell, condition, systems file, label or task pack is wrong;
                            refused before anything was prepared or written
    3   engine_unavailable  the container engine cannot be reached (DOCKER_HOST, the daemon)
    3   infra_error         the infrastructure failed (engine calls, image builds, attempts
                            that ended infra_error after their retries, an orchestrator bug)
    4   task_error          the task pack failed while running (a projection with an SQL error,
                            a generator that crashed): the pack must be fixed, not retried
    130 interrupted         SIGINT / SIGTERM: attempts in flight were torn down

`COMMANDS` lists, per command, the classes it can end in; docs/exit-codes.md is rendered from it
(`render_table`) and a test checks the two agree and runs each command against a dead engine.
`failure_for(exc)` turns any exception that escapes a command into its class and one line, so
no command prints a traceback for an expected failure.
"""
from __future__ import annotations

import enum
import os
from collections.abc import Iterator
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    """The process exit codes of `orchestrate`."""

    OK = 0
    NEGATIVE = 1  # agent_error (attempt) or check_failed (checking commands)
    BAD_INPUT = 2
    INFRA = 3  # engine_unavailable and infra_error
    TASK_ERROR = 4
    INTERRUPTED = 130


class Failure(str, enum.Enum):
    """The classes a command can end in (the `class` column of docs/exit-codes.md)."""

    OK = "ok"
    AGENT_ERROR = "agent_error"
    CHECK_FAILED = "check_failed"
    BAD_INPUT = "bad_input"
    ENGINE_UNAVAILABLE = "engine_unavailable"
    INFRA_ERROR = "infra_error"
    TASK_ERROR = "task_error"
    INTERRUPTED = "interrupted"

    @property
    def code(self) -> ExitCode:
        """The exit code of this class."""
        return _CODES[self]


_CODES: dict[Failure, ExitCode] = {
    Failure.OK: ExitCode.OK,
    Failure.AGENT_ERROR: ExitCode.NEGATIVE,
    Failure.CHECK_FAILED: ExitCode.NEGATIVE,
    Failure.BAD_INPUT: ExitCode.BAD_INPUT,
    Failure.ENGINE_UNAVAILABLE: ExitCode.INFRA,
    Failure.INFRA_ERROR: ExitCode.INFRA,
    Failure.TASK_ERROR: ExitCode.TASK_ERROR,
    Failure.INTERRUPTED: ExitCode.INTERRUPTED,
}

# What each class means, in one phrase (the table's last column).
MEANING: dict[Failure, str] = {
    Failure.OK: "done",
    Failure.AGENT_ERROR: "the agent's harness failed (crash, non-zero exit, budget ran out)",
    Failure.CHECK_FAILED: "the check ran and found problems (listed on stderr)",
    Failure.BAD_INPUT: "bad flag, cell, condition, systems file, label or task pack; nothing was prepared or written",
    Failure.ENGINE_UNAVAILABLE: "the container engine cannot be reached (DOCKER_HOST, daemon down)",
    Failure.INFRA_ERROR: "an engine call, image build or attempt failed on the infrastructure's side",
    Failure.TASK_ERROR: "the task pack failed at run time (projection SQL error, generator crash)",
    Failure.INTERRUPTED: "SIGINT/SIGTERM; attempts in flight were torn down",
}


@dataclass(frozen=True)
class CommandExits:
    """The classes one command can end in, and whether it needs the container engine."""

    command: str
    classes: tuple[Failure, ...]
    engine: str  # "yes" | "docker backend" | "no"
    # Arguments that make the command reach the engine (or, for engine "no", run cleanly
    # against nothing); the dead-engine test runs `orchestrate <command> <probe_args>`.
    probe_args: tuple[str, ...] = ()


_F = Failure
COMMANDS: tuple[CommandExits, ...] = (
    CommandExits("attempt", (_F.OK, _F.AGENT_ERROR, _F.BAD_INPUT, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR,
                             _F.TASK_ERROR, _F.INTERRUPTED), "docker backend",
                 ("null:payment-run", "--seed", "0", "--runs-root", "{tmp}/runs")),
    CommandExits("campaign", (_F.OK, _F.BAD_INPUT, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR, _F.TASK_ERROR,
                              _F.INTERRUPTED), "docker backend",
                 ("--cells", "null:payment-run", "--label", "dead-engine-probe", "--runs-root", "{tmp}/runs")),
    CommandExits("validate", (_F.OK, _F.CHECK_FAILED, _F.BAD_INPUT, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR,
                              _F.TASK_ERROR, _F.INTERRUPTED), "docker backend", ("--tasks", "payment-run")),
    CommandExits("images build", (_F.OK, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR, _F.INTERRUPTED), "yes", ()),
    CommandExits("images release", (_F.OK, _F.BAD_INPUT, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR, _F.INTERRUPTED),
                 "yes", ("--out", "{tmp}/release")),
    CommandExits("images prune", (_F.OK, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR, _F.INTERRUPTED), "yes",
                 ("--dry-run",)),
    CommandExits("reap", (_F.OK, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR, _F.INTERRUPTED), "yes", ("--dry-run",)),
    CommandExits("debug", (_F.OK, _F.BAD_INPUT, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR, _F.TASK_ERROR,
                           _F.INTERRUPTED), "yes",
                 ("payment-run", "--no-shell")),
    CommandExits("export", (_F.OK, _F.BAD_INPUT, _F.INTERRUPTED), "no", ("no-such-label", "--runs-root", "{tmp}")),
    CommandExits("export --verify", (_F.OK, _F.CHECK_FAILED, _F.BAD_INPUT, _F.INTERRUPTED), "no",
                 ("no-such-label", "--runs-root", "{tmp}")),
    CommandExits("regrade", (_F.OK, _F.BAD_INPUT, _F.INTERRUPTED), "no",
                 ("no-such-label", "--as", "new-label", "--runs-root", "{tmp}")),
    CommandExits("review", (_F.OK, _F.BAD_INPUT, _F.INTERRUPTED), "no", ("no-such-label", "--list", "--runs-root", "{tmp}")),
    CommandExits("report", (_F.OK, _F.BAD_INPUT, _F.INTERRUPTED), "no", ("no-such-label", "--runs-root", "{tmp}")),
    CommandExits("handbook", (_F.OK, _F.CHECK_FAILED, _F.BAD_INPUT, _F.INTERRUPTED), "no", ("check", "no-such-task")),
    CommandExits("publish", (_F.OK, _F.BAD_INPUT, _F.INTERRUPTED), "no",
                 ("no-such-label", "--out", "{tmp}/bundle", "--runs-root", "{tmp}")),
    CommandExits("human", (_F.OK, _F.AGENT_ERROR, _F.BAD_INPUT, _F.ENGINE_UNAVAILABLE, _F.INFRA_ERROR, _F.TASK_ERROR,
                           _F.INTERRUPTED), "docker backend",
                 ("payment-run", "--seed", "0", "--label", "dead-engine-probe", "--runs-root", "{tmp}/runs")),
    CommandExits("declare", (_F.OK, _F.BAD_INPUT, _F.INTERRUPTED), "no",
                 ("--cells", "null:no-such-task", "--backend", "local", "--out", "{tmp}/study.json")),
    CommandExits("scenario", (_F.OK, _F.BAD_INPUT, _F.TASK_ERROR, _F.INTERRUPTED), "no",
                 ("import", "{tmp}/no-such.jsonl", "--out", "{tmp}/scenario")),
)


def render_table() -> str:
    """The per-command Markdown table of docs/exit-codes.md."""
    rows = ["| command | exits (code `class`) | container engine |", "|---|---|---|"]
    for c in COMMANDS:
        exits = ", ".join(f"{int(f.code)} `{f.value}`" for f in c.classes)
        rows.append(f"| `{c.command}` | {exits} | {c.engine} |")
    return "\n".join(rows) + "\n"


def parse_table(markdown: str) -> dict[str, tuple[tuple[int, str], ...]]:
    """Read the per-command table back: command -> ((code, class), ...); the docs' test uses it."""
    out: dict[str, tuple[tuple[int, str], ...]] = {}
    for line in markdown.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) != 3 or not cols[0].startswith("`"):
            continue
        pairs = []
        for item in cols[1].split(","):
            code, _, name = item.strip().partition(" ")
            pairs.append((int(code), name.strip("`")))
        out[cols[0].strip("`")] = tuple(pairs)
    return out


# -- exceptions to classes ---------------------------------------------------------------------


class EngineUnavailable(RuntimeError):
    """The container engine cannot be reached; the message names DOCKER_HOST."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def docker_host() -> str:
    """Where the engine client looks (DOCKER_HOST or the default socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def is_engine_unavailable(exc: BaseException) -> bool:
    """True when the exception (or one it came from) says the engine could not be reached.

    The docker client raises `DockerException("Error while fetching server API version: ...")`
    when it cannot even ask the version; below it are requests' / urllib3's connection errors
    and the socket's FileNotFoundError / ConnectionRefusedError.
    """
    for e in _chain(exc):
        if isinstance(e, EngineUnavailable):
            return True
        mod = type(e).__module__
        name = type(e).__name__
        if mod.startswith("docker") and "fetching server API version" in str(e):
            return True
        if mod.startswith(("requests", "urllib3")) and name in ("ConnectionError", "NewConnectionError", "ProtocolError"):
            return True
    return False


def one_line(text: str, limit: int = 400) -> str:
    """The message on one line (newlines folded), cut at `limit` characters."""
    flat = " ".join(part.strip() for part in str(text).splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Ending:
    """How a command ended: its failure class and the one line to print."""

    failure: Failure
    message: str

    @property
    def code(self) -> int:
        return int(self.failure.code)


def exit_class(exc: BaseException) -> Failure | None:
    """The exit class an exception's own class declares (`exit_class`, a `Failure` value; the
    error classes of tasks, agent_sandbox and erp_service carry it as a plain string because
    they may not import the orchestrator), or None."""
    value = getattr(type(exc), "exit_class", None)
    return Failure(value) if isinstance(value, str) else None


def failure_for(exc: BaseException) -> Ending:
    """The class and one-line message for an exception that ended a command: the class its own
    type (or one it came from) declares — a task error anywhere in the chain wins over bad input,
    which wins over the rest — else engine unavailable, or infrastructure."""
    if isinstance(exc, KeyboardInterrupt):
        return Ending(Failure.INTERRUPTED, "interrupted")
    if is_engine_unavailable(exc):
        root = next((e for e in _chain(exc) if isinstance(e, (FileNotFoundError, ConnectionRefusedError))), None)
        why = f" ({root.strerror or type(root).__name__})" if isinstance(root, OSError) else ""
        if isinstance(exc, EngineUnavailable):
            return Ending(Failure.ENGINE_UNAVAILABLE, one_line(str(exc)))
        return Ending(Failure.ENGINE_UNAVAILABLE,
                       f"the container engine is unavailable at {docker_host()}{why}; start the Docker daemon "
                       "or point DOCKER_HOST at it (or use --backend local where the command has one)")
    declared = [(e, c) for e in _chain(exc) if (c := exit_class(e)) is not None]
    for wanted in (Failure.TASK_ERROR, Failure.BAD_INPUT):
        if any(c is wanted for _, c in declared):
            prefix = next((getattr(type(e), "exit_prefix", "") for e, c in declared if c is wanted), "")
            return Ending(wanted, one_line(f"{prefix}{exc}"))
    own = exit_class(exc)
    if own is not None:
        return Ending(own, one_line(f"{getattr(type(exc), 'exit_prefix', '')}{exc}"))
    if isinstance(exc, OSError):
        return Ending(Failure.INFRA_ERROR, one_line(f"{type(exc).__name__}: {exc}"))
    return Ending(Failure.INFRA_ERROR, one_line(f"internal error: {type(exc).__name__}: {exc} "
                                                 "(set PB_TRACEBACK=1 to see the traceback)"))


def check_engine(timeout_s: float = 10.0, *, has_local_backend: bool = False) -> None:
    """Raise `EngineUnavailable` unless the container engine answers a ping (the message points
    at `--backend local` for the commands that have one)."""
    import docker

    try:
        client = docker.from_env(timeout=int(max(1, timeout_s)))
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 — every way of not answering is the same to the user
        root = next((e for e in _chain(exc) if isinstance(e, OSError) and e.strerror), None)
        why = root.strerror if isinstance(root, OSError) else one_line(str(exc), 160)
        hint = " (or use --backend local)" if has_local_backend else ""
        raise EngineUnavailable(
            f"the container engine is unavailable at {docker_host()} ({why}); start the Docker daemon "
            f"or point DOCKER_HOST at it{hint}"
        ) from exc
