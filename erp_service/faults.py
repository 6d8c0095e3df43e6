"""Declared transport faults (§7.1): the spec grammar and the plan that decides which request
is hit. Pure logic; the HTTP layer that applies a plan is `http/fault_layer.py`.

Grammar (comma-separated items; ``key=value`` tokens attach to the item before them):

    fail_before:POST /payment-runs/*/submit@1        the 1st matching request over the episode
    lost_response:POST /calls@2,delay=0               (`*` = one path segment, `**` = the rest)
    slow:POST /payment-runs@1,delay=130
    flaky-writes:seed=3,rate=0.1[,lost=0.5][,max=N]   a seeded share of all writes
    <name>                                            a task profile, resolved by the caller

Kinds: ``fail_before`` (503, nothing reaches the ERP), ``lost_response`` (the request commits,
the client gets the same 503), ``slow`` (commits; the real response after `delay` seconds).
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

KINDS = ("fail_before", "lost_response", "slow")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_SLOW_DELAY_S = 130.0  # longer than the erp command's 120-second timeout
#: The longest delay a `slow` fault may declare: past the longest turn budget a delay only
#: holds a request (and the ERP's worker) forever; `inf` or `nan` would hang it for good.
MAX_DELAY_S = 3600.0


class FaultSpecError(ValueError):
    exit_class = "bad_input"  # the orchestrator's exit class (orchestrator.exit_codes.Failure)
    """A fault spec that cannot be parsed; the message says which item and why."""


@dataclass
class FaultRule:
    """One explicit rule: hit the n-th request matching METHOD and the path pattern."""

    kind: str
    method: str
    pattern: str
    nth: int = 1
    delay_s: float = DEFAULT_SLOW_DELAY_S
    seen: int = 0
    regex: re.Pattern = field(init=False, repr=False)

    def __post_init__(self) -> None:
        parts = []
        for seg in self.pattern.strip("/").split("/"):
            if seg == "**":
                parts.append(".*")
            elif seg == "*":
                parts.append("[^/]+")
            else:
                parts.append(re.escape(seg))
        self.regex = re.compile("^/" + "/".join(parts) + "/?$")

    def text(self) -> str:
        """Canonical text of the rule."""
        extra = f",delay={self.delay_s:g}" if self.kind == "slow" else ""
        return f"{self.kind}:{self.method} {self.pattern}@{self.nth}{extra}"


@dataclass
class FlakyProfile:
    """A seeded share of all writes: each write is hit with probability `rate`."""

    seed: int = 0
    rate: float = 0.1
    lost: float = 0.5
    max_hits: int | None = None
    writes: int = 0
    hits: int = 0

    def text(self) -> str:
        """Canonical text of the profile."""
        extra = f",max={self.max_hits}" if self.max_hits is not None else ""
        return f"flaky-writes:seed={self.seed},rate={self.rate:g},lost={self.lost:g}{extra}"

    @staticmethod
    def _uniform(*parts: object) -> float:
        digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class FaultHit:
    """The decision for one request."""

    kind: str
    rule: str
    delay_s: float = 0.0


@dataclass
class FaultPlan:
    """Rules and profiles; `decide` is called once per request, in arrival order."""

    rules: list[FaultRule] = field(default_factory=list)
    profiles: list[FlakyProfile] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when no fault is declared (the server then installs no fault layer)."""
        return not self.rules and not self.profiles

    def text(self) -> str:
        """Canonical text of the whole plan (part of the attempt's condition identity)."""
        return ",".join([r.text() for r in self.rules] + [p.text() for p in self.profiles])

    def decide(self, method: str, path: str) -> FaultHit | None:
        """Count this request against every rule; return the fault to inject, if any."""
        method = method.upper()
        hit: FaultHit | None = None
        for rule in self.rules:
            if rule.method not in ("*", method) or not rule.regex.match(path):
                continue
            rule.seen += 1
            if rule.seen == rule.nth and hit is None:
                hit = FaultHit(rule.kind, rule.text(), rule.delay_s if rule.kind == "slow" else 0.0)
        if method in WRITE_METHODS:
            for prof in self.profiles:
                prof.writes += 1
                if prof.max_hits is not None and prof.hits >= prof.max_hits:
                    continue
                if prof._uniform(prof.seed, "w", prof.writes) < prof.rate:
                    prof.hits += 1
                    if hit is None:
                        kind = "lost_response" if prof._uniform(prof.seed, "k", prof.writes) < prof.lost \
                            else "fail_before"
                        hit = FaultHit(kind, prof.text())
        return hit


_RULE_RE = re.compile(r"^(?P<kind>[a-z_]+):(?P<method>[A-Za-z*]+)\s+(?P<path>/\S*?)(?:@(?P<nth>\d+))?$")


def parse_fault_spec(text: str | None, profiles: dict[str, str] | None = None) -> FaultPlan:
    """Parse a fault spec; names of task profiles are resolved through `profiles`.

    Raises FaultSpecError naming the item at fault.
    """
    plan = FaultPlan()
    text = (text or "").strip()
    if text in ("", "none", "clean"):
        return plan
    items: list[list[str]] = []
    for token in (t.strip() for t in text.split(",")):
        if not token:
            raise FaultSpecError(f"empty item in fault spec {text!r}")
        if "=" in token and ":" not in token and items:
            items[-1].append(token)
        else:
            items.append([token])
    for head, *params in items:
        kv: dict[str, str] = {}
        for p in params:
            k, _, v = p.partition("=")
            kv[k.strip()] = v.strip()
        if profiles and head in profiles and not params:
            sub = parse_fault_spec(profiles[head])
            plan.rules += sub.rules
            plan.profiles += sub.profiles
            continue
        if head.startswith("flaky-writes"):
            _, _, first = head.partition(":")
            if first:
                k, _, v = first.partition("=")
                kv[k.strip()] = v.strip()
            try:
                prof = FlakyProfile(seed=int(kv.pop("seed", 0)), rate=float(kv.pop("rate", 0.1)),
                                    lost=float(kv.pop("lost", 0.5)),
                                    max_hits=int(kv["max"]) if "max" in kv else None)
                kv.pop("max", None)
            except ValueError as exc:
                raise FaultSpecError(f"bad parameter in {head!r}: {exc}") from exc
            if kv:
                raise FaultSpecError(f"unknown parameter(s) {sorted(kv)} in {head!r}")
            if prof.max_hits is not None and prof.max_hits < 0:
                raise FaultSpecError(f"max must be 0 or more in {head!r}")
            if not 0 <= prof.rate <= 1 or not 0 <= prof.lost <= 1:
                raise FaultSpecError(f"rate and lost must be between 0 and 1 in {head!r}")
            plan.profiles.append(prof)
            continue
        m = _RULE_RE.match(head)
        if not m:
            known = f"; task profiles: {sorted(profiles)}" if profiles else ""
            raise FaultSpecError(
                f"cannot parse fault item {head!r}: expected KIND:METHOD /path[@n] or "
                f"flaky-writes:seed=S,rate=R{known}")
        kind = m["kind"]
        if kind not in KINDS:
            raise FaultSpecError(f"unknown fault kind {kind!r} in {head!r}; kinds: {', '.join(KINDS)}")
        nth = int(m["nth"] or 1)
        if nth < 1:
            raise FaultSpecError(f"@n must be 1 or more in {head!r}")
        delay = _delay(kv.pop("delay", None), head)
        if kv:
            raise FaultSpecError(f"unknown parameter(s) {sorted(kv)} in {head!r}")
        plan.rules.append(FaultRule(kind=kind, method=m["method"].upper(), pattern=m["path"], nth=nth,
                                    delay_s=delay))
    return plan


def _delay(text: str | None, head: str) -> float:
    """The delay of a `slow` rule in seconds: a finite number from 0 to `MAX_DELAY_S`."""
    if text is None:
        return DEFAULT_SLOW_DELAY_S
    try:
        delay = float(text)
    except ValueError:
        raise FaultSpecError(f"bad delay {text!r} in {head!r}: expected seconds, e.g. delay=130") from None
    if not math.isfinite(delay) or not 0 <= delay <= MAX_DELAY_S:
        raise FaultSpecError(f"delay {text!r} in {head!r} is out of range: "
                             f"give a number of seconds from 0 to {MAX_DELAY_S:g}")
    return delay
