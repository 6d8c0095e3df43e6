"""`versions.json` and `conditions.json` of a publication bundle: what ran, under what.

Versions: each task's version, tree hash and handbook hash; the grader's and every shared
part's tree hash (the campaign's `sources`); the images by role, each with its content-hash tag
and the digests (engine image ids, `sha256:…`) the attempts recorded running it — and, where the
publishing host's engine has the tag, that engine's id; the orchestrator's git revision; the system declarations; the models and the gateway's price
table (version, hash and prices); Python. Conditions: each condition's fault specification and
description, the per-turn budgets of each task, the timeouts, seeds, repetitions, infra retries
and the model budgets.
"""
from __future__ import annotations

import hashlib
import platform
from pathlib import Path
from typing import Any

import yaml

from orchestrator.cells import CLEAN
from orchestrator.hashing import tree_sha256


def _image_ids(tags: dict[str, str]) -> dict[str, str | None] | str:
    """Tag -> image id in the local engine (None: not there), or why no engine answered (a
    publishing host needs no engine: the digests the attempts recorded are the record)."""
    try:
        import docker

        client = docker.from_env(version="1.41", timeout=10)
        client.ping()
    except Exception as exc:  # noqa: BLE001 — publishing needs no engine; say why ids are missing
        return f"no container engine to read image ids from ({type(exc).__name__})"
    out: dict[str, str | None] = {}
    try:
        for tag in sorted(set(tags.values())):
            try:
                out[tag] = client.images.get(tag).id
            except Exception:  # noqa: BLE001 — an image built elsewhere: the recorded digests stand
                out[tag] = None
    finally:
        client.close()
    return out


def image_versions(tags: dict[str, str], recorded: dict[str, list[str]], *, backend: str | None = None,
                   engine_ids: dict[str, str | None] | str | None = None) -> dict[str, Any]:
    """The images of a campaign by role and digest.

    `tags`: role -> the content-hash tag the campaign declared (campaign.json `sources.images`);
    `recorded`: image reference -> the digests the attempts recorded running it (provenance
    `images`, from each attempt.json); `engine_ids`: tag -> the publishing host's image id, or a
    note why there is none. An image the attempts ran that the declaration does not name (a
    system's own image) is listed under `other`. On a docker campaign a declared erp or agent
    image no attempt recorded a digest for is named in `missing_digests` (never silently)."""
    roles: dict[str, Any] = {}
    for role, tag in sorted(tags.items()):
        entry: dict[str, Any] = {"tag": tag, "digests": sorted(recorded.get(tag) or [])}
        if isinstance(engine_ids, dict):
            entry["engine_id"] = engine_ids.get(tag)
        roles[role] = entry
    declared = set(tags.values())
    other = {ref: sorted(ids) for ref, ids in sorted(recorded.items()) if ref not in declared}
    out: dict[str, Any] = {"by_role": roles, "other": other}
    if backend == "docker":
        out["missing_digests"] = [role for role in ("erp", "agent") if role in roles and not roles[role]["digests"]]
    if isinstance(engine_ids, str):
        out["engine_note"] = engine_ids
    return out


def price_table(path: Path | None = None) -> dict[str, Any]:
    """The gateway's price table as published: version, SHA-256 of the file and the prices."""
    from model_gateway.prices import DEFAULT_TABLE

    path = path or DEFAULT_TABLE
    raw = path.read_bytes()
    doc = yaml.safe_load(raw) or {}
    return {"file": path.name, "sha256": hashlib.sha256(raw).hexdigest(), "version": doc.get("version"),
            "models": doc.get("models")}


def _arg(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def system_definitions(declaration: dict[str, Any], systems_file: Path | None = None,
                       model_access: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Each system as declared (its hash) beside its definition, read again from the systems and
    model-access files the campaign was started with; `matches_declaration` says whether the
    definition still hashes to what the campaign recorded (a changed file is never passed off)."""
    from agent_sandbox.systems import BUILTIN_SYSTEMS, load_systems
    from orchestrator.hashing import canonical_json
    from orchestrator.model_access import load_model_access

    declared = declaration.get("systems") or {}
    argv = [str(a) for a in (declaration.get("volatile") or {}).get("argv") or []]
    systems_path = systems_file or (Path(a) if (a := _arg(argv, "--systems")) else None)
    access_paths = list(model_access) or ([Path(a)] if (a := _arg(argv, "--model-access")) else [])
    out: dict[str, Any] = {}
    defined: dict[str, Any] = {}
    accesses: list[dict[str, Any]] = []
    note = None
    try:
        defined = dict(load_systems(systems_path)) if systems_path else {}
        accesses = [load_model_access(p).identity() for p in access_paths]
    except Exception as exc:  # noqa: BLE001 — the files may be gone: the declared hashes stand
        note = f"systems or model-access file not readable here: {type(exc).__name__}"
    for name, entry in sorted(declared.items()):
        if not isinstance(entry, dict) or entry.get("kind") != "command":
            out[name] = {"declared": entry}
            continue
        spec = defined.get(name) or BUILTIN_SYSTEMS.get(name)
        if spec is None:
            out[name] = {"declared": entry, "definition": None, "note": note or "definition not found"}
            continue
        base = spec.model_dump(mode="json")
        # The model access that reproduces the declared hash is the one the campaign ran with.
        candidates = [dict(base, model_access=a) for a in accesses] if spec.calls_model else [base]
        match = next((d for d in candidates if hashlib.sha256(canonical_json(d).encode()).hexdigest() == entry.get("sha256")),
                     None)
        out[name] = {"declared": entry, "definition": match or (candidates[0] if candidates else base),
                     "matches_declaration": match is not None}
    return out


def build_versions(declaration: dict[str, Any], provenance: dict[str, Any], *, engine: bool = True,
                   systems_file: Path | None = None, model_access: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Every version a reader needs to reproduce the campaign."""
    from tasks.registry import load_task

    tasks = {}
    for slug, info in sorted((declaration.get("tasks") or {}).items()):
        entry = dict(info)
        try:
            pack = load_task(slug)
            handbook = pack.dir / "handbook"
            entry["handbook_sha256"] = tree_sha256(handbook) if handbook.is_dir() else None
        except Exception as exc:  # noqa: BLE001 — a pack no longer here: its recorded hashes stand
            entry["handbook_sha256"] = None
            entry["note"] = f"pack not loadable here: {type(exc).__name__}"
        tasks[slug] = entry
    sources = declaration.get("sources") or {}
    tags = sources.get("images") or {}
    systems = system_definitions(declaration, systems_file, model_access)
    models = {name: (s.get("definition") or {}).get("model_access") for name, s in systems.items()
              if (s.get("definition") or {}).get("model_access")}
    prices_path = None
    for access in models.values():
        if isinstance(access, dict) and access.get("prices"):
            prices_path = Path(access["prices"])
    return {
        "schema": 1,
        "label": declaration.get("label"),
        "orchestrator": provenance.get("project"),
        "tasks": tasks,
        "grader": (sources.get("parts") or {}).get("orchestrator/grading"),
        "parts": sources.get("parts"),
        "images": image_versions(tags, provenance.get("images") or {}, backend=declaration.get("backend"),
                                 engine_ids=_image_ids(tags) if engine and tags else None),
        "systems": systems,
        "models": models,
        "price_table": price_table(prices_path if prices_path and prices_path.is_file() else None),
        "backend": declaration.get("backend"),
        "isolation": declaration.get("isolation"),
        "python": platform.python_version(),
    }


def build_conditions(declaration: dict[str, Any], systems_file: Path | None = None,
                     model_access: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The conditions and budgets every attempt ran under."""
    from tasks.registry import load_task

    conditions: dict[str, Any] = {}
    budgets: dict[str, Any] = {}
    for slug in sorted(declaration.get("tasks") or {}):
        try:
            pack = load_task(slug)
        except Exception as exc:  # noqa: BLE001
            budgets[slug] = {"note": f"pack not loadable here: {type(exc).__name__}"}
            continue
        budgets[slug] = {"turns": [{"n": i + 1, "date": str(t.date), "budget_s": t.budget_s}
                                   for i, t in enumerate(pack.spec.turns)]}
        for cond in declaration.get("conditions") or []:
            if cond == CLEAN:
                continue
            profile = (pack.fault_profiles or {}).get(cond)
            entry = conditions.setdefault(cond, {})
            entry[slug] = ({"faults": profile.faults, "description": profile.description} if profile is not None
                           else {"faults": cond, "description": "a fault specification given inline"})
    systems = system_definitions(declaration, systems_file, model_access)
    model_budgets = {n: (s.get("definition") or {}).get("model_access", {}).get("budget") for n, s in systems.items()
                     if (s.get("definition") or {}).get("model_access")}
    volatile = declaration.get("volatile") or {}
    return {
        "schema": 1,
        "conditions": {CLEAN: "no faults injected", **conditions},
        "seeds": declaration.get("seeds"),
        "reps": declaration.get("reps"),
        "turn_budgets": budgets,
        "timeouts": declaration.get("timeouts"),
        "infra_retries": volatile.get("infra_retries"),
        "model_budgets": model_budgets,
        "perturbation_schedule": "the fault specification of each condition above, applied per attempt from the first request",
    }
