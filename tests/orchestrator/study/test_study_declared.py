"""Declare, then run (issue 39, items 1-2), on the local backend with real attempts:

- a declared campaign passes; the same campaign with one changed budget (or cell, reps, seeds,
  retries, model access) is refused before anything is prepared; a declared label does not resume
  undeclared;
- the bundle carries the declaration and `export --verify` checks the results followed it; a
  swapped declaration fails even with the manifest rewritten to match;
- sealed seeds: the declaration holds only the commitment; the campaign runs the committed seeds
  from the secret; publishing needs the reveal (a wrong one is refused); the bundle verifies after
  the reveal and fails with a wrong one.

The sealed study draws its one seed from the range [0, 2) with a secret chosen so that it is seed
0 (whose scenario the suite builds anyway): the mechanism is the same as in a private range.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from orchestrator.cli import main
from orchestrator.hashing import canonical_json, sha256_bytes
from orchestrator.publish.bundle import BUNDLE_FILE, manifest_self_sha256
from orchestrator.publish.files import sha256_file
from orchestrator.study.seeds import draw_seeds

pytestmark = pytest.mark.slow  # two one-attempt campaigns and their bundles

CELL = "null:payment-run"
BASE = ["--cells", CELL, "--backend", "local", "--reps", "1"]
SEALED_SECRET = f"{1:064x}"  # draws seed 0 from [0, 2)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("study")


@pytest.fixture(scope="module")
def declared(work: Path) -> tuple[Path, Path, str]:
    """A study declared and its campaign run: (runs root, study file, printed hash)."""
    study = work / "study.json"
    assert main(["declare", *BASE, "--seeds", "0", "--out", str(study)]) == 0
    digest = sha256_bytes(canonical_json(json.loads(study.read_text())).encode())
    runs = work / "runs"
    assert main(["campaign", *BASE, "--seeds", "0", "--label", "decl", "--runs-root", str(runs),
                 "--declared", str(study)]) == 0
    return runs, study, digest


def test_declare_prints_the_hash_and_holds_what_decides_results(work: Path, capsys) -> None:
    out = work / "shown.json"
    assert main(["declare", *BASE, "--seeds", "0", "--timeout", "40", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    study = json.loads(out.read_text())
    assert f"sha256 {sha256_bytes(canonical_json(study).encode())}" in printed
    assert study["budgets"] == {"turn_s": 40.0, "infra_retries": 2}
    assert study["seeds"] == [0] and study["reps"] == 1 and study["sealed_seeds"] is None
    assert set(study["tasks"]["payment-run"]) >= {"version", "tree_sha256"}
    assert study["sources"]["parts"] and study["sources"]["images"]  # shared sources and image tags
    assert set(study["analysis"]) == {"metrics", "comparisons", "convention"}


def test_declared_campaign_runs_and_records_the_study(declared) -> None:
    runs, study, digest = declared
    root = runs / "decl"
    assert (root / "study.json").read_bytes() == study.read_bytes()
    decl = json.loads((root / "campaign.json").read_text())
    assert decl["study"]["sha256"] == digest
    assert len((root / "attempts.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize("change", [
    ["--timeout", "30"],          # a budget
    ["--retries", "5"],           # a budget
    ["--reps", "2"],
    ["--seeds", "0,1"],
    ["--cells", "oracle:payment-run"],
    ["--model-access", "MODEL_ACCESS"],
], ids=["turn-budget", "retries", "reps", "seeds", "cells", "model-access"])
def test_any_difference_is_refused_before_anything_runs(declared, work: Path, change: list[str], capsys) -> None:
    runs, study, _ = declared
    if "MODEL_ACCESS" in change:
        access = work / "access.yaml"
        access.write_text(yaml.safe_dump({"providers": {"anthropic": {"fake_script": "s.yaml", "models": ["m"]}}}))
        change = ["--model-access", str(access)]
    args = dict(zip(BASE[::2], BASE[1::2], strict=True))
    args.update(dict(zip(change[::2], change[1::2], strict=True)))
    args.setdefault("--seeds", "0")
    label = "changed-" + change[0].strip("-")
    flat = [x for kv in args.items() for x in kv]
    code = main(["campaign", *flat, "--label", label, "--runs-root", str(runs), "--declared", str(study)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "not the study declared" in err
    assert not (runs / label).exists()  # nothing written, no attempt run


def test_a_declared_label_does_not_resume_undeclared(declared, capsys) -> None:
    runs, _, _ = declared
    assert main(["campaign", *BASE, "--seeds", "0", "--label", "decl", "--runs-root", str(runs)]) == 2
    assert "is a declared study" in capsys.readouterr().err


def test_resuming_under_the_declaration_is_allowed(declared) -> None:
    runs, study, _ = declared
    assert main(["campaign", *BASE, "--seeds", "0", "--label", "decl", "--runs-root", str(runs),
                 "--declared", str(study)]) == 0


def _rehash(bundle: Path) -> None:
    """What a forger would do: make the manifest match the files again."""
    manifest = json.loads((bundle / BUNDLE_FILE).read_text())
    for rel, info in manifest["files"].items():
        info["sha256"] = sha256_file(bundle / rel)
    manifest["self_sha256"] = manifest_self_sha256(manifest)
    (bundle / BUNDLE_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True))


def test_bundle_carries_and_verifies_the_declaration(declared, work: Path, capsys) -> None:
    runs, study, _ = declared
    bundle = work / "bundle-decl"
    assert main(["publish", "decl", "--out", str(bundle), "--runs-root", str(runs)]) == 0
    assert (bundle / "study.json").read_bytes() == study.read_bytes()
    capsys.readouterr()
    assert main(["export", "--verify", str(bundle)]) == 0
    assert "study: the campaign followed its declaration" in capsys.readouterr().out
    # A declaration swapped afterwards (reps 2 instead of 1), the manifest rewritten to match.
    forged = work / "bundle-forged"
    shutil.copytree(bundle, forged)
    data = json.loads((forged / "study.json").read_text())
    data["reps"] = 2
    (forged / "study.json").write_text(json.dumps(data, indent=2))
    _rehash(forged)
    assert main(["export", "--verify", str(forged)]) == 1
    err = capsys.readouterr().err
    assert "study.json: campaign.json does not name this study declaration's hash" in err
    assert "study.json: reps: declared 2, now 1" in err


# ------------------------------------------------------------------------------- sealed seeds


@pytest.fixture(scope="module")
def sealed(work: Path) -> tuple[Path, Path, Path]:
    secret = work / "sealed.key"
    secret.write_text(SEALED_SECRET + "\n")
    study = work / "sealed-study.json"
    assert draw_seeds(SEALED_SECRET, (0, 2), 1) == [0]
    assert main(["declare", *BASE, "--sealed-seeds", "1", "--seed-secret", str(secret), "--seed-range", "0-2",
                 "--out", str(study)]) == 0
    runs = work / "sealed-runs"
    assert main(["campaign", *BASE, "--label", "sealed", "--runs-root", str(runs), "--declared", str(study),
                 "--seed-secret", str(secret)]) == 0
    return runs, study, secret


def test_sealed_declaration_holds_only_the_commitment(sealed) -> None:
    _, study, _ = sealed
    data = json.loads(study.read_text())
    assert data["seeds"] == [] and data["sealed_seeds"]["count"] == 1
    assert SEALED_SECRET not in study.read_text()


def test_sealed_campaign_ran_the_committed_seed_and_keeps_no_secret(sealed) -> None:
    runs, _, _ = sealed
    assert json.loads((runs / "sealed" / "campaign.json").read_text())["seeds"] == [0]
    for path in (runs / "sealed").rglob("*"):
        if path.is_file():
            assert SEALED_SECRET.encode() not in path.read_bytes(), path


def test_sealed_campaign_needs_the_right_secret(sealed, work: Path, capsys) -> None:
    runs, study, _ = sealed
    wrong = work / "wrong.key"
    wrong.write_text(f"{2:064x}" + "\n")
    for extra in ([], ["--seed-secret", str(wrong)]):
        assert main(["campaign", *BASE, "--label", "sealed-x", "--runs-root", str(runs), "--declared", str(study),
                     *extra]) == 2
    assert not (runs / "sealed-x").exists()


def test_sealed_bundle_verifies_after_the_reveal_and_fails_with_a_wrong_one(sealed, work: Path, capsys) -> None:
    runs, _, secret = sealed
    wrong = work / "wrong-reveal.key"
    wrong.write_text(f"{3:064x}" + "\n")
    assert main(["publish", "sealed", "--out", str(work / "b-none"), "--runs-root", str(runs)]) == 2
    assert main(["publish", "sealed", "--out", str(work / "b-wrong"), "--runs-root", str(runs),
                 "--reveal", str(wrong)]) == 2
    bundle = work / "b-sealed"
    assert main(["publish", "sealed", "--out", str(bundle), "--runs-root", str(runs), "--reveal", str(secret)]) == 0
    capsys.readouterr()
    assert main(["export", "--verify", str(bundle)]) == 0
    assert "1 sealed seed(s) revealed and matching the commitment" in capsys.readouterr().out
    forged = work / "b-forged"
    shutil.copytree(bundle, forged)
    (forged / "reveal.json").write_text(json.dumps({"scheme": "x", "secret": f"{3:064x}"}))
    _rehash(forged)
    assert main(["export", "--verify", str(forged)]) == 1
    assert "reveal.json: the sealed seeds are not revealed" in capsys.readouterr().err


def test_sealed_range_must_avoid_validation_seeds(work: Path, capsys) -> None:
    from orchestrator.validation_record import RECORD_KIND, RECORD_SCHEMA, record_self_sha256

    record = {"kind": RECORD_KIND, "schema": RECORD_SCHEMA, "seeds": [0, 1], "entries": []}
    record["self_sha256"] = record_self_sha256(record)
    path = work / "record.json"
    path.write_text(json.dumps(record))
    code = main(["declare", *BASE, "--sealed-seeds", "1", "--seed-secret", str(work / "new.key"), "--seed-range", "0-4",
                 "--validation", str(path), "--out", str(work / "x.json")])
    assert code == 2
    assert "holds seeds used in development or validation" in capsys.readouterr().err
    assert main(["declare", *BASE, "--sealed-seeds", "1", "--seed-secret", str(work / "new.key"),
                 "--seed-range", "2-10", "--validation", str(path), "--out", str(work / "x.json")]) == 0
