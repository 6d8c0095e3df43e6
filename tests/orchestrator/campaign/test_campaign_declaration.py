"""Campaign declaration, attempt identity, resume and declaration-change refusal (no containers)."""
from __future__ import annotations

from pathlib import Path

import pytest
from campaign_support import write_attempt

from orchestrator.campaign.declaration import DeclarationChanged, build_declaration, check_or_write_declaration, declaration_changes, is_finished, plan_attempts
from orchestrator.campaign.spec import CampaignSpecError, load_spec_file, parse_cell_text, spec_from_args
from orchestrator.identity import AttemptIdentity


def test_default_campaign_is_oracle_and_null_on_payment_run_seed_0_one_rep():
    spec = spec_from_args(None)
    assert spec.cells == ["oracle:payment-run", "null:payment-run"]
    assert spec.seeds == [0] and spec.reps == 1


def test_cells_flag_seeds_and_reps():
    spec = spec_from_args("oracle:payment-run,neg:blind-retry:payment-run+lost-writes", seeds="0,1", reps=3)
    refs = spec.cell_refs
    assert refs[1].system == "neg:blind-retry" and refs[1].task == "payment-run" and refs[1].condition == "lost-writes"
    assert spec.seeds == [0, 1] and spec.reps == 3


@pytest.mark.parametrize(
    "cells, seeds, reps, needle",
    [
        ("oracle", None, None, "no ':'"),
        ("oracle:payment-run,oracle:payment-run", None, None, "duplicate cells"),
        ("oracle:payment-run", "0,x", None, "--seeds"),
        ("oracle:payment-run", "1,1", None, "duplicate seeds"),
        ("oracle:payment-run", None, 0, "reps"),
    ],
)
def test_bad_flags_name_the_field(cells, seeds, reps, needle):
    with pytest.raises(CampaignSpecError) as err:
        spec_from_args(cells, seeds=seeds, reps=reps)
    assert needle in str(err.value)


def test_yaml_file_extra_field_and_bad_value_are_named(tmp_path: Path):
    f = tmp_path / "c.yaml"
    f.write_text("cells: [oracle:payment-run]\nseeds: [0, 1]\nreps: 2\nbudgets: {turn_s: 30}\ncolour: red\n")
    with pytest.raises(CampaignSpecError) as err:
        load_spec_file(f)
    assert "colour: unknown field" in str(err.value)
    f.write_text("cells: [oracle:payment-run]\nreps: two\n")
    with pytest.raises(CampaignSpecError, match="reps"):
        load_spec_file(f)
    f.write_text("cells: [oracle:payment-run]\nseeds: [0, 1]\nreps: 2\nbudgets: {turn_s: 30, infra_retries: 1}\n")
    spec = spec_from_args(str(f), reps=3)  # flags beside a file override it
    assert spec.reps == 3 and spec.seeds == [0, 1] and spec.turn_timeout_s == 30 and spec.budgets.infra_retries == 1


def test_identity_is_deterministic_and_condition_is_part_of_the_cell(tmp_path: Path):
    clean = parse_cell_text("oracle:payment-run")
    faulted = parse_cell_text("oracle:payment-run+lost-writes")
    a = plan_attempts([clean, faulted], [0, 1], 2, {"payment-run": "3"})
    b = plan_attempts([faulted, clean], [1, 0], 2, {"payment-run": "3"})
    assert a == b and len(a) == 8
    assert len({x.attempt_id for x in a}) == 8
    ids = {(x.condition, x.seed, x.rep): x.attempt_id for x in a}
    assert ids[("clean", 0, 1)] != ids[("lost-writes", 0, 1)]
    d_clean = a[0].folder(tmp_path, "L")
    assert d_clean.relative_to(tmp_path).parts[2:] == ("seed-0", "rep-1")
    assert [x for x in a if x.condition == "lost-writes"][0].folder(tmp_path, "L").parent.parent != d_clean.parent.parent
    # a new task version is a new attempt
    c = plan_attempts([clean], [0], 1, {"payment-run": "4"})[0]
    assert c.attempt_id != ids[("clean", 0, 1)]


def _decl(**over):
    base = dict(
        label="L", cells=[parse_cell_text("oracle:payment-run")], seeds=[0], reps=2,
        task_info={"payment-run": {"version": "1", "tree_sha256": "a"}},
        systems={"oracle": {"kind": "policy"}}, turn_timeout_s=None, backend="local",
        volatile={"concurrency": 1},
    )
    base.update(over)
    return build_declaration(**base)


def test_resume_accepts_volatile_changes_and_refuses_material_ones(tmp_path: Path):
    root = tmp_path / "L"
    assert check_or_write_declaration(root, _decl()) is False
    assert check_or_write_declaration(root, _decl(volatile={"concurrency": 8, "ports": [1234]})) is True
    for change, field in [
        (dict(reps=3), "reps"),
        (dict(seeds=[0, 1]), "seeds"),
        (dict(cells=[parse_cell_text("oracle:payment-run+lost-writes")]), "cells"),
        (dict(task_info={"payment-run": {"version": "2", "tree_sha256": "a"}}), "tasks.payment-run.version"),
        (dict(systems={"oracle": {"kind": "command", "sha256": "x"}}), "systems.oracle"),
        (dict(turn_timeout_s=30.0), "timeouts.turn_s"),
        (dict(backend="docker"), "backend"),
    ]:
        with pytest.raises(DeclarationChanged) as err:
            check_or_write_declaration(root, _decl(**change))
        assert field in str(err.value), (field, str(err.value))
    assert declaration_changes(_decl().to_json(), _decl(volatile={"concurrency": 4}).to_json()) == []


def test_finished_means_a_final_result(tmp_path: Path):
    ident = AttemptIdentity(task="payment-run", system="oracle", condition="clean", seed=0, rep=1, task_version="1")
    folder = ident.folder(tmp_path, "L")
    assert not is_finished(folder)
    folder.mkdir(parents=True)
    assert not is_finished(folder)  # killed mid-run: no result.json
    write_attempt(tmp_path, "L", ident, outcome="infra_error")
    assert not is_finished(folder)  # infra errors are tried again on resume
    write_attempt(tmp_path, "L", ident, outcome="agent_error", passed=False)
    assert is_finished(folder)


def _fake_repo(root: Path) -> Path:
    """A checkout-shaped tree: one pack, the company generator, the ERP, the scenario cache, the
    grader, the agent's other ways in (MCP, web UI, model gateway), docs."""
    files = {
        "tasks/__init__.py": "", "tasks/packs.py": "# models\n",
        "tasks/payment_run/task.yaml": "id: payment-run\n", "tasks/payment_run/generator.py": "# gen\n",
        "tasks/northgate/history.py": "# a year of history\n", "tasks/checks/state.py": "# models\n",
        "erp_service/kernel/db.py": "# db\n", "agent_sandbox/client.py": "# client\n",
        "orchestrator/grading/grader.py": "# grader\n", "orchestrator/grading/rules/holds.py": "# rule\n",
        "orchestrator/scenarios/cache.py": "# cache\n", "orchestrator/scenarios/folder.py": "# folder\n",
        "orchestrator/scenarios/reference.py": "# oracle run\n", "erp_mcp/server.py": "# tools\n",
        "erp_web/app.py": "# pages\n", "model_gateway/app.py": "# gateway\n",
        "orchestrator/campaign/ledger.py": "# ledger\n", "docs/notes.md": "notes\n", "README.md": "readme\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(("changed", "says"), [
    ("tasks/northgate/history.py", "shared task code under tasks/northgate changed"),
    ("tasks/checks/state.py", "shared task code under tasks/checks changed"),
    ("tasks/packs.py", "shared task code under tasks/*.py changed"),
    ("erp_service/kernel/db.py", "the ERP changed"),
    ("orchestrator/grading/rules/holds.py", "the grader's sources changed"),
    ("agent_sandbox/client.py", "the agent side changed"),
    ("orchestrator/scenarios/cache.py", "the scenario cache's code (orchestrator/scenarios) changed"),
    ("orchestrator/scenarios/folder.py", "the scenario cache's code (orchestrator/scenarios) changed"),
    ("orchestrator/scenarios/reference.py", "the scenario cache's code (orchestrator/scenarios) changed"),
    ("erp_mcp/server.py", "the MCP server changed"),
    ("erp_web/app.py", "the ERP's web UI changed"),
    ("model_gateway/app.py", "the model gateway changed"),
])
def test_resume_after_a_source_change_is_refused_saying_what_changed(tmp_path: Path, changed, says):
    from orchestrator.campaign.sources import label_sources

    repo = _fake_repo(tmp_path / "repo")
    root = tmp_path / "runs" / "L"
    assert check_or_write_declaration(root, _decl(sources=label_sources(repo, images=False))) is False
    (repo / changed).write_text((repo / changed).read_text() + "# edited\n")
    with pytest.raises(DeclarationChanged) as err:
        check_or_write_declaration(root, _decl(sources=label_sources(repo, images=False)))
    msg = str(err.value)
    assert says in msg and "sources.parts." in msg
    assert "--label L-2" in msg  # how to start a new label


@pytest.mark.parametrize("changed", ["docs/notes.md", "README.md", "orchestrator/campaign/ledger.py",
                                     "tasks/payment_run/generator.py"])
def test_resume_after_an_unrelated_change_is_accepted(tmp_path: Path, changed):
    """The pack's own tree is `tasks.<id>.tree_sha256` (from the registry), not a shared part."""
    from orchestrator.campaign.sources import label_sources

    repo = _fake_repo(tmp_path / "repo")
    root = tmp_path / "runs" / "L"
    assert check_or_write_declaration(root, _decl(sources=label_sources(repo, images=False))) is False
    (repo / changed).write_text((repo / changed).read_text() + "# edited\n")
    assert check_or_write_declaration(root, _decl(sources=label_sources(repo, images=False))) is True


def test_an_image_change_is_refused(tmp_path: Path):
    root = tmp_path / "L"
    base = {"parts": {"erp_service": "a"}, "images": {"erp": "pb-erp:1", "agent": "pb-agent:1"}}
    check_or_write_declaration(root, _decl(sources=base))
    with pytest.raises(DeclarationChanged, match="the erp image's content changed"):
        check_or_write_declaration(root, _decl(sources={**base, "images": {"erp": "pb-erp:2", "agent": "pb-agent:1"}}))


def test_a_pack_tree_change_is_refused_saying_so(tmp_path: Path):
    root = tmp_path / "L"
    check_or_write_declaration(root, _decl())
    with pytest.raises(DeclarationChanged, match="the task pack's files changed"):
        check_or_write_declaration(root, _decl(task_info={"payment-run": {"version": "1", "tree_sha256": "b"}}))


def test_the_real_sources_cover_what_can_change_a_scenario_a_verdict_or_a_policy():
    from orchestrator.campaign.sources import label_sources

    src = label_sources()
    assert {"tasks/northgate", "tasks/checks", "tasks/*.py", "erp_service", "agent_sandbox",
            "orchestrator/scenarios", "orchestrator/grading", "erp_mcp", "erp_web", "model_gateway"} <= set(src["parts"])
    assert not any(p in src["parts"] for p in ("tasks/payment_run", "tasks/payment_run_need_to_know"))
    assert set(src["images"]) == {"base", "erp", "agent", "gateway"}
