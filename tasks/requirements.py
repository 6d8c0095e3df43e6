"""The requirement-level map of a pack's clause registry (`requirements.yaml`, grader-side).

A clause often states several requirements ("hold it for price AND leave a note naming the line").
Citing a clause from a check says nothing about which of them the check reads, so beside the
clause registry each pack keeps a map, never rendered into the handbook:

    PUR-3.2:                      # a clause id of the (merged) registry
      - id: a                     # the requirement `PUR-3.2(a)`
        states: escalate the purchase order with reason lead_time
        checks: [PO dates and lead-time risk]    # checks of task.yaml that read it, and/or
        rules: [foreign_token]                   # audit rules a check of the pack runs, and/or
        erp: the ERP refuses ...                 # a hard control: the request is refused
      - id: b
        states: address the escalation to the requester
        reason: not observed: ...                # or why it is not observed (never with the above)

A variant's map adds entries for its own clauses to its parents' (`extends:` of the registry).
`lint_requirements` is part of `tasks.handbook.lint`: every clause of the registry is mapped; every
requirement is observed or carries its reason; every check and rule named exists (a rule: some
check of the pack runs it), and a named check cites the clause it observes. Coverage is
requirements observed / stated.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from tasks.checks.base import CLAUSE_ID_RE
from tasks.packs import PackError, TaskPack, _rel, parse_model

REQUIREMENTS_FILE = "requirements.yaml"


class Requirement(BaseModel):
    """One requirement a clause states, and what observes it (or why nothing does)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9]*$")
    states: str = Field(min_length=3)
    checks: list[str] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)
    erp: str | None = None
    reason: str | None = None

    @property
    def observed(self) -> bool:
        """True when a check, an audit rule or a hard control of the ERP observes it."""
        return bool(self.checks or self.rules or self.erp)

    @model_validator(mode="after")
    def _observed_or_reason(self) -> Requirement:
        if self.observed and self.reason:
            raise ValueError(f"requirement {self.id!r}: observed (checks/rules/erp) and a reason: give one")
        if not self.observed and not (self.reason and self.reason.strip()):
            raise ValueError(f"requirement {self.id!r}: neither observed (checks, rules, erp) nor a reason")
        return self


class RequirementMap(RootModel[dict[str, list[Requirement]]]):
    """`requirements.yaml`: {clause id: [requirements]}."""

    @field_validator("root")
    @classmethod
    def _clauses(cls, v: dict[str, list[Requirement]]) -> dict[str, list[Requirement]]:
        for cid, reqs in v.items():
            if not CLAUSE_ID_RE.match(cid):
                raise ValueError(f"{cid!r} is not a clause id")
            if not reqs:
                raise ValueError(f"{cid}: lists no requirement")
            ids = [r.id for r in reqs]
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                raise ValueError(f"{cid}: duplicate requirement id(s) {dup}")
        return v


def requirements_file(pack_dir: Path) -> Path:
    """The requirement map beside a pack's clause registry."""
    return Path(pack_dir) / REQUIREMENTS_FILE


def load_requirements(pack_dirs: Iterable[Path]) -> dict[str, tuple[Path, list[Requirement]]]:
    """The merged map of a registry chain ({clause id: (file, requirements)}); a clause mapped
    twice along the chain is an error. Folders without a map contribute nothing."""
    out: dict[str, tuple[Path, list[Requirement]]] = {}
    for d in pack_dirs:
        path = requirements_file(d)
        if not path.exists():
            continue
        data: RequirementMap = parse_model(RequirementMap, path) if path.read_text(encoding="utf-8").strip() else RequirementMap({})
        for cid, reqs in data.root.items():
            if cid in out:
                raise PackError(f"{_rel(path)}: {cid}: mapped again (already in {_rel(out[cid][0])})")
            out[cid] = (path, reqs)
    return out


@dataclass
class Coverage:
    """Requirement-level coverage of one pack."""

    stated: int = 0
    observed: int = 0
    unobserved: list[str] = field(default_factory=list)  # "ID(x): reason"

    def __str__(self) -> str:
        return f"requirements observed {self.observed}/{self.stated}"


def lint_requirements(pack: TaskPack, clause_ids: Iterable[str], pack_dirs: Iterable[Path],
                      run_rules: set[str], known_rules: set[str] | None) -> tuple[list[str], Coverage]:
    """Errors of the pack's requirement map against its registry and checks, and its coverage.

    `pack_dirs` are the folders of the registry chain (own first); `run_rules` the audit rules
    the pack's checks run."""
    dirs = list(pack_dirs)
    cov = Coverage()
    try:
        merged = load_requirements(dirs)
    except PackError as exc:
        return [str(exc)], cov
    ids = set(clause_ids)
    checks = {c.name: c for c in pack.checks}
    errors: list[str] = []
    own = _rel(requirements_file(dirs[0]))
    for cid in sorted(ids - set(merged)):
        errors.append(f"{own}: clause {cid} is not mapped (list the requirements it states)")
    for cid, (path, reqs) in merged.items():
        where = _rel(path)
        if cid not in ids:
            errors.append(f"{where}: {cid}: no such clause in the registry")
            continue
        for req in reqs:
            rid = f"{cid}({req.id})"
            cov.stated += 1
            if req.observed:
                cov.observed += 1
            else:
                cov.unobserved.append(f"{rid}: {req.reason}")
            for name in req.checks:
                check = checks.get(name)
                if check is None:
                    errors.append(f"{where}: {rid} names check {name!r} that does not exist")
                elif cid not in check.cites:
                    errors.append(f"{where}: {rid} names check {name!r} that does not cite {cid}")
            for rule in req.rules:
                if known_rules is not None and rule not in known_rules:
                    errors.append(f"{where}: {rid} names audit rule {rule!r} that does not exist")
                elif rule not in run_rules:
                    errors.append(f"{where}: {rid} names audit rule {rule!r} that no check of the pack runs")
    return errors, cov
