"""A rescoring from a publication bundle whose restricted values are redacted (issue 33).

The shared real campaign (tests/support/publish_campaign.py: payment-run's oracle, null and fault
cells, a model-calling agent that leaks keys, and payment-run-need-to-know's oracle beside
`neg:share_bank_details`, which mails restricted bank details to a colleague) is published and the
bundle rescored with this checkout's unchanged versions. Nothing may flip: in particular the
disclosure check, whose values the bundle replaced by placeholders, is graded from those
placeholders (as `export --verify --regrade` does) and still finds the breach, with the same audit
rows, owners and readers; the bundle stays byte-identical and the new label verifies.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from orchestrator.campaign.export import verify_label
from orchestrator.cli import main
from orchestrator.regrade.rescore import regrade_label

pytestmark = pytest.mark.slow

LABEL = "pub"
LEAKER = "neg:share_bank_details:payment-run-need-to-know"


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    from publish_campaign import campaign

    return campaign(tmp_path_factory)


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_unchanged_rescoring_of_a_redacted_bundle_flips_nothing(shared, tmp_path):
    bundle = tmp_path / "bundle"
    assert main(["publish", LABEL, "--runs-root", str(shared.runs), "--out", str(bundle),
                 "--model-access", str(shared.model_access)]) == 0
    before = _tree(bundle)
    runs = tmp_path / "runs"
    done = regrade_label(runs, str(bundle), "pub-again")
    assert _tree(bundle) == before
    delta = json.loads((runs / "pub-again" / "delta.json").read_text())
    lines = [json.loads(t) for t in (bundle / "attempts.jsonl").read_text().splitlines()]
    scored = [ln for ln in lines if ln["outcome"] in ("graded", "agent_error")]
    assert (done.regraded, done.not_regradable, delta["flipped_attempts"], delta["flipped_checks"]) == (
        len(scored), [], 0, 0), (done.not_regradable, delta)
    new = {json.loads(t)["identity"]["cell"]: json.loads(t)
           for t in (runs / "pub-again" / "attempts.jsonl").read_text().splitlines()}
    old = {ln["identity"]["cell"]: ln for ln in lines}
    assert {c: (ln["passed"], ln["breach"], ln["checks"]) for c, ln in old.items()} == {
        c: (ln["passed"], ln["breach"], ln["checks"]) for c, ln in new.items()}
    # the leak is still found from the placeholders, at the same places
    leaker = new[LEAKER]
    assert leaker["breach"] is True and leaker["passed"] is False
    folder = next((runs / "pub-again").glob("neg-share_bank_details__payment-run-need-to-know/seed-0/rep-1"))
    result = json.loads((folder / "result.json").read_text())
    disclosure = [c for c in result["checks"] if c["type"] == "audit_forbidden" and not c["passed"]]
    assert disclosure and all(c.get("findings") for c in disclosure)
    source = json.loads(next(bundle.glob("neg-share_bank_details__payment-run-need-to-know/seed-0/rep-1/result.json"))
                        .read_text())
    recorded = {c["name"]: c for c in source["checks"]}
    for c in disclosure:
        places = sorted(tuple(f["refs"].get("audit_ids") or []) for f in c["findings"])
        assert places == sorted(tuple(f["refs"].get("audit_ids") or []) for f in recorded[c["name"]]["findings"])
    assert verify_label(runs, "pub-again").ok
    assert main(["export", "--verify", str(bundle)]) == 0
