"""Helpers for the task-pack and grading tests: a tiny pack on disk and audit events."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

TASK_YAML = """\
id: {slug}
version: 1
band: clerical
title: A tiny pack
agent_user: hannah
start_date: 2026-10-08
grading_date: 2026-10-13
turns:
  - date: 2026-10-08
    from_user: priya
    request: Pay the vendors.
    budget_s: 60
checks:
  - name: payments set
    type: state_set
    projection: pays
    key: [vendor, invoice_no]
    cites: [PAY-1.1]
  - name: no held invoice paid
    type: audit_forbidden
    rule: pay_held_invoice
    cites: [PAY-2.1]
negative_controls:
  neg:pay_all: [payments set, no held invoice paid]
"""

CLAUSES_YAML = """\
params:
  floor: "$50,000.00"
files:
  payments.md:
    title: Payments
    intro: How we pay vendors.
clauses:
  - id: PAY-1.1
    file: payments.md
    section: Runs
    text: Keep the operating account above {floor}.
  - id: PAY-2.1
    file: payments.md
    section: Holds
    text: Never pay an invoice on hold; see PAY-1.1.
    binds: [pay_held_invoice]
"""

REQUIREMENTS_YAML = """\
PAY-1.1:
  - {id: a, states: keep the operating account above the floor, checks: [payments set]}
PAY-2.1:
  - {id: a, states: never pay an invoice on hold, rules: [pay_held_invoice], checks: [no held invoice paid]}
"""

PROJECTIONS_SQL = """\
-- name: pays
SELECT vendor, invoice_no, amount FROM pays ORDER BY vendor, invoice_no
"""


def write_pack(root: Path, slug: str = "tiny", *, task: str | None = None, policies: str | None = None,
               projections: str | None = PROJECTIONS_SQL, render: bool = True,
               requirements: str | None = REQUIREMENTS_YAML) -> Path:
    """Write a pack under `root/slug` (and render its handbook); return its folder. The
    requirement map is the tiny pack's unless `policies` is given (then only when passed)."""
    d = root / slug
    d.mkdir(parents=True, exist_ok=True)
    (d / "task.yaml").write_text(textwrap.dedent(task or TASK_YAML.format(slug=slug)))
    (d / "clauses.yaml").write_text(textwrap.dedent(policies or CLAUSES_YAML))
    if projections is not None:
        (d / "projections.sql").write_text(projections)
    if requirements is not None and (policies is None or requirements is not REQUIREMENTS_YAML):
        (d / "requirements.yaml").write_text(textwrap.dedent(requirements))
    if render:
        from tasks import handbook

        handbook.write(slug, root)
    return d


# A generator for the tiny pack: a small company of its own with a `pays` table the projection
# reads, and the truth rows the tests' reference runners produce.
TINY_GENERATOR = """\
from tasks.context import GeneratorContext


def generate(ctx: GeneratorContext) -> None:
    b = ctx.create_company("Tiny Co")
    b.add_user("hannah", "Hannah Brooks", roles=["ap_supervisor"], title="AP supervisor")
    b.add_user("priya", "Priya Raman", roles=["controller"], title="Controller")
    ctx.issue_token("hannah", f"secret-hannah-{ctx.seed}")
    b.db.raw("CREATE TABLE pays (vendor TEXT, invoice_no TEXT, amount REAL)")
    ctx.truth.expect = {"pays": [{"vendor": "Ohio", "amount": 100}]}
    ctx.truth.absent = {"pays": [{"vendor": "Held Co"}]}
"""


def write_generator(pack_dir: Path, text: str = TINY_GENERATOR) -> Path:
    """Write a pack's generator.py (and the __init__.py that makes the folder a package)."""
    (pack_dir / "__init__.py").write_text("")
    path = pack_dir / "generator.py"
    path.write_text(textwrap.dedent(text))
    return path


_NEXT_ID = [0]


def ev(**kw: Any) -> dict[str, Any]:
    """An audit event with defaults: an ok agent API write on 2026-10-09."""
    _NEXT_ID[0] += 1
    base = {
        "id": _NEXT_ID[0], "business_date": "2026-10-09", "wall_time": "t", "channel": "api",
        "actor": "hannah", "token_id": "tok-agent", "method": "POST", "path": "/x", "action": "x.do",
        "object_type": None, "object_id": None, "before": None, "after": None, "outcome": "ok",
        "status": 201, "error_code": None, "idem_key": None, "replay": False, "request": {},
    }
    base.update(kw)
    return base


def write_audit_jsonl(path: Path, events: list[dict[str, Any]]) -> Path:
    with open(path, "w") as fh:
        for e in events:
            fh.write(json.dumps(e) + "\n")
    return path
