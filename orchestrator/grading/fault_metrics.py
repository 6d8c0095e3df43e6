"""`fault_metrics` under a fault condition (§7.1): diagnostic numbers, never a verdict.

- faults_injected, by_kind: the fault records of `faults.jsonl`;
- committed_behind_a_failure: writes that committed while the client saw a failure
  (a lost response, or a slow one the client gave up on);
- faulted_requests_resent: faults followed by a later request of the agent with the same method
  and path and the same Idempotency-Key or the same body (`resent_with_key` of them with a key);
- duplicates: the findings of `duplicate_effect` (computed by the grader).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from orchestrator.grading.audit import AuditContext


def load_faults(path: Path | None) -> list[dict[str, Any]]:
    """Fault records in sequence order ([] when there is no file)."""
    if path is None or not Path(path).exists():
        return []
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line))
    out.sort(key=lambda r: r.get("seq") or 0)
    return out


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _body_hashes(ev: dict[str, Any]) -> set[str]:
    """Hashes the fault layer may have recorded for this request's body.

    bb-erp's fault layer hashes the body as sorted, compact, ASCII-escaped JSON (empty body:
    empty bytes); the UTF-8 form and the idempotency fingerprint are accepted too.
    """
    req = ev.get("request")
    ascii_form = json.dumps(req, sort_keys=True, separators=(",", ":"), default=str)
    body = _canonical(req)
    out = {hashlib.sha256(ascii_form.encode()).hexdigest(), hashlib.sha256(body.encode()).hexdigest(),
           hashlib.sha256(f"{ev.get('method')} {ev.get('path')} {body}".encode()).hexdigest()}
    if req in (None, {}):
        out.add(hashlib.sha256(b"").hexdigest())
    return out


def fault_metrics(faults: list[dict[str, Any]], ctx: AuditContext, duplicates: list | None) -> dict[str, Any]:
    """The metrics of one faulted attempt."""
    by_kind: dict[str, int] = {}
    for f in faults:
        by_kind[f.get("kind", "?")] = by_kind.get(f.get("kind", "?"), 0) + 1
    behind = sum(
        1 for f in faults
        if f.get("committed") and (f.get("kind") == "slow" or (f.get("client_status") or 0) >= 500)
    )
    agent = ctx.agent_events()
    resent = with_key = 0
    observed = 0
    for f in faults:
        after: int = f["audit_after"] if f.get("audit_after") is not None else (f.get("audit_before") or 0)
        later = [e for e in agent
                 if (e.get("id") or 0) > after and e.get("method") == f.get("method") and e.get("path") == f.get("path")]
        matches = []
        for e in later:
            if f.get("idem_key") and e.get("idem_key") == f.get("idem_key"):
                matches.append((e, True))
            elif f.get("body_sha256") and f["body_sha256"] in _body_hashes(e):
                matches.append((e, False))
        if matches:
            resent += 1
            observed += len(matches)
            if any(k for _, k in matches):
                with_key += 1
    dups = duplicates or []
    return {
        "faults_injected": len(faults),
        "by_kind": dict(sorted(by_kind.items())),
        "committed_behind_a_failure": behind,
        "faulted_requests_resent": resent,
        "resent_with_key": with_key,
        "resends_observed": observed,
        "duplicates": len(dups),
        "duplicate_detail": [d.message for d in dups[:10]],
    }
