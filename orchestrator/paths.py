"""What one attempt's folder holds on the host (contracts §9); where it is, is its identity's."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.identity import AttemptIdentity


@dataclass(frozen=True)
class AttemptPaths:
    """The host folder of one attempt::

        runs/<label>/<cell.slug>/seed-<n>/rep-<k>/
        ├── attempt.json      identity: cell, task version, seed, condition, images, config
        ├── result.json       verdict, checks, turns, timings, error (written last)
        ├── turns.jsonl       one line per turn: date, exit code, timed_out, duration, usage
        ├── projections/      the agent's projections beside the reference (written by the grader)
        ├── audit.jsonl       audit events, streamed from /control/audit while the attempt runs
        ├── faults.jsonl      fault records, streamed from /control/faults
        ├── final.db          the frozen database (GET /control/snapshot after the last flush)
        ├── workspace/        the agent's workspace, copied out (symlinks never followed)
        ├── turns/<n>/        what the turn saw and wrote: prompt.txt, system.json,
        │                     context.json, out/ (stdout.txt, stderr.txt, usage.json, ...)
        └── logs/             <service>.log (erp.log, ...), turn-<n>.log, runtime.jsonl

    Nothing of this folder is ever visible to the agent.
    """

    root: Path

    @classmethod
    def for_identity(cls, runs_root: Path, label: str, identity: AttemptIdentity) -> AttemptPaths:
        """The folder of the attempt `identity` of `label` under `runs_root` (the identity's)."""
        return cls(identity.folder(runs_root, label))

    @property
    def attempt_json(self) -> Path:
        return self.root / "attempt.json"

    @property
    def result_json(self) -> Path:
        return self.root / "result.json"

    @property
    def turns_jsonl(self) -> Path:
        return self.root / "turns.jsonl"

    @property
    def projections(self) -> Path:
        return self.root / "projections"

    @property
    def audit_jsonl(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def faults_jsonl(self) -> Path:
        return self.root / "faults.jsonl"

    @property
    def final_db(self) -> Path:
        return self.root / "final.db"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def erp_log(self) -> Path:
        return self.service_log("erp")

    def service_log(self, name: str) -> Path:
        """The output of the sandbox service `name` (logs/erp.log, logs/gateway.log, ...)."""
        return self.logs / f"{name}.log"

    @property
    def runtime_log(self) -> Path:
        return self.logs / "runtime.jsonl"

    def turn_dir(self, n: int) -> Path:
        """Host copy of the turn directory of turn `n` (contracts §8)."""
        return self.root / "turns" / str(n)

    def turn_log(self, n: int) -> Path:
        return self.logs / f"turn-{n}.log"

    def prepare(self) -> None:
        """Create a fresh folder; a previous run's folder is moved aside under `.superseded/`.

        The campaign decides whether an attempt must run again (it skips finished ones); when
        it does, the old record is kept for inspection rather than overwritten.
        """
        if self.root.exists():
            label_root = self.root.parents[2]
            stamp = time.strftime("%Y%m%dT%H%M%S")
            name = f"{self.root.parent.parent.name}.{self.root.parent.name}.{self.root.name}.{stamp}"
            aside = label_root / ".superseded" / name
            aside.parent.mkdir(parents=True, exist_ok=True)
            self.root.rename(aside)
        self.root.mkdir(parents=True)
        self.logs.mkdir()
        (self.root / "turns").mkdir()
