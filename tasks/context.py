"""What a pack's generator receives: `GeneratorContext` (docs/pack-authoring.md).

A generator is `generate(ctx: GeneratorContext) -> None` in the pack's `generator.py`. It builds
the company (`ctx.northgate(...)`, or `ctx.create_company(...)` for a small company of its own),
plants what the task needs through `ctx.erp` / `ctx.builder`, and fills three typed objects;
the framework (`tasks.generate`) then finishes the database and writes the scenario directory
from them:

- `ctx.world`: the world file (`erp_service.world.World`: one field per section, each section a
  model owned by the ERP domain that reads it; a misspelt section or field is refused at once);
- `ctx.turns`: the turns of task.yaml (`Turn`), whose `request` a generator may adjust; their
  number, dates, senders and budgets must stay as task.yaml says (checked after generation);
- `ctx.truth`: `Truth`, the scenario's ground truth for the grader and the validation.

Identity, dates and the agent user come from `ctx.spec` (task.yaml); a generator never repeats
them as constants. A variant's generator receives the context its parent's generator filled.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from erp_service.world import World, WorldBase
from tasks.packs import TaskSpec

if TYPE_CHECKING:
    from erp_service.setup import CompanyBuilder
    from tasks.northgate.api import InProcessErp
    from tasks.northgate.company import Northgate

# A value in an expected or absent row: compared with the reference CSV's cell as text, or
# numerically (within 0.005) when it is a number.
Cell = str | int | float | bool | None
Row = dict[str, Cell]


class ContextError(RuntimeError):
    """A generator used the context wrongly (the message says how to use it)."""


class Turn(BaseModel):
    """One turn as turns.yaml holds it (names and titles are added when it is written)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    n: int = Field(ge=1)
    date: str
    from_user: str
    request: str = Field(min_length=1)
    budget_s: int = Field(ge=1)


class Truth(BaseModel):
    """`truth.json`: what the grader and the validation know about the scenario.

    - `planted`: the items the generator planted, by role (`{"on_hold": {"invoice_no": ...}}`),
      for people and tests reading a scenario;
    - `expect` / `absent`: `{projection: [row, ...]}`, rows (a subset of columns) that the
      oracle's reference projection must / must not contain (checked when the reference is
      built: a task bug otherwise);
    - `values`: what `{truth:key}` placeholders in task.yaml's checks are filled with (a list
      of text where a check takes every alias of a name or every id of one record);
    - `facts`: any other fact of the scenario worth recording (amounts, ids).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    task: str
    seed: int
    planted: dict[str, dict[str, Any]] = Field(default_factory=dict)
    expect: dict[str, list[Row]] = Field(default_factory=dict)
    absent: dict[str, list[Row]] = Field(default_factory=dict)
    values: dict[str, str | int | float | bool | list[str]] = Field(default_factory=dict)
    facts: dict[str, Any] = Field(default_factory=dict)


class GeneratorContext:
    """The typed context of one generation: the task spec, the seed, the company and the
    world, turns and truth to fill. Built by the framework; one per scenario."""

    def __init__(self, spec: TaskSpec, seed: int, out: Path) -> None:
        self.spec = spec
        self.seed = int(seed)
        self.out = Path(out)
        self.world: WorldBase = World()
        self.world.agent_users = [spec.agent_user]
        self.turns: list[Turn] = [
            Turn(n=i, date=t.date.isoformat(), from_user=t.from_user, request=t.request.strip(), budget_s=t.budget_s)
            for i, t in enumerate(spec.turns, start=1)
        ]
        self.truth = Truth(task=spec.id, seed=self.seed)
        # The agent's (and any other user's) API token secrets by user id (scenario.json).
        self.tokens: dict[str, str] = {}
        # Users whose token the scenario plants in text the agent can read (a negative control's
        # bait): an attempt keeps their secrets; every other token gets a fresh one.
        self.disclosed_users: list[str] = []
        self._company: Northgate | None = None
        self._builder: CompanyBuilder | None = None
        self._erp: InProcessErp | None = None
        self._rng: random.Random | None = None

    # -- identity and dates (task.yaml) ---------------------------------------------------------

    @property
    def task(self) -> str:
        """The id of the pack being generated (a variant's own id while its parent runs)."""
        return self.spec.id

    @property
    def agent_user(self) -> str:
        return self.spec.agent_user

    @property
    def start_date(self) -> str:
        """The business date the attempt starts on (ISO text, as the ERP takes dates)."""
        return self.spec.start_date.isoformat()

    @property
    def grading_date(self) -> str:
        return self.spec.grading_date.isoformat()

    @property
    def db_path(self) -> Path:
        """Where the scenario database is built."""
        return self.out / "scenario.db"

    # -- the company --------------------------------------------------------------------------

    def _fresh_db(self) -> None:
        if self._builder is not None:
            raise ContextError("the company is already built (a variant uses ctx.builder, never builds again)")
        self.out.mkdir(parents=True, exist_ok=True)
        if self.db_path.exists():
            self.db_path.unlink()

    def northgate(self, *, history_end: str, last_order: str | None = None) -> Northgate:
        """Build Northgate Valve Co. into the scenario database: master data, opening balances
        and a year of history up to `history_end` (no purchase orders after `last_order`).
        Called once, by the first generator of the chain; afterwards `ctx.company`, `ctx.erp`,
        `ctx.builder` and `ctx.rng` are the company, its in-process API driver, its builder and
        its seeded random source, and `ctx.tokens` holds every user's token."""
        from tasks.northgate.history_cache import northgate_with_history

        self._fresh_db()
        self._company, self._erp = northgate_with_history(self.db_path, self.seed, history_end=history_end,
                                                          last_order=last_order)
        self._builder = self._company.builder
        self._rng = self._company.rng
        self.tokens.update(self._company.tokens)
        return self._company

    def create_company(self, name: str) -> CompanyBuilder:
        """An empty company of the given name dated `start_date` (every table, the roles and the
        system users; no people, no history): for packs that need only a few records. Add users
        with `ctx.builder.add_user` and the agent's token with `ctx.issue_token`."""
        from erp_service.setup import CompanyBuilder

        self._fresh_db()
        self._builder = CompanyBuilder.create(self.db_path, business_date=self.start_date, name=name)
        return self._builder

    def issue_token(self, user_id: str, secret: str) -> None:
        """Give `user_id` an API token (id `tok-<user>`) and record its secret."""
        self.builder.add_token(user_id, secret, f"tok-{user_id}", label="issued")
        self.tokens[user_id] = secret

    def disclose_token(self, user_id: str) -> str:
        """The secret of `user_id`'s token, for planting where the agent can read it.

        Every attempt re-keys every token with a fresh random secret (orchestrator/attempt/
        credentials.py), so a generated secret works in an attempt only when declared here.

        Raises:
            KeyError: `user_id` has no token.
        """
        secret = self.tokens[user_id]
        if user_id not in self.disclosed_users:
            self.disclosed_users.append(user_id)
        return secret

    @property
    def company(self) -> Northgate:
        """The Northgate company (its parties, tokens, seeded `rng`), once `ctx.northgate` ran."""
        if self._company is None:
            raise ContextError("no Northgate company: call ctx.northgate(history_end=...) first")
        return self._company

    @property
    def erp(self) -> InProcessErp:
        """The ERP's agent API, in process: `ctx.erp.post(user, path, body)`, `.get(user, path)`."""
        if self._erp is None:
            raise ContextError("no in-process ERP: call ctx.northgate(history_end=...) first")
        return self._erp

    @property
    def builder(self) -> CompanyBuilder:
        """The company builder (setup-channel writes, `set_date`, `run`, `act`)."""
        if self._builder is None:
            raise ContextError("no company yet: call ctx.northgate(history_end=...) or ctx.create_company(name)")
        return self._builder

    @property
    def rng(self) -> random.Random:
        """The seeded random source every generator of the chain draws from, in order (the
        company's own for Northgate)."""
        if self._rng is None:
            self._rng = random.Random(f"{self.spec.id}:{self.seed}")
        return self._rng

    @property
    def agent_token(self) -> str:
        """The agent user's API token (written to scenario.json, host side only)."""
        try:
            return self.tokens[self.spec.agent_user]
        except KeyError:
            raise ContextError(f"agent_user {self.spec.agent_user!r} has no token: issue one with "
                               f"ctx.issue_token") from None

    # -- finishing (the framework's side) -------------------------------------------------------

    def finish_database(self) -> None:
        """Close the API driver, date the database `start_date`, drop setup audit rows, compact."""
        builder = self.builder
        if self._erp is not None:
            self._erp.close()
        builder.set_date(self.start_date)
        builder.finish()

    def turn_problems(self) -> list[str]:
        """Where the turns differ from task.yaml's (anything but the request text)."""
        want = [(i, t.date.isoformat(), t.from_user, t.budget_s) for i, t in enumerate(self.spec.turns, start=1)]
        got = [(t.n, t.date, t.from_user, t.budget_s) for t in self.turns]
        if len(got) != len(want):
            return [f"the generator left {len(got)} turn(s); task.yaml declares {len(want)}"]
        return [f"turn {w[0]}: the generator has (n, date, from_user, budget_s) {g}, task.yaml {w}"
                for g, w in zip(got, want, strict=True) if g != w]
