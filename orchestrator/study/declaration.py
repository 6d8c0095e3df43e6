"""The study declaration (issue 39, item 1): what a campaign will be, fixed before it runs.

`orchestrate declare` writes it (`study.json`) and prints its SHA-256 (the user may timestamp that
hash by any outside means). It holds what the label's campaign.json will hold that decides the
results — cells and conditions, the task packs' versions and trees, the systems' definitions,
the shared sources (ERP, grader, generators, policies) and the images' content tags, backend and
isolation, repetitions, the public seeds — and what campaign.json does not: the budgets (turn
budget, infrastructure retries), the limits (the model access declaration's SHA-256: upstream,
models, cost budget), the analysis plan, and the sealed seeds' commitment (orchestrator/study/seeds.py).

`orchestrate campaign --declared study.json` builds the same material from its own flags and
this checkout and refuses any difference before anything is prepared; the label keeps the file
byte for byte, its campaign.json names its hash (`study`), and the publication bundle carries it,
so `export --verify` checks that the results followed it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from orchestrator.hashing import canonical_json, file_sha256, sha256_bytes

STUDY_FILE = "study.json"
REVEAL_FILE = "reveal.json"
STUDY_KIND = "pb-study-declaration"
STUDY_SCHEMA = 1
# The keys a study shares with campaign.json (compared by `export --verify`).
SHARED_KEYS = ("cells", "conditions", "reps", "tasks", "systems", "sources", "backend", "isolation")
DEFAULT_ANALYSIS: dict[str, Any] = {
    "metrics": ["pass_rate", "pass^k", "breach_rate", "probes", "attempt_time"],
    "comparisons": "paired: every two cells of one task and condition, every two systems of one condition "
                   "(Newcombe interval, exact McNemar)",
    "convention": {"p90": "nearest-rank", "excluded": "infra_error and task_error are counted apart, never scored",
                   "conditions": "never pooled"},
}


class StudyError(ValueError):
    """A study file that cannot be read, or a campaign that does not follow its declaration."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure


def study_sha256(study: dict[str, Any]) -> str:
    """The declaration's hash: SHA-256 of its canonical JSON."""
    return sha256_bytes(canonical_json(study).encode())


def load_analysis(path: Path | None) -> dict[str, Any]:
    """The analysis plan: a YAML mapping with `metrics`, `comparisons` and `convention` (or the
    default plan, which is what `orchestrate campaign` computes)."""
    if path is None:
        return dict(DEFAULT_ANALYSIS)
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise StudyError(f"--analysis {path}: cannot be read ({exc})") from None
    if not isinstance(data, dict) or set(data) != {"metrics", "comparisons", "convention"}:
        raise StudyError(f"--analysis {path}: a mapping of exactly metrics, comparisons and convention")
    return data


def limits_of(model_access: str | None) -> dict[str, Any]:
    """The limits a campaign runs under that campaign.json does not hold."""
    return {"model_access_sha256": file_sha256(Path(model_access)) if model_access else None}


def build_study(declaration: dict[str, Any], *, public_seeds: list[int], turn_s: float | None, infra_retries: int,
                model_access: str | None, analysis: dict[str, Any], sealed: dict[str, Any] | None) -> dict[str, Any]:
    """The study declaration of a campaign whose campaign.json content is `declaration`."""
    study: dict[str, Any] = {"kind": STUDY_KIND, "schema": STUDY_SCHEMA}
    for key in SHARED_KEYS:
        study[key] = declaration.get(key)
    study.update({
        "seeds": sorted(public_seeds),
        "sealed_seeds": sealed,
        "budgets": {"turn_s": turn_s, "infra_retries": infra_retries},
        "limits": limits_of(model_access),
        "analysis": analysis,
    })
    return json.loads(canonical_json(study))  # JSON-safe, as it will be read back


def write_study(path: Path, study: dict[str, Any]) -> str:
    """Write the declaration (indented); returns its hash."""
    path.write_text(json.dumps(study, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return study_sha256(study)


def load_study(path: Path) -> dict[str, Any]:
    """Read a study declaration (`StudyError` if it is not one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise StudyError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != STUDY_KIND:
        raise StudyError(f"{path}: not a study declaration")
    if data.get("schema") != STUDY_SCHEMA:
        raise StudyError(f"{path}: study schema {data.get('schema')!r}, this checkout reads {STUDY_SCHEMA}")
    return data


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(f"{sub}: not declared ({canonical_json(new[key])})")
            elif key not in new:
                out.append(f"{sub}: declared {canonical_json(old[key])}, missing now")
            else:
                _diff(old[key], new[key], sub, out)
    elif old != new:
        out.append(f"{path}: declared {canonical_json(old)}, now {canonical_json(new)}")


def study_differences(declared: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Every difference between the declared study and the one a campaign would run."""
    out: list[str] = []
    _diff(declared, current, "", out)
    return out


def check_against_campaign(study: dict[str, Any], campaign: dict[str, Any], revealed: list[int] | None) -> list[str]:
    """Problems of a label (campaign.json content) against its study declaration: the shared keys,
    the turn budget, the seeds (public ones, plus the revealed sealed ones), and the hash the
    campaign recorded. `revealed` is None when the study has no sealed seeds."""
    problems: list[str] = []
    record = campaign.get("study") or {}
    if record.get("sha256") != study_sha256(study):
        problems.append("campaign.json does not name this study declaration's hash (study.sha256)")
    current = {key: json.loads(canonical_json(campaign.get(key))) for key in SHARED_KEYS}
    problems += study_differences({key: study.get(key) for key in SHARED_KEYS}, current)
    if (campaign.get("timeouts") or {}).get("turn_s") != (study.get("budgets") or {}).get("turn_s"):
        problems.append("budgets.turn_s: the campaign's turn budget is not the declared one")
    if record.get("budgets") != study.get("budgets") or record.get("limits") != study.get("limits"):
        problems.append("budgets/limits: the campaign recorded other budgets or limits than the declared ones")
    want = sorted(set(study.get("seeds") or []) | set(revealed or []))
    if sorted(campaign.get("seeds") or []) != want:
        problems.append(f"seeds: the campaign used {sorted(campaign.get('seeds') or [])}, the declaration "
                        f"(with the revealed sealed seeds) gives {want}")
    return problems
