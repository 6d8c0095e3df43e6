"""The live progress display while a campaign runs, and the summary table at the end.

On a terminal it is a rich live panel (attempts done of total, passing, agent and infra errors,
retries, in flight, ETA, and per node what runs there when the executor places attempts on
nodes); otherwise (CI, a pipe) one plain line per finished attempt (and per placement).
"""
from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from orchestrator.campaign.scheduler import AttemptEvent


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class CampaignProgress:
    """Counts scheduler events and renders them; safe to call from worker threads."""

    def __init__(self, total: int, *, label: str, concurrency: int, console: Console | None = None) -> None:
        self.total = total
        self.label = label
        self.concurrency = concurrency
        self.console = console or Console(stderr=True)
        self.skipped = self.done = self.passed = self.agent_errors = self.infra_errors = self.task_errors = self.retries = 0
        self.in_flight = 0
        self.started_at = time.monotonic()
        self._durations: list[float] = []
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._last: list[str] = []
        self._node_of: dict[str, str] = {}  # attempt id -> the node its current try runs on

    # -- events (worker threads)
    def handle(self, event: AttemptEvent) -> None:
        """Update the counts from one scheduler event."""
        with self._lock:
            if event.kind == "skipped":
                self.skipped += 1
            elif event.kind == "started":
                self.in_flight += 1
            elif event.kind == "placed" and event.node is not None:
                self._node_of[event.ident.attempt_id] = event.node
                self._note(f"placed {event.ident.attempt_id} ({event.ident.cell.text} seed {event.ident.seed} "
                           f"rep {event.ident.rep}) on {event.node}")
            elif event.kind == "retry":
                self.in_flight -= 1
                self._node_of.pop(event.ident.attempt_id, None)
                self.retries += 1
                self._note(f"retry  {event.ident.attempt_id}: infra_error ({event.error or 'no detail'})")
            elif event.kind == "finished":
                self.in_flight -= 1
                self.done += 1
                self._durations.append(event.duration_s)
                if event.passed:
                    self.passed += 1
                if event.outcome == "agent_error":
                    self.agent_errors += 1
                if event.outcome == "infra_error":
                    self.infra_errors += 1
                if event.outcome == "task_error":
                    self.task_errors += 1
                verdict = "PASS" if event.passed else (event.outcome or "?").upper() if event.outcome != "graded" else "FAIL"
                if event.outcome == "infra_error" and "cancel" in (event.error or "").lower():
                    verdict = "INTERRUPTED"  # cut short by a stop: not a failure, resumed by the same command
                ident = event.ident
                self._node_of.pop(ident.attempt_id, None)
                on = f" on {event.node}" if event.node else ""
                self._note(f"{verdict:<11} {ident.cell.text} seed {ident.seed} rep {ident.rep} ({event.duration_s:.1f}s){on}")
        if self._live is not None:
            self._live.update(self.render())

    def _note(self, text: str) -> None:
        self._last = (self._last + [text])[-5:]
        if self._live is None:  # as plain text: an error's `[@n]` is not rich markup
            self.console.print(Text(text), highlight=False)

    # -- figures
    def eta_s(self) -> float | None:
        """Remaining attempts x (elapsed / finished this run) / concurrency-effective rate."""
        remaining = self.total - self.skipped - self.done
        if remaining <= 0:
            return 0.0
        if self.done == 0:
            return None
        elapsed = time.monotonic() - self.started_at
        return remaining * elapsed / self.done

    def render(self) -> Group:
        """The live panel."""
        finished = self.skipped + self.done
        head = Text.assemble(
            (f"campaign {self.label}  ", "bold"),
            f"{finished}/{self.total} done",
            f" ({self.skipped} already)" if self.skipped else "",
            "  passing ", (str(self.passed), "green"),
            "  agent errors ", (str(self.agent_errors), "yellow"),
            "  infra errors ", (str(self.infra_errors), "red"),
            "  task errors ", (str(self.task_errors), "magenta"),
            f"  retries {self.retries}  in flight {self.in_flight}/{self.concurrency}",
            f"  elapsed {_fmt_duration(time.monotonic() - self.started_at)}  ETA {_fmt_duration(self.eta_s())}",
        )
        width = 40
        filled = int(width * finished / self.total) if self.total else width
        bar = Text("[" + "#" * filled + "." * (width - filled) + "]")
        lines = [head, bar]
        if self._node_of:  # which node runs how many of the attempts in flight
            per_node: dict[str, int] = {}
            for node in self._node_of.values():
                per_node[node] = per_node.get(node, 0) + 1
            lines.append(Text("nodes: " + ", ".join(f"{n} {k}" for n, k in sorted(per_node.items()))))
        return Group(*lines, *(Text(line, style="dim") for line in self._last))

    # -- lifecycle
    def __enter__(self) -> CampaignProgress:
        if self.console.is_terminal:
            self._live = Live(self.render(), console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        else:
            self.console.print(Text(f"campaign {self.label}: {self.total} attempts, concurrency {self.concurrency}"),
                               highlight=False)
        return self

    def refresh(self) -> None:
        """Redraw (the ETA and elapsed time move even when no event arrives)."""
        if self._live is not None:
            self._live.update(self.render())

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.update(self.render())
            self._live.__exit__(*exc)
            self._live = None


def summary_table(summary: dict[str, Any]) -> Table:
    """The table printed at the end: one row per cell with the headline section 8 metrics."""
    table = Table(title=f"campaign {summary.get('label')} ({summary.get('isolation')} isolation)", show_lines=False)
    table.add_column("cell", justify="left", no_wrap=True)
    for col in ["scored/planned", "passed", "pass@1 [95% CI]", f"pass^{summary.get('reps')} (inst.)", "checks",
                "breaches", "probes/att", "agent/infra/task err", "attempt p50/p90 s", "turn p50/p90 s"]:
        table.add_column(col, justify="right")

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.0f}%"

    for name, c in summary.get("cells", {}).items():
        ci = c.get("pass_at_1_wilson95")
        pk = c.get("pass_k", {})
        tt = c.get("turn_time_s", {})
        at = c.get("attempt_time_s", {})
        table.add_row(
            name,
            f"{c['scored']}/{c.get('planned', c['attempts'])}",
            str(c["passed"]),
            f"{pct(c['pass_at_1'])}" + (f" [{pct(ci[0])}-{pct(ci[1])}]" if ci else "")
            + (f" ({c['excluded']} excl.)" if c.get("excluded") else ""),
            f"{pct(pk.get('rate'))} ({pk.get('instances', 0)}/{pk.get('planned', pk.get('instances', 0))})",
            pct(c.get("check_rate")),
            str(c.get("breaches", 0)),
            "-" if c.get("probe_rate") is None else f"{c['probe_rate']:.1f}",
            f"{c.get('agent_errors', 0)}/{c.get('infra_errors', 0)}/{c.get('task_errors', 0)}",
            "-" if at.get("median") is None else f"{at['median']:.1f}/{at['p90']:.1f}",
            "-" if tt.get("median") is None else f"{tt['median']:.1f}/{tt['p90']:.1f}",
        )
    m = summary.get("matrix", {})
    causes = [f"{name}: " + "; ".join(f"{i['cause']} (x{i['count']})" for i in excluded)
              for name, c in summary.get("cells", {}).items()
              if (excluded := (c.get("infra_error_causes") or {}).get("excluded"))]
    table.caption = (
        f"{m.get('present')}/{m.get('planned')} attempts recorded; infra and task errors are excluded from rates "
        f"(excl.); pass^k: unbiased estimator, (instances with every repetition scored/planned); "
        f"p90 by nearest rank" + ("".join(f"\ninfra errors, {text}" for text in causes))
    )
    return table


def comparisons_table(summary: dict[str, Any]) -> Table | None:
    """The paired comparisons of cells (same task and condition), or None when there are none."""
    items = (summary.get("comparisons") or {}).get("cells") or []
    if not items:
        return None
    table = Table(title="paired comparisons (same task, condition, seeds and repetitions)")
    for col in ["first", "second"]:
        table.add_column(col, justify="left")
    for col in ["pairs scored/planned", "excl.", "first only", "second only", "difference [95% CI]", "exact p"]:
        table.add_column(col, justify="right")
    for c in items:
        pairs, ci, diff = c.get("pairs") or {}, c.get("difference_ci95"), c.get("difference")
        table.add_row(
            str(c["first"]), str(c["second"]),
            f"{pairs.get('scored', 0)}/{pairs.get('planned', 0)}", str(pairs.get("excluded", 0)),
            str(c.get("first_only", 0)), str(c.get("second_only", 0)),
            "-" if diff is None else f"{100 * diff:+.0f} pts" + (f" [{100 * ci[0]:+.0f}, {100 * ci[1]:+.0f}]" if ci else ""),
            "-" if c.get("exact_p") is None else f"{c['exact_p']:.4f}",
        )
    table.caption = "difference = first pass rate - second over pairs both scored; Newcombe interval; exact McNemar test"
    return table
