"""How the validation matrix is run: scenarios built ahead, attempts of the whole matrix at once.

The release gate (`make validate`) is every pack × seed × condition × control: about 1,800
attempts and 55 scenario builds. Run one seed's condition at a time, the host idles while the
slowest attempt of each condition finishes and while the next seed's scenario is built. Here:

- scenario builds run in a pool of their own (`scenario_jobs` at once), submitted up front in
  the matrix's order, so the next seeds' scenarios are built while attempts run;
- as soon as a seed's scenario exists, every attempt of it (every condition, every control) is
  queued into one attempt pool (`jobs` at once) shared by the whole matrix: the host is kept as
  busy as the caller allows, and the expensive service starts still queue on the host-wide
  admission slots (orchestrator/admission.py) like any campaign's;
- results are judged in the matrix's order (the caller waits on each future in turn), so the
  report does not depend on which attempt finishes first.

A stop (`stopped()` true) begins nothing new: a build or an attempt not yet begun returns
`NOT_BEGUN`, and the caller reports the matrix as interrupted at the first seed or condition
that holds one. Attempts in flight are the attempt function's to cancel (`CellAttempts` does).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

# What a build or an attempt returns when the validation was stopped before it began.
NOT_BEGUN: dict[str, Any] = {"outcome": "not_begun"}

# One attempt to run: (control name, a call that runs it and returns its result dict).
Job = tuple[str, Callable[[], dict[str, Any]]]


@dataclass
class SeedWork:
    """One task × seed once its scenario build has been tried: the scenario (or why not) and
    every attempt of it queued, per condition, in the order the judge reads them."""

    scenario: Any = None
    error: BaseException | None = None
    begun: bool = True
    attempts: dict[str, list[tuple[str, Future[dict[str, Any]]]]] = field(default_factory=dict)


@dataclass
class Figures:
    """What a run of the matrix cost: wall time, attempts run, scenarios built (this run only)."""

    started: float = field(default_factory=time.monotonic)
    attempts: int = 0
    scenarios: int = 0
    scenario_s: float = 0.0  # summed wall time of the scenario builds (they overlap with attempts)
    ended: float | None = None
    jobs: int = 1
    scenario_jobs: int = 1

    @property
    def wall_s(self) -> float:
        """Wall seconds from the start of the run to its end (to now while it runs)."""
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    @property
    def per_minute(self) -> float:
        """Attempts per minute of wall time."""
        return self.attempts / (self.wall_s / 60) if self.wall_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The figures as the validation record holds them."""
        return {"wall_s": round(self.wall_s, 1), "attempts": self.attempts,
                "attempts_per_min": round(self.per_minute, 2), "scenario_builds": self.scenarios,
                "scenario_build_s": round(self.scenario_s, 1), "jobs": self.jobs, "scenario_jobs": self.scenario_jobs}

    def line(self) -> str:
        """One line for the end of the command's output."""
        return (f"validation wall time {_clock(self.wall_s)}; {self.attempts} attempt(s), "
                f"{self.per_minute:.1f} per minute; {self.scenarios} scenario build(s) "
                f"({self.scenario_s:.0f} s summed, alongside); {self.jobs} attempt(s) and "
                f"{self.scenario_jobs} build(s) at once")


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


class MatrixPool:
    """The two pools of one validation run (a context manager: leaving it stops what is queued)."""

    def __init__(self, jobs: int, scenario_jobs: int, stopped: Callable[[], bool]) -> None:
        self.figures = Figures(jobs=max(1, jobs), scenario_jobs=max(1, scenario_jobs))
        self._stopped = stopped
        self._abandoned = threading.Event()  # the judge left early (a stop or its own error)
        self._lock = threading.Lock()
        self._attempts = ThreadPoolExecutor(self.figures.jobs, thread_name_prefix="validate-attempt")
        self._builds = ThreadPoolExecutor(self.figures.scenario_jobs, thread_name_prefix="validate-scenario")

    def _halted(self) -> bool:
        return self._abandoned.is_set() or self._stopped()

    def seed(self, build: Callable[[], Any], jobs_for: Callable[[Any], dict[str, list[Job]]]) -> Future[SeedWork]:
        """Queue the build of one seed's scenario; once built, queue every attempt `jobs_for`
        gives for it (condition -> jobs). The future holds the `SeedWork`."""
        return self._builds.submit(self._build, build, jobs_for)

    def _build(self, build: Callable[[], Any], jobs_for: Callable[[Any], dict[str, list[Job]]]) -> SeedWork:
        if self._halted():
            return SeedWork(begun=False)
        t0 = time.monotonic()
        try:
            scen = build()
        except Exception as exc:  # a generator or reference failure: the judge reports it
            return SeedWork(error=exc)
        finally:
            with self._lock:
                self.figures.scenarios += 1
                self.figures.scenario_s += time.monotonic() - t0
        work = SeedWork(scenario=scen)
        for cond, jobs in jobs_for(scen).items():
            work.attempts[cond] = [(name, self._attempts.submit(self._attempt, fn)) for name, fn in jobs]
        return work

    def _attempt(self, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if self._halted():
            return NOT_BEGUN
        with self._lock:
            self.figures.attempts += 1
        return fn()

    def __enter__(self) -> MatrixPool:
        return self

    def __exit__(self, *exc: object) -> None:
        # Whatever is still queued is not begun; what runs finishes (or is cancelled by its own
        # attempt function) before the pools are gone, so no attempt outlives the validation.
        self._abandoned.set()
        self._builds.shutdown(wait=True, cancel_futures=True)
        self._attempts.shutdown(wait=True, cancel_futures=True)
        self.figures.ended = time.monotonic()
