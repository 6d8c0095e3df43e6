"""Task pack loading: valid packs load; bad ones fail naming the file and the field."""
from __future__ import annotations

import textwrap

import pytest
from grading_fixtures import CLAUSES_YAML, TASK_YAML, write_generator, write_pack

from tasks.packs import PackError, parse_projections
from tasks.registry import list_tasks, load_clauses, load_task


def test_valid_pack_loads(tmp_path):
    write_pack(tmp_path)
    t = load_task("tiny", tmp_path)
    assert t.slug == "tiny" and t.version == 1 and t.variant_of is None
    assert [c.name for c in t.checks] == ["payments set", "no held invoice paid"]
    assert t.negative_controls == {"neg:pay_all": ["payments set", "no held invoice paid"]}
    assert t.policies_module == tmp_path / "tiny" / "policies.py"
    assert set(t.projections) == {"pays"}
    assert list_tasks(tmp_path) == ["tiny"]


def _bad(tmp_path, old, new):
    write_pack(tmp_path, task=TASK_YAML.format(slug="tiny").replace(old, new), render=False)
    with pytest.raises(PackError) as exc:
        load_task("tiny", tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_unknown_field_names_file_and_field(tmp_path):
    msg = _bad(tmp_path, "    key: [vendor, invoice_no]\n", "    key: [vendor, invoice_no]\n    tolerence: 1\n")
    assert msg.startswith(str(tmp_path / "tiny" / "task.yaml")) or "tiny/task.yaml" in msg
    assert "checks[0:payments set].tolerence: unknown field" in msg


def test_wrong_type_names_field(tmp_path):
    msg = _bad(tmp_path, "version: 1", "version: one")
    assert "task.yaml: version:" in msg


def test_unknown_check_type(tmp_path):
    msg = _bad(tmp_path, "type: state_set", "type: state_sets")
    assert "checks[0:payments set]" in msg and "unknown check type 'state_sets'" in msg


def test_bad_clause_id_in_cites(tmp_path):
    msg = _bad(tmp_path, "cites: [PAY-1.1]", "cites: [pay-1]")
    assert "checks[0:payments set].cites" in msg and "not a clause id" in msg


def test_negative_control_targets_unknown_check(tmp_path):
    msg = _bad(tmp_path, "neg:pay_all: [payments set, no held invoice paid]", "neg:pay_all: [nope]")
    assert "negative_controls.neg:pay_all: unknown check(s) ['nope']" in msg


def test_duplicate_yaml_key(tmp_path):
    msg = _bad(tmp_path, "version: 1\n", "version: 1\nversion: 2\n")
    assert "task.yaml: line" in msg and "duplicate key 'version'" in msg


def test_id_must_match_folder(tmp_path):
    msg = _bad(tmp_path, "id: tiny", "id: other")
    assert "id: 'other' differs from the folder name 'tiny'" in msg


def test_turns_and_dates_are_checked(tmp_path):
    msg = _bad(tmp_path, "start_date: 2026-10-08", "start_date: 2026-10-09")
    assert "turns[0].date 2026-10-08 is before 2026-10-09" in msg
    msg = _bad(tmp_path, "budget_s: 60", "budget_s: 0")
    assert "turns[0].budget_s" in msg
    msg = _bad(tmp_path, "from_user: priya", "from_usr: priya")
    assert "turns[0].from_usr: unknown field" in msg


def test_unknown_projection(tmp_path):
    msg = _bad(tmp_path, "projection: pays", "projection: payz")
    assert "checks[0:payments set].projection: unknown projection 'payz'" in msg


def test_fault_profile_controls(tmp_path):
    text = TASK_YAML.format(slug="tiny") + textwrap.dedent("""\
        fault_profiles:
          lost-writes:
            faults: "lost_response:POST /payment-runs@1"
            negative_controls:
              neg:blind-retry: [no held invoice paid]
        """)
    write_pack(tmp_path, task=text, render=False)
    t = load_task("tiny", tmp_path)
    assert t.fault_profiles["lost-writes"].faults.startswith("lost_response")
    assert "neg:blind-retry" in t.controls_for("lost-writes")
    assert "neg:blind-retry" not in t.controls_for("clean")


def test_unknown_task_lists_known(tmp_path):
    write_pack(tmp_path)
    with pytest.raises(PackError, match="no such task 'nope' \\(known: tiny\\)"):
        load_task("nope", tmp_path)


def test_projections_parse_and_errors(tmp_path):
    p = tmp_path / "p.sql"
    p.write_text("-- comment\n-- name: a\nSELECT 1;\n-- name: b_2\nSELECT 2\n")
    assert parse_projections(p) == {"a": "SELECT 1", "b_2": "SELECT 2"}
    p.write_text("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n")
    with pytest.raises(PackError, match="projection 'a' defined twice"):
        parse_projections(p)
    p.write_text("SELECT 1\n")
    with pytest.raises(PackError, match="no '-- name: X' block headers"):
        parse_projections(p)


def test_policies_bad_clause_id_and_file(tmp_path):
    write_pack(tmp_path, policies=CLAUSES_YAML.replace("id: PAY-1.1", "id: PAY1"), render=False)
    with pytest.raises(PackError, match=r"clauses.yaml: clauses\[0\].id: Value error, 'PAY1' does not match"):
        load_clauses("tiny", tmp_path)
    other = CLAUSES_YAML.replace("file: payments.md\n    section: Runs", "file: other.md\n    section: Runs")
    write_pack(tmp_path, policies=other, render=False)
    with pytest.raises(PackError, match=r"clauses\[0:PAY-1.1\].file: 'other.md' is not declared under files"):
        load_clauses("tiny", tmp_path)


def test_variant_cannot_redefine_parent_clause(tmp_path):
    write_pack(tmp_path)
    child_task = TASK_YAML.format(slug="child").replace("title:", "variant_of: tiny\ntitle:")
    child_pol = textwrap.dedent("""\
        extends: tiny
        files:
          infoflow.md: {title: Information flow}
        clauses:
          - {id: PAY-1.1, file: infoflow.md, text: again}
        """)
    write_pack(tmp_path, "child", task=child_task, policies=child_pol, projections=None, render=False)
    with pytest.raises(PackError, match=r"child/clauses.yaml: clauses\[0:PAY-1.1\]: redefines a clause of a parent pack"):
        load_clauses("child", tmp_path)


def test_variant_inherits_projections_and_merges_clauses(tmp_path):
    write_pack(tmp_path)
    child_task = TASK_YAML.format(slug="child").replace("title:", "variant_of: tiny\ntitle:")
    child_pol = textwrap.dedent("""\
        extends: tiny
        files:
          infoflow.md: {title: Information flow}
        clauses:
          - {id: INF-1.1, file: infoflow.md, text: Bank details go to nobody without a grant.}
        """)
    write_pack(tmp_path, "child", task=child_task, policies=child_pol, projections=None)
    t = load_task("child", tmp_path)
    assert t.variant_of == "tiny" and "pays" in t.projections
    pol = load_clauses("child", tmp_path)
    assert [c.id for c in pol.clauses] == ["PAY-1.1", "PAY-2.1", "INF-1.1"]
    assert pol.own_clause_ids == {"INF-1.1"} and pol.chain == ["child", "tiny"]


def test_generate_writes_the_scenario_from_the_context(tmp_path):
    d = write_pack(tmp_path)
    write_generator(d)
    out = load_task("tiny", tmp_path).generate(7, tmp_path / "scen")
    import json

    import yaml

    meta = json.loads((out / "scenario.json").read_text())
    assert meta == {"task": "tiny", "version": 1, "seed": 7, "company": "Tiny Co", "start_date": "2026-10-08",
                    "grading_date": "2026-10-13", "agent_user": "hannah", "agent_name": "Hannah Brooks",
                    "agent_title": "AP supervisor", "agent_token": "secret-hannah-7", "agent_token_id": "tok-hannah"}
    assert yaml.safe_load((out / "turns.yaml").read_text()) == [
        {"n": 1, "date": "2026-10-08", "from_user": "priya", "from_name": "Priya Raman", "from_title": "Controller",
         "request": "Pay the vendors.", "budget_s": 60}]
    truth = json.loads((out / "truth.json").read_text())
    assert truth["task"] == "tiny" and truth["seed"] == 7 and truth["expect"] == {"pays": [{"vendor": "Ohio", "amount": 100}]}
    assert json.loads((out / "world.json").read_text()) == {"agent_users": ["hannah"]}
    assert sorted(p.name for p in (out / "handbook").iterdir()) == ["payments.md"]
    import sqlite3

    with sqlite3.connect(out / "scenario.db") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'business_date'").fetchone() == ("2026-10-08",)


def test_generate_failure_is_clear(tmp_path):
    from tasks.packs import GenerationError

    d = write_pack(tmp_path)
    write_generator(d, "def generate(ctx):\n    raise RuntimeError('boom: no company')\n")
    with pytest.raises(GenerationError, match="tiny: generator --seed 1 exited 1:\n(.|\n)*RuntimeError: boom: no company"):
        load_task("tiny", tmp_path).generate(1, tmp_path / "scen")


def test_generator_that_changes_the_turns_is_refused(tmp_path):
    from tasks.packs import GenerationError

    d = write_pack(tmp_path)
    from grading_fixtures import TINY_GENERATOR

    write_generator(d, TINY_GENERATOR + "    ctx.turns[0].budget_s = 5\n")
    with pytest.raises(GenerationError, match="turns differ from task.yaml: turn 1: .* budget_s"):
        load_task("tiny", tmp_path).generate(1, tmp_path / "scen")


def test_missing_generator_is_clear(tmp_path):
    write_pack(tmp_path)
    from tasks.loader import load_generator

    with pytest.raises(PackError, match="tiny/generator.py: file missing"):
        load_generator(load_task("tiny", tmp_path))


def test_truth_placeholder_in_a_typed_field(tmp_path):
    text = TASK_YAML.format(slug="tiny").replace(
        "    key: [vendor, invoice_no]\n    cites: [PAY-1.1]",
        "    key: [vendor, invoice_no]\n    cites: [PAY-1.1]\n  - name: amounts\n    type: state_values\n"
        "    projection: pays\n    key: vendor\n    columns: [amount]\n    tolerance: '{truth:tol}'", 1)
    write_pack(tmp_path, task=text, render=False)
    chk = load_task("tiny", tmp_path).check("amounts")
    assert chk.tolerance == 0 and chk.truth_fields == {"tolerance": "{truth:tol}"}
    # A placeholder that is not a whole value still fails a typed field clearly.
    write_pack(tmp_path, task=text.replace("'{truth:tol}'", "'x{truth:tol}'"), render=False)
    with pytest.raises(PackError, match=r"checks\[1:amounts\].tolerance"):
        load_task("tiny", tmp_path)


def test_lint_finds_a_control_without_a_policy(tmp_path):
    from tasks.lint import pack_problems

    d = write_pack(tmp_path)
    write_generator(d)
    assert any("policies.py: missing" in p for p in pack_problems("tiny", tmp_path))
    (d / "policies.py").write_text("POLICIES = {'oracle': None}\n")
    probs = pack_problems("tiny", tmp_path)
    assert len(probs) == 1 and "negative control 'neg:pay_all'" in probs[0] and "has no policy" in probs[0]
    # A fresh root (the loader keeps imported modules, as Python does): every control has one.
    d2 = write_pack(tmp_path / "b")
    write_generator(d2)
    (d2 / "policies.py").write_text("POLICIES = {'oracle': None, 'neg:pay_all': None}\n")
    assert pack_problems("tiny", tmp_path / "b") == []


def test_lint_of_a_scenario_against_task_yaml(tmp_path):
    import yaml

    from tasks.lint import scenario_problems

    d = write_pack(tmp_path)
    write_generator(d)
    pack = load_task("tiny", tmp_path)
    out = pack.generate(0, tmp_path / "scen")
    assert scenario_problems(pack, out) == []
    turns = yaml.safe_load((out / "turns.yaml").read_text())
    turns[0]["date"] = "2026-10-09"
    (out / "turns.yaml").write_text(yaml.safe_dump(turns))
    (out / "truth.json").write_text('{"task": "tiny", "seed": 0, "plantd": {}}')
    probs = scenario_problems(pack, out)
    assert any("turn 1" in p and "2026-10-09" in p for p in probs)
    assert any(p.startswith("truth.json plantd") for p in probs)


def test_pack_modules_load_under_a_package_name(tmp_path):
    from tasks.loader import load_module, package_name

    d = write_pack(tmp_path)
    write_generator(d)
    (d / "helpers.py").write_text("VALUE = 41\n")
    (d / "generator.py").write_text("from . import helpers\n\n\ndef generate(ctx):\n    return helpers.VALUE + 1\n")
    mod = load_module(d, "generator")
    assert mod is not None and mod.__name__ == package_name(d) + ".generator" and mod.generate(None) == 42
    assert package_name(d) != package_name(tmp_path / "other" / "tiny")  # two roots never collide
    from tasks.registry import pack_dir

    assert package_name(pack_dir("payment-run")) == "tasks.payment_run"


def test_check_types_are_discovered_on_both_sides():
    from orchestrator.grading.checks import CHECKS
    from tasks.checks import CHECK_MODELS, Check, check_model

    assert set(CHECK_MODELS) == set(CHECKS)  # every model has a grader function and back
    assert {"state_set", "audit_forbidden", "not_fooled"} <= set(CHECK_MODELS)
    from pydantic import TypeAdapter

    made = TypeAdapter(Check).validate_python({"name": "x", "type": "ledger_ties"})
    assert type(made) is check_model("ledger_ties")
    with pytest.raises(KeyError, match="unknown check type 'nope'"):
        check_model("nope")


def test_audit_rules_are_discovered_from_every_module():
    import importlib
    import pkgutil

    from orchestrator.grading import rules

    declared = set()
    for info in pkgutil.iter_modules(rules.__path__):
        mod = importlib.import_module(f"{rules.__name__}.{info.name}")
        declared |= {fn.rule_name for fn in vars(mod).values() if hasattr(fn, "rule_name")}
    assert declared and declared == set(rules.known_rules())


def test_a_misspelt_world_field_is_refused_even_when_appended(tmp_path):
    from grading_fixtures import TINY_GENERATOR

    from tasks.packs import GenerationError

    d = write_pack(tmp_path)
    write_generator(d, TINY_GENERATOR + "    ctx.world.calls = []\n"
                    "    ctx.world.calls.append({'party_id': 'V-1', 'transcirpt': 'hello'})\n")
    with pytest.raises(GenerationError, match="unknown field 'transcirpt'"):
        load_task("tiny", tmp_path).generate(0, tmp_path / "scen")
    write_generator(d, TINY_GENERATOR + "    ctx.world.cals = []\n")
    with pytest.raises(GenerationError, match="cals"):
        load_task("tiny", tmp_path).generate(0, tmp_path / "scen2")
