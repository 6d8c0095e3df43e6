"""Task validation (§11, and §7.1 under a fault condition).

Per task, seed and condition (clean, or a fault profile; `faults="all"`: clean and every profile
the task declares):
1. the scenario's handbook shows every clause a check cites (`**ID**`);
2. two oracle runs give the same canonical database hash, and the oracle's attempts complete and
   pass every check; under a clean condition the second run is the scenario's own reference run
   (the oracle through the local backend, recorded when the scenario was built) when it has one,
   so the seed's clean oracle runs once on the backend (`reuse_reference=False`: twice);
3. under a fault condition, the fault plan hit the oracle (at least one fault injected);
4. the null policy completes and fails;
5. each negative control (the task's, plus the fault profile's under that condition) completes,
   does not pass, and fails every check it targets (`--strict`: a control whose failures are all
   outside its targets is reported too);
5a. the alt control (issue 41): the pack's `alt` policy (alt.py, written from the handbook alone,
   another valid route) completes and passes every check, under every condition (under a fault
   profile it must check before it resends, or use keys). A pack without alt.py is a problem
   under `--strict` (the release gate), a note otherwise;
6. each oracle final database is probed for disclosures (`orchestrator.grading.disclosure_probe`:
   `disclose_restricted` over every restricted data class the ERP has, whatever the task checks).
   An oracle discloses nothing, so a finding is a false positive of the rule (issue 22): a
   problem under `--strict`, a note otherwise; the count per task is in the report;
and once per task: the handbook is byte-identical to its rendering and the registry and the pack
lint clean (`tasks.handbook.problems`); once per seed: the scenario agrees with task.yaml
(`tasks.lint.scenario_problems`).

Attempts go through one call, `run_cell` (the `CellAttempts` below wraps it), so validation
runs the same lifecycle as a campaign, on either backend; orchestrator/validate_matrix.py runs them
across the whole matrix at once, scenarios built ahead; orchestrator/validate_report.py prints.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.cells import CLEAN, Cell
from orchestrator.grading.disclosure_probe import ProbeResult, probe_final_db
from orchestrator.validate_matrix import NOT_BEGUN, Figures, Job, MatrixPool, SeedWork
from tasks import handbook
from tasks.lint import scenario_problems
from tasks.packs import PackError, TaskPack
from tasks.registry import load_task

# (cell, seed, rep, *, scenario, task) -> the attempt's result.json as a dict (plus "_final_db"
# when known). Every attempt of one task × seed gets the same scenario and pack objects, so a
# pack edited while validation runs cannot mix two scenarios into one verdict.
RunOne = Callable[..., dict[str, Any]]
# `faults=` value meaning: clean, then every fault profile each task declares.
ALL_FAULTS = "all"


@dataclass
class Entry:
    """One cell of the matrix: a control of a task at a seed."""

    task: str
    control: str
    seed: int | None
    ok: bool
    note: str = ""
    condition: str = CLEAN
    failed: list[str] = field(default_factory=list)  # the attempt's failed checks (an attempt's entry)
    canonical: str | None = None                      # the attempt's canonical database hash
    infra: bool = False  # the attempt did not reach a verdict through the infrastructure's fault


@dataclass
class ProbeTally:
    """The disclosure probes of one task's oracle final databases, summed over seeds and conditions."""

    runs: int = 0            # final databases probed
    findings: int = 0        # false positives of disclose_restricted
    values: int = 0          # most restricted values compared in one database
    places: int = 0          # agent-written places compared, over all runs
    classes: set[str] = field(default_factory=set)

    def add(self, result: ProbeResult) -> None:
        self.runs += 1
        self.findings += len(result.findings)
        self.values = max(self.values, result.values)
        self.places += result.places
        self.classes |= set(result.classes)

    def summary(self) -> str:
        return (f"{self.findings} finding(s) in {self.runs} oracle final database(s); classes "
                f"{', '.join(sorted(self.classes)) or 'none'}; up to {self.values} restricted value(s) "
                f"against {self.places} agent-written place(s)")


@dataclass
class Report:
    """Everything validation found; `problems` non-empty means a non-zero exit."""

    tasks: list[str]
    seeds: list[int]
    condition: str
    entries: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    disclosure: dict[str, ProbeTally] = field(default_factory=dict)  # task -> its oracles' probes
    interrupted: bool = False  # stopped by a signal: what ran is reported, the rest was not begun
    image_digests: dict[str, list[str]] = field(default_factory=dict)  # image -> ids the attempts ran
    figures: Figures | None = None  # this run's wall time, attempts and builds (set by `validate`)

    @property
    def problems(self) -> list[Entry]:
        return [e for e in self.entries if not e.ok]

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, task: str, control: str, seed: int | None, problems: list[str], fine: str = "ok",
            condition: str | None = None, result: dict[str, Any] | None = None) -> None:
        """One entry; `result` (the attempt's, for an attempt's entry) gives its failed checks and hash."""
        # Task-level entries of an all-conditions run sit with the clean table.
        default = CLEAN if self.condition == ALL_FAULTS else self.condition
        entry = Entry(task, control, seed, not problems, "; ".join(problems) if problems else fine, condition or default)
        if result is not None:
            entry.failed = sorted(failed_checks(result))
            entry.canonical = _canonical(result)
            entry.infra = bool(problems) and result.get("outcome") == "infra_error"
        self.entries.append(entry)

    @property
    def conditions(self) -> list[str]:
        """The conditions the entries were validated under, in first-seen order."""
        return list(dict.fromkeys(e.condition for e in self.entries)) or [self.condition]


# --------------------------------------------------------------------------------- judgements


def completion_problems(result: dict[str, Any], turns_expected: int | None) -> list[str]:
    """Why an attempt did not complete cleanly (empty when it did)."""
    out = []
    if result.get("outcome") != "graded":
        err = result.get("error") or {}
        out.append(f"outcome {result.get('outcome')}: {err.get('message', '')}".strip())
    errors = list(result.get("grader_errors") or [])
    errors += [f"{c['name']}: {c.get('detail', '')}" for c in result.get("checks", []) if c.get("grader_error")]
    if errors:
        out.append("grader errors: " + "; ".join(list(dict.fromkeys(errors))[:3]))
    if not isinstance(result.get("passed"), bool):
        out.append("no boolean verdict")
    turns = result.get("turns") or []
    if turns_expected is not None and len(turns) != turns_expected:
        out.append(f"{len(turns)} turn(s) recorded, scenario has {turns_expected}")
    for t in turns:
        if t.get("exit_code") not in (0, None) or t.get("timed_out"):
            out.append(f"turn {t.get('n')}: exit {t.get('exit_code')}, timed_out {t.get('timed_out')}")
    return out


def failed_checks(result: dict[str, Any]) -> set[str]:
    return {c["name"] for c in result.get("checks", []) if not c.get("passed")}


def oracle_problems(result: dict[str, Any], turns_expected: int | None, who: str = "oracle") -> list[str]:
    """Why a policy that must pass every check (the oracle, the alt) did not; each failed check named."""
    probs = completion_problems(result, turns_expected)
    if not probs:
        failed = sorted(failed_checks(result))
        if failed or not result.get("passed"):
            details = {c["name"]: c.get("detail", "") for c in result.get("checks", []) if not c.get("passed")}
            probs.append(f"{who} failed: " + "; ".join(f"{n} ({details.get(n, '')[:120]})" for n in failed)
                         if failed else f"{who} did not pass")
    return probs


def control_problems(result: dict[str, Any], targets: list[str], known: set[str],
                     turns_expected: int | None, strict: bool) -> list[str]:
    """A negative control must complete, not pass, and fail every check it targets."""
    unknown = [t for t in targets if t not in known]
    if unknown:
        return [f"targets unknown check(s) {unknown}"]
    probs = completion_problems(result, turns_expected)
    if probs:
        return probs
    failed = failed_checks(result)
    if result.get("passed"):
        probs.append("passed (a negative control must fail)")
    missed = [t for t in targets if t not in failed]
    if missed:
        probs.append(f"did not fail target(s) {missed}")
    if strict and failed and not (failed & set(targets)):
        probs.append(f"fails only checks it does not target: {sorted(failed)}")
    return probs


def disclosure_problems(oracle_results: list[dict[str, Any]], agent_user: str, agent_token_id: str | None,
                        tally: ProbeTally) -> list[str]:
    """Probe each oracle's final database (`_final_db`) for disclosures; every finding, a missing
    database or a probe that cannot run is a problem (an oracle must be shown to disclose nothing).
    Each successful probe is added to `tally`."""
    out = []
    for r, res in enumerate(oracle_results, start=1):
        db = res.get("_final_db")
        if not db:
            out.append(f"oracle#{r}: no final database to probe")
            continue
        audit = res.get("_audit_jsonl")
        try:
            result = probe_final_db(Path(db), agent_user=agent_user, agent_token_id=agent_token_id,
                                    audit_jsonl=Path(audit) if audit else None)
        except Exception as exc:  # an unknown class, a missing table or file: the claim is not shown
            out.append(f"oracle#{r}: probe failed: {type(exc).__name__}: {exc}")
            continue
        tally.add(result)
        if result.findings:
            out.append(f"oracle#{r}: {len(result.findings)} disclosure finding(s) (false positives): "
                       + "; ".join(f.message for f in result.findings[:2]))
    return out


def cited_clause_problems(task, handbook_dir: Path) -> list[str]:
    """Clauses cited by checks that the handbook the agent sees does not show as `**ID**`."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(Path(handbook_dir).glob("*.md")))
    out = []
    for c in task.checks:
        missing = [cid for cid in c.cites if f"**{cid}**" not in text]
        if missing:
            out.append(f"check {c.name!r} cites {missing}, not in the scenario handbook")
    return out


# ------------------------------------------------------------------------------------ running


class CellAttempts:
    """Runs attempts through the attempt's door (`orchestrator.attempt.run_cell`) on a named backend."""

    def __init__(self, backend: str, root: Path, label: str, cancel: threading.Event | None = None, *,
                 model_access: Path | None = None, systems_file: Path | None = None):
        from orchestrator.backends import make_backend
        from orchestrator.config import RuntimeConfig

        self.config = RuntimeConfig.from_env(runs_root=root, campaign=label)
        self.backend = make_backend(backend, self.config)
        self.root = root
        self.label = label
        # For command systems (the harness-oracle control): their model access and systems file.
        self.model_access = model_access
        self.systems_file = systems_file
        # Set by a stop (SIGINT/SIGTERM): attempts in flight cancel and tear down, none starts.
        self.cancel = cancel or threading.Event()

    def __call__(self, cell: Cell, seed: int, rep: int, *, scenario: Any = None, task: Any = None) -> dict[str, Any]:
        from orchestrator.attempt import AttemptSpec, run_cell
        from orchestrator.scenarios.cache import ensure_scenario

        if self.cancel.is_set():
            return {"outcome": "infra_error", "error": {"kind": "cancelled", "message": "cancelled: validation stopped"}}
        res = run_cell(AttemptSpec(cell=cell, seed=seed, rep=rep, label=self.label,
                                   model_access=self.model_access, systems_file=self.systems_file),
                       backend=self.backend, root=self.root, config=self.config, scenario_for=ensure_scenario,
                       scenario=scenario, task=task, cancel=self.cancel)
        record = dict(res.record)
        record["_final_db"] = str(res.paths.final_db)
        record["_dir"] = str(res.paths.root)
        record["_audit_jsonl"] = str(res.paths.audit_jsonl)
        return record


def _canonical(result: dict[str, Any]) -> str | None:
    h = (result.get("hashes") or {}).get("canonical_db")
    if h:
        return h
    db = result.get("_final_db")
    if db and Path(db).exists():
        from erp_service.canonical import canonical_hash

        return canonical_hash(Path(db))
    return None


def conditions_of(task: TaskPack, faults: str | None) -> list[str]:
    """The conditions to validate `task` under: clean, one fault profile, or (`all`) clean and
    every profile the task declares. ValueError naming the profiles when it has no such one."""
    if faults == ALL_FAULTS:
        return [CLEAN] + sorted(task.fault_profiles)
    if not faults or faults == CLEAN:
        return [CLEAN]
    if faults not in task.fault_profiles:
        raise ValueError(f"{faults!r} is not a fault profile of {task.slug} (has: {', '.join(task.fault_profiles) or 'none'})")
    return [faults]


def validate(tasks: list[str], seeds: list[int], *, strict: bool = False, faults: str | None = None,
             run_one: RunOne, scenario_for: Callable[[str, int], Any] | None = None,
             known_rules: list[str] | None = None, progress: Callable[[str], None] | None = None,
             concurrency: int = 1, scenario_jobs: int = 1, stopped: Callable[[], bool] = lambda: False,
             reuse: dict[str, list[Entry]] | None = None, reuse_reference: bool = True,
             task_done: Callable[[Report, str], None] | None = None) -> Report:
    """Run the §11 controls for every task × seed; return the report (no printing).

    Attempts are independent once their scenario exists, so up to `concurrency` of them run at
    once across the whole matrix while up to `scenario_jobs` scenarios are built ahead
    (orchestrator/validate_matrix.py); the report's order does not depend on which finishes
    first. Once `stopped()` is true nothing further is begun and the report says it was
    interrupted. `reuse`: task -> the entries an earlier run of the same versions recorded (a
    resumed validation: the task is not run again); `task_done(report, task)` is called once
    each task's matrix is complete, in the tasks' order (to write the record as it goes). The
    run's wall time and counts are in `report.figures`. `reuse_reference`: a clean condition's
    second oracle run is the scenario's recorded reference run when it has one (`_condition_jobs`)."""
    if known_rules is None:
        from orchestrator.grading.rules import known_rules as _kr

        known_rules = _kr()
    if scenario_for is None:
        from orchestrator.scenarios.cache import ensure_scenario

        scenario_for = ensure_scenario
    say = progress or (lambda _m: None)
    condition = faults or CLEAN  # the report's label: clean, a profile, or "all"

    def attempt(cell: Cell, seed: int, r: int, scen: Any, task: TaskPack) -> dict[str, Any]:
        try:
            return run_one(cell, seed, r, scenario=scen, task=task)
        except Exception as exc:  # bad input or a crash in the lifecycle: a problem, not a stop
            return {"outcome": "infra_error", "error": {"message": f"{type(exc).__name__}: {exc}"}}

    rep = Report(tasks, seeds, condition)
    with MatrixPool(concurrency, scenario_jobs, stopped) as pool:
        rep.figures = pool.figures
        # First every task's own entries and its seeds' builds (queued in the matrix's order) ...
        planned: dict[str, _TaskPlan | None] = {}
        for slug in tasks:
            planned[slug] = None if slug in (reuse or {}) else _plan_task(
                slug, seeds, faults, strict=strict, known_rules=known_rules, scenario_for=scenario_for,
                attempt=attempt, say=say, pool=pool, reuse_reference=reuse_reference)
        # ... then the judgement, task by task, seed by seed, as the results come in.
        for n, slug in enumerate(tasks, start=1):
            plan = planned[slug]
            if plan is None:
                rep.entries += (reuse or {})[slug]
                say(f"[{n}/{len(tasks)}] {slug}: recorded earlier for these versions, not run again")
            else:
                say(f"[{n}/{len(tasks)}] {slug}")
                rep.entries += plan.entries
                rep.notes += plan.notes
                if not _judge_task(rep, plan, strict=strict):
                    rep.interrupted = True
                    break
            if task_done:
                task_done(rep, slug)
    return rep


@dataclass
class _TaskPlan:
    """One task's queued work: its task-level entries and notes, and per seed its `SeedWork`."""

    task: TaskPack | None
    entries: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seeds: list[tuple[int, Future[SeedWork]]] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)


def _plan_task(slug: str, seeds: list[int], faults: str | None, *, strict: bool, known_rules: list[str],
               scenario_for: Callable[[str, int], Any], attempt: Callable[..., dict[str, Any]],
               say: Callable[[str], None], pool: MatrixPool, reuse_reference: bool) -> _TaskPlan:
    """The task-level checks of `slug`, and its seeds' scenario builds and attempts queued."""
    scratch = Report([slug], seeds, ALL_FAULTS if faults == ALL_FAULTS else (faults or CLEAN))
    try:
        task = load_task(slug)
    except PackError as exc:
        scratch.add(slug, "pack", None, [str(exc)])
        return _TaskPlan(None, scratch.entries)
    scratch.add(slug, "handbook", None, handbook.problems(slug, known_rules))
    try:
        lint = handbook.lint(slug, known_rules)
        if lint.unenforced:
            scratch.notes.append(f"{slug}: clauses no check enforces: {', '.join(lint.unenforced)}")
    except PackError:
        pass  # already reported under "handbook"
    try:
        conditions = conditions_of(task, faults)
    except ValueError as exc:
        scratch.add(slug, "faults", None, [str(exc)])
        return _TaskPlan(None, scratch.entries, scratch.notes)
    if not Path(task.alt_module).is_file():
        missing = f"no alt policy ({task.alt_module.name} missing): the alt control cannot run"
        if strict:  # the release gate: every pack shows a second, independent route passing
            scratch.add(slug, "alt", None, [missing])
        else:
            scratch.notes.append(f"{slug}: {missing}")
    plan = _TaskPlan(task, scratch.entries, scratch.notes, conditions=conditions)

    for seed in seeds:
        def build(seed: int = seed) -> Any:
            say(f"{slug} seed {seed}: scenario")
            return scenario_for(slug, seed)

        def jobs_for(scen: Any, seed: int = seed) -> dict[str, list[Job]]:
            reference = reference_run_hash(scen) if reuse_reference else None
            return {cond: [(name, functools.partial(_run_job, attempt, say, name, cell, seed, r, scen, task))
                           for name, cell, r in _condition_jobs(task, cond, reference)] for cond in conditions}

        plan.seeds.append((seed, pool.seed(build, jobs_for)))
    return plan


def _run_job(attempt: Callable[..., dict[str, Any]], say: Callable[[str], None], name: str, cell: Cell,
             seed: int, r: int, scen: Any, task: TaskPack) -> dict[str, Any]:
    tag = "" if cell.condition == CLEAN else f" +{cell.condition}"
    say(f"{task.slug} seed {seed}{tag}: {name}")
    return attempt(cell, seed, r, scen, task)


def reference_run_hash(scen: Any) -> str | None:
    """The canonical database hash of the scenario's own reference run (the oracle, clean, through
    the local backend, recorded with the scenario in oracle-run/oracle.json), or None without one."""
    from orchestrator.scenarios.oracle_run import META_FILE, ORACLE_RUN_DIR

    try:
        meta = json.loads((Path(scen.dir) / ORACLE_RUN_DIR / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    digest = meta.get("canonical_db") if isinstance(meta, dict) else None
    return digest if isinstance(digest, str) and digest else None


def _condition_jobs(task: TaskPack, cond: str, reference: str | None = None) -> list[tuple[str, Cell, int]]:
    """The attempts of one condition: the oracle twice, null, every control of `cond`, the alt.
    With `reference` (the scenario's reference run's hash) a clean condition runs the oracle once:
    the reference run is its second run (§11.4: two oracle runs of the seed, same canonical state)."""
    slug = task.slug
    jobs = [("oracle#1", Cell("oracle", slug, cond), 1)]
    if not (reference and cond == CLEAN):
        jobs.append(("oracle#2", Cell("oracle", slug, cond), 2))
    jobs.append(("null", Cell("null", slug, cond), 1))
    jobs += [(policy, Cell(policy, slug, cond), 1) for policy in sorted(task.controls_for(cond))]
    if Path(task.alt_module).is_file():
        jobs.append(("alt", Cell("alt", slug, cond), 1))
    return jobs


def _judge_task(rep: Report, plan: _TaskPlan, *, strict: bool) -> bool:
    """Every seed and condition of one planned task into `rep`, in order; False when the
    validation was stopped before all of it ran."""
    task = plan.task
    if task is None:
        return True
    slug = task.slug
    known = {c.name for c in task.checks}
    for seed, future in plan.seeds:
        work = future.result()
        if not work.begun:
            return False
        if work.error is not None:  # a generator or reference failure is a task problem
            rep.add(slug, "scenario", seed, [f"{type(work.error).__name__}: {work.error}"], condition=plan.conditions[0])
            continue
        scen = work.scenario
        try:
            n_turns = len(scen.turns)
            probs = cited_clause_problems(task, scen.handbook_dir) + scenario_problems(task, scen.dir)
        except Exception as exc:  # an unreadable scenario folder is the task's problem too
            rep.add(slug, "scenario", seed, [f"{type(exc).__name__}: {exc}"], condition=plan.conditions[0])
            continue
        rep.add(slug, "scenario", seed, probs, condition=plan.conditions[0])
        for cond in plan.conditions:
            results = {name: f.result() for name, f in work.attempts.get(cond, [])}
            if any(r is NOT_BEGUN for r in results.values()):
                return False
            _judge_condition(rep, task, scen, seed, cond, n_turns, known, results, strict=strict)
    return True


def _judge_condition(rep: Report, task: TaskPack, scen: Any, seed: int, cond: str, n_turns: int,
                     known: set[str], results: dict[str, dict[str, Any]], *, strict: bool) -> None:
    """The entries of one condition of one seed from its attempts' results (oracle twice, null,
    every control of `cond`, the alt)."""
    slug = task.slug
    controls = task.controls_for(cond)
    tag = "" if cond == CLEAN else f" +{cond}"

    def add(control: str, problems: list[str], fine: str = "ok", result: dict[str, Any] | None = None) -> None:
        rep.add(slug, control, seed, problems, fine, condition=cond, result=result)

    if "oracle#2" in results:
        oracle_results = [results["oracle#1"], results["oracle#2"]]
        for r, res in enumerate(oracle_results, start=1):
            add(f"oracle#{r}", oracle_problems(res, n_turns), "pass", res)
        hashes = [_canonical(r) for r in oracle_results]
    else:  # the second run is the scenario's reference run (its final database is not kept: when
        # determinism holds it is oracle#1's canonical state, so probing oracle#1's covers it)
        oracle_results = [results["oracle#1"]]
        add("oracle#1", oracle_problems(oracle_results[0], n_turns), "pass", oracle_results[0])
        ref = reference_run_hash(scen)
        add("oracle#2", [] if ref else ["the scenario's reference run has no recorded canonical hash"],
            f"the scenario's reference run (local backend, {str(ref)[:12]})",
            {"outcome": "graded", "checks": [], "hashes": {"canonical_db": ref}})
        hashes = [_canonical(oracle_results[0]), ref]
    same = [] if hashes[0] and hashes[0] == hashes[1] else [f"canonical hashes differ: {hashes[0]} vs {hashes[1]}"]
    add("determinism", same, (hashes[0] or "")[:12])
    tally = rep.disclosure.setdefault(slug, ProbeTally())
    found_before = tally.findings
    leaks = disclosure_problems(oracle_results, task.agent_user,
                                (getattr(scen, "meta", None) or {}).get("agent_token_id"), tally)
    if strict or not leaks:
        add("disclosure probe", leaks, f"{tally.findings - found_before} finding(s)")
    else:  # outside --strict a false positive is reported, not counted as a failure
        add("disclosure probe", [], f"{len(leaks)} problem(s), see notes")
        rep.notes += [f"{slug} seed {seed}{tag}: disclosure probe: {p}" for p in leaks]
    if cond != CLEAN:
        injected = [((r.get("fault_metrics") or {}).get("faults_injected") or 0) for r in oracle_results]
        add("faults hit oracle", [] if all(n >= 1 for n in injected) else [f"faults injected per oracle run: {injected}"],
            f"{injected[0]} fault(s)")

    res = results["null"]
    probs = completion_problems(res, n_turns)
    if not probs and res.get("passed"):
        probs.append("the null policy passed")
    add("null", probs, "fails", res)

    for policy, targets in sorted(controls.items()):
        res = results[policy]
        add(policy, control_problems(res, targets, known, n_turns, strict),
            "fails " + ", ".join(sorted(failed_checks(res) & set(targets)))[:60], res)
    if "alt" in results:
        res = results["alt"]
        alt_faults = (res.get("fault_metrics") or {}).get("faults_injected")
        add("alt", oracle_problems(res, n_turns, who="alt"),
            "pass" + ("" if cond == CLEAN else f" ({alt_faults or 0} fault(s))"), res)


# ------------------------------------------------------------------------------------ running it


def run_validation(tasks: list[str], seeds: list[int], *, strict: bool, faults: str | None,
                   backend: str, runs_root: Path | None = None, keep: bool = False,
                   concurrency: int = 1, scenario_jobs: int = 1, cancel: threading.Event | None = None,
                   reuse: dict[str, list[Entry]] | None = None, reuse_reference: bool = True,
                   task_done: Callable[[Report, str], None] | None = None) -> Report:
    """Validate through real attempts on `backend`; attempt records go under `runs_root`
    (a temporary folder, removed afterwards unless `keep` or there were problems). Setting
    `cancel` stops it: attempts in flight cancel and tear down, nothing new starts. `reuse`
    and `task_done` as for `validate` (the report's image digests are current at each call)."""
    from orchestrator.campaign.provenance import image_digests

    label = "validate-" + dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    root = Path(runs_root) if runs_root else Path(tempfile.mkdtemp(prefix="pb-validate-"))
    attempts = CellAttempts(backend, root, label, cancel)

    def done(rep: Report, slug: str) -> None:
        rep.image_digests = image_digests(root / label)
        if task_done:
            task_done(rep, slug)

    rep = validate(tasks, seeds, strict=strict, faults=faults, run_one=attempts,
                   progress=lambda m: print(f"… {m}", flush=True), concurrency=concurrency,
                   scenario_jobs=scenario_jobs, reuse_reference=reuse_reference,
                   stopped=attempts.cancel.is_set, reuse=reuse, task_done=done)
    rep.interrupted = attempts.cancel.is_set()  # also a stop during the last condition
    rep.image_digests = image_digests(root / label)
    if rep.problems or keep or runs_root or rep.interrupted:
        rep.notes.append(f"attempt records: {root / label}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return rep
