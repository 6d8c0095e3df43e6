"""Pack lint beyond the handbook: what task.yaml declares exists in the pack's code and output.

- `pack_problems(slug)`: every negative control task.yaml declares (clean or under a fault
  profile) has a policy in POLICIES, and so does the oracle; every projection a check names is
  defined in projections.sql; a pack that is not a variant has a generator; the pack standard
  (`standard_problems`).
- `scenario_problems(pack, scenario_dir)`: a generated scenario agrees with task.yaml: its
  turns (number, dates, senders, budgets), its identity and dates in scenario.json, and a
  truth.json that matches the `Truth` model.

`tasks.handbook.problems` (what `validate --strict` fails on) includes `pack_problems`.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import ValidationError

from tasks.context import Truth
from tasks.loader import TASKS_PACKAGE_DIR, load_module, load_policies_module
from tasks.packs import PackError, TaskPack, _rel
from tasks.registry import load_task


def pack_problems(slug: str, root: Path | None = None) -> list[str]:
    """Declared controls without a policy, named projections that do not exist, no generator."""
    try:
        pack = load_task(slug, root)
    except PackError as exc:  # an unknown projection is refused here, naming the check
        return [str(exc)]
    out: list[str] = []
    where = _rel(pack.dir / "task.yaml")
    if pack.variant_of is None and not pack.generator.exists():
        out.append(f"{_rel(pack.generator)}: file missing (a pack that is not a variant needs generate(ctx))")
    try:
        policies = load_policies_module(pack)
    except PackError as exc:
        return out + [str(exc)]
    except Exception as exc:  # an import error in the module: say so, do not crash the lint
        return out + [f"{_rel(pack.policies_module)}: cannot be imported: {type(exc).__name__}: {exc}"]
    if not policies:
        out.append(f"{_rel(pack.policies_module)}: missing (the oracle and the negative controls live there)")
        return out
    if "oracle" not in policies:
        out.append(f"{_rel(pack.policies_module)}: POLICIES has no 'oracle'")
    for name, targets in sorted(pack.all_controls().items()):
        if name not in policies:
            out.append(f"{where}: negative control {name!r} (fails {targets}) has no policy in "
                       f"{_rel(pack.policies_module)} POLICIES")
    standard = standard_problems(pack) if pack.root == TASKS_PACKAGE_DIR else []
    return out + alt_problems(pack) + standard


def standard_problems(pack: TaskPack) -> list[str]:
    """The pack standard (issue 41): every pack runs `foreign_token`; a read-only pack (one that
    runs `write_attempted`) needs nothing else; a writing pack also carries `ledger_ties` (the
    books balance and its control accounts tie) and `state_unchanged` (the master data outside
    its scope). A variant is judged on the checks it runs (its parent's included). `pack_problems`
    applies it to the benchmark's packs (the repository's tasks/ folder), not to the tiny packs
    tests build elsewhere."""
    rules = {getattr(c, "rule", None) for c in pack.checks}
    types = {getattr(c, "type", None) for c in pack.checks}
    where = _rel(pack.dir / "task.yaml")
    out = []
    if "foreign_token" not in rules:
        out.append(f"{where}: pack standard: no check runs the foreign_token audit rule")
    if "write_attempted" not in rules:
        for kind, what in (("ledger_ties", "the control accounts it touches"),
                           ("state_unchanged", "the master data outside its scope")):
            if kind not in types:
                out.append(f"{where}: pack standard: a writing pack carries a {kind} check ({what}); "
                           f"a read-only pack runs the write_attempted rule instead")
    return out


def alt_problems(pack: TaskPack) -> list[str]:
    """The pack's alt.py, when it has one, must define POLICIES with 'alt' (and only it)."""
    path = Path(pack.alt_module)
    if not path.exists():
        return []
    try:
        mod = load_module(path.parent, path.stem)
    except Exception as exc:  # an import error in the module: say so, do not crash the lint
        return [f"{_rel(path)}: cannot be imported: {type(exc).__name__}: {exc}"]
    policies = getattr(mod, "POLICIES", None)
    if not isinstance(policies, dict) or set(policies) != {"alt"}:
        return [f"{_rel(path)}: POLICIES must hold exactly 'alt' (found {sorted(policies or {})})"]
    return []


def scenario_problems(pack: TaskPack, scenario_dir: Path) -> list[str]:
    """Where a generated scenario directory disagrees with the pack's task.yaml."""
    d = Path(scenario_dir)
    out: list[str] = []
    try:
        turns = yaml.safe_load((d / "turns.yaml").read_text(encoding="utf-8")) or []
        meta = json.loads((d / "scenario.json").read_text(encoding="utf-8"))
        truth = json.loads((d / "truth.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"{d}: unreadable scenario: {exc}"]
    spec = pack.spec
    want = [(i, t.date.isoformat(), t.from_user, t.budget_s) for i, t in enumerate(spec.turns, start=1)]
    got = [(t.get("n"), str(t.get("date")), t.get("from_user"), t.get("budget_s")) for t in turns]
    if len(got) != len(want):
        out.append(f"turns.yaml has {len(got)} turn(s), task.yaml {len(want)}")
    else:
        out += [f"turns.yaml turn {w[0]}: (n, date, from_user, budget_s) {g}, task.yaml says {w}"
                for g, w in zip(got, want, strict=True) if g != w]
    for key, value in (("task", pack.slug), ("version", pack.version), ("start_date", spec.start_date.isoformat()),
                       ("grading_date", spec.grading_date.isoformat()), ("agent_user", spec.agent_user)):
        if meta.get(key) != value:
            out.append(f"scenario.json {key}: {meta.get(key)!r}, task.yaml says {value!r}")
    try:
        Truth.model_validate(truth)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        out.append(f"truth.json {'.'.join(str(p) for p in first['loc'])}: {first['msg']}")
    return out
