"""Tie a host process's life to the orchestrator's: when the orchestrator dies, so does it.

The local backend runs the ERP (and the agent's turns) as host processes in their own session,
so a SIGKILLed orchestrator would leave them running. `tied_argv` runs a command through a tiny
exec wrapper that asks the kernel (Linux `prctl(PR_SET_PDEATHSIG)`) to send a signal to it when
its parent dies, then execs the command in place (the setting survives exec; the pid, and so
the caller's process handle, stay the same). If the parent is already gone by the time the
wrapper runs, the command is not started at all (exit 125).

Linux delivers the signal when the *thread* that forked the child ends, not the process: start
tied processes from a thread that outlives them (an attempt's own thread does: it tears its
processes down before it returns).
"""
from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1

# Runs as `python -c WRAPPER <parent pid> <signal> argv...`; no imports of this project, so the
# wrapper works with any Python and any working directory or environment.
WRAPPER = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"if libc.prctl({PR_SET_PDEATHSIG}, int(sys.argv[2]), 0, 0, 0) != 0:\n"
    "    sys.stderr.write('prctl(PR_SET_PDEATHSIG) failed\\n'); os._exit(125)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.stderr.write('parent died before the process started\\n'); os._exit(125)\n"
    "os.execvp(sys.argv[3], sys.argv[3:])\n"
)


def supported() -> bool:
    """True where the kernel offers PR_SET_PDEATHSIG (Linux)."""
    return sys.platform.startswith("linux")


def tied_argv(argv: list[str], *, python: str | None = None, sig: int = signal.SIGKILL) -> list[str]:
    """`argv` wrapped so that the process gets `sig` when this process (its parent) dies.

    SIGKILL by default: after the orchestrator is gone nobody reads the process's output or
    its database, so there is nothing to shut down gracefully for. Elsewhere than Linux the
    command is returned unchanged.
    """
    if not supported():
        return list(argv)
    return [python or sys.executable, "-c", WRAPPER, str(os.getpid()), str(int(sig)), *argv]
