"""Handbook tooling: render `handbook/` from `clauses.yaml`, check it, lint the registry.

- render: one Markdown file per handbook file of the (merged) registry; clauses appear as
  `**ID** text`, grouped under their `section` headings in registry order.
- check: the committed `handbook/` is byte-identical to the rendered one (no file missing,
  different or left over).
- lint: errors (cited clause missing, audit rule unknown or not bound by a cited clause, clause
  binding an unknown rule, cross-reference to a missing clause, clause placed more than once,
  undefined or unused parameter, and the requirement map's errors: `tasks.requirements`) and
  report-only notes (clauses no check enforces, checks citing nothing, bound rules no check
  runs, requirement-level coverage and the requirements not observed with their reasons).

The set of known audit rules lives grader-side (`orchestrator.grading.rules`); callers pass it in
so that `tasks` never imports the orchestrator.
"""
from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tasks.packs import CLAUSE_REF_RE, PackError, _rel
from tasks.registry import ResolvedClauses, load_clauses, load_task, pack_dir
from tasks.requirements import Coverage, lint_requirements

_FORMATTER = string.Formatter()


def template_fields(text: str) -> set[str]:
    """Names of the `{param}` / `{param:fmt}` fields in `text` (`{{` is a literal brace)."""
    try:
        return {fname for _, fname, _, _ in _FORMATTER.parse(text) if fname}
    except ValueError as exc:
        raise PackError(f"bad template {text[:60]!r}: {exc}") from None


def fill(text: str, params: dict[str, object], where: str) -> str:
    """Fill `{param[:fmt]}` fields from params; PackError naming `where` if one is undefined."""
    missing = sorted(template_fields(text) - set(params))
    if missing:
        raise PackError(f"{where}: undefined parameter(s) {missing}")
    try:
        return _FORMATTER.vformat(text, (), params)
    except (ValueError, IndexError, KeyError) as exc:
        raise PackError(f"{where}: {exc}") from None


def _clauses_path(pol: ResolvedClauses, root: Path | None) -> str:
    from tasks.registry import clauses_file

    return _rel(clauses_file(pol.slug, root))


def render(slug: str, root: Path | None = None) -> dict[str, str]:
    """The rendered handbook of `slug`: {file name: Markdown text}, files in name order."""
    pol = load_clauses(slug, root)
    where = _clauses_path(pol, root)
    out: dict[str, str] = {}
    for fname in sorted(pol.files):
        hf = pol.files[fname]
        parts = [f"# {fill(hf.title, pol.params, f'{where}: files.{fname}.title')}"]
        if hf.intro:
            parts.append(fill(hf.intro.strip(), pol.params, f"{where}: files.{fname}.intro"))
        section: str | None = None
        for clause in pol.clauses:
            if clause.file != fname:
                continue
            if clause.section and clause.section != section:
                section = clause.section
                parts.append(f"## {section}")
            text = fill(clause.text.strip(), pol.params, f"{where}: clauses.{clause.id}.text")
            parts.append(f"**{clause.id}** {text}")
        out[fname] = "\n\n".join(parts) + "\n"
    return out


def write(slug: str, root: Path | None = None) -> list[Path]:
    """Render into `tasks/<slug>/handbook/`, removing rendered-looking files no longer produced."""
    task = load_task(slug, root)
    files = render(slug, root)
    hb = task.handbook_dir
    hb.mkdir(exist_ok=True)
    for stale in hb.glob("*.md"):
        if stale.name not in files:
            stale.unlink()
    written = []
    for name, text in files.items():
        p = hb / name
        p.write_bytes(text.encode("utf-8"))
        written.append(p)
    return written


def check(slug: str, root: Path | None = None) -> list[str]:
    """Problems where the committed handbook differs from the rendered one (empty: identical)."""
    task = load_task(slug, root)
    files = render(slug, root)
    hb = task.handbook_dir
    problems = []
    for name, text in files.items():
        p = hb / name
        if not p.exists():
            problems.append(f"{_rel(p)}: missing (run `orchestrate handbook render {slug}`)")
        elif p.read_bytes() != text.encode("utf-8"):
            problems.append(f"{_rel(p)}: differs from the rendered text (run `orchestrate handbook render {slug}`)")
    if hb.exists():
        for p in sorted(hb.iterdir()):
            if p.name not in files:
                problems.append(f"{_rel(p)}: not produced by clauses.yaml")
    return problems


@dataclass
class LintReport:
    """Lint results: `errors` fail validation; `notes` are report-only."""

    slug: str
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unenforced: list[str] = field(default_factory=list)
    coverage: Coverage = field(default_factory=Coverage)

    @property
    def ok(self) -> bool:
        return not self.errors


def lint(slug: str, known_rules: Iterable[str] | None = None, root: Path | None = None) -> LintReport:
    """Lint the task's checks against its (merged) clause registry."""
    task = load_task(slug, root)
    pol = load_clauses(slug, root)
    rep = LintReport(slug)
    where_t = _rel(task.dir / "task.yaml")
    where_p = _clauses_path(pol, root)
    known = set(known_rules) if known_rules is not None else None
    ids = pol.clause_ids

    for cid, places in pol.placements.items():
        if len(places) != 1:
            rep.errors.append(f"{where_p}: clause {cid} placed {len(places)} times ({', '.join(places)})")

    try:
        rendered = "\n".join(render(slug, root).values())
        for cid in sorted(ids):
            n = rendered.count(f"**{cid}**")
            if n != 1 and len(pol.placements.get(cid, [])) == 1:
                rep.errors.append(f"{where_p}: clause {cid} appears {n} times as **{cid}** in the rendered handbook")
    except PackError as exc:
        rep.errors.append(str(exc))

    used: set[str] = set()
    for fname, hf in pol.files.items():
        used |= template_fields(hf.title) | template_fields(hf.intro or "")
        if not any(c.file == fname for c in pol.clauses) and not hf.intro:
            rep.notes.append(f"{where_p}: file {fname} has no clauses and no intro")
    for clause in pol.clauses:
        fields = template_fields(clause.text)
        used |= fields
        undefined = sorted(fields - set(pol.params))
        if undefined:
            rep.errors.append(f"{where_p}: clause {clause.id} uses undefined parameter(s) {undefined}")
        for ref in sorted(set(CLAUSE_REF_RE.findall(clause.text))):
            if ref not in ids:
                rep.errors.append(f"{where_p}: clause {clause.id} refers to missing clause {ref}")
        if known is not None:
            for rule in clause.binds:
                if rule not in known:
                    rep.errors.append(f"{where_p}: clause {clause.id} binds unknown rule {rule!r}")
    unused = sorted(set(pol.params) - used)
    if unused:
        rep.errors.append(f"{where_p}: unused parameter(s) {unused}")

    cited: set[str] = set()
    run_rules: set[str] = set()
    for check in task.checks:
        cited |= set(check.cites)
        missing = [c for c in check.cites if c not in ids]
        if missing:
            rep.errors.append(f"{where_t}: check {check.name!r} cites missing clause(s) {missing}")
        if not check.cites:
            rep.notes.append(f"{where_t}: check {check.name!r} cites no clause")
        check_rule: str | None = getattr(check, "rule", None)
        if check_rule is not None:
            run_rules.add(check_rule)
            if known is not None and check_rule not in known:
                rep.errors.append(f"{where_t}: check {check.name!r} runs unknown rule {check_rule!r}")
            binders = [c for c in check.cites if (cl := pol.clause(c)) is not None and check_rule in cl.binds]
            if not binders:
                rep.errors.append(
                    f"{where_t}: check {check.name!r} runs rule {check_rule!r} that none of its cited clauses binds"
                )

    bound = {r for c in pol.clauses for r in c.binds}
    for rule in sorted(bound - run_rules):
        rep.notes.append(f"{where_p}: rule {rule!r} is bound but no check runs it")
    for clause in pol.clauses:
        if clause.id not in cited and not (set(clause.binds) & run_rules):
            rep.unenforced.append(clause.id)
    if rep.unenforced:
        rep.notes.append(f"{where_p}: clauses no check enforces: {', '.join(rep.unenforced)}")

    errors, rep.coverage = lint_requirements(task, ids, [pack_dir(s, root) for s in pol.chain], run_rules, known)
    rep.errors += errors
    rep.notes.append(f"{slug}: {rep.coverage}")
    rep.notes += [f"{slug}: not observed: {u}" for u in rep.coverage.unobserved]
    return rep


def problems(slug: str, known_rules: Iterable[str] | None = None, root: Path | None = None) -> list[str]:
    """Check + lint errors together, and the pack lint (`tasks.lint.pack_problems`: controls
    without a policy, ...): what `validate --strict` fails on."""
    from tasks.lint import pack_problems

    try:
        return check(slug, root) + lint(slug, known_rules, root).errors + pack_problems(slug, root)
    except PackError as exc:
        return [str(exc)]


def install(slug: str, scenario_dir: Path, root: Path | None = None) -> Path:
    """Copy the committed handbook into a scenario directory (for generators)."""
    import shutil

    task = load_task(slug, root)
    dest = Path(scenario_dir) / "handbook"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(task.handbook_dir, dest)
    return dest
