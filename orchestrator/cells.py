"""Cells: `SYSTEM:TASK[+CONDITION]` — who acts, on which task pack, under which condition.

SYSTEM is a scripted policy (`oracle`, `alt`, `null`, `neg:<name>`) or the name of a command system
from a systems file. Because `neg:<name>` itself holds a colon, the task is the part after the
*last* colon. CONDITION is `clean` (the default), the name of a fault profile of the task
(`lost-writes`), or a fault spec as spec section 7.1 writes it: a profile with parameters
(`flaky-writes:seed=3,rate=0.1`) or a rule list (`lost_response:POST /payment-runs@1,fail_before:POST
/payment-runs/*/submit@1`). Whether a condition means anything is the fault parser's business
(erp_service.faults, checked by the preflight); here it is only read and written down canonically:
items split at commas and stripped, runs of white space inside an item made one space.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from agent_sandbox.systems import is_policy_name

CLEAN = "clean"
# The interface the agent is given (spec §9, issue 17): `cli` (the `erp` command and the HTTP API)
# or `mcp` (also the MCP server generated from the OpenAPI document). Written `#mcp` after the cell.
CLI, MCP = "cli", "mcp"
INTERFACES = (CLI, MCP)
# A person working the turns in the browser (spec §12): unaided, or with assistance as declared.
# Their own system names, so their attempts are never pooled with an agent's.
HUMAN_SYSTEMS = ("human", "human-assisted")
_NAME = r"[a-z0-9][a-z0-9._-]*"
_SYSTEM_RE = re.compile(rf"^(?:{_NAME}|neg:{_NAME})$")
_TASK_RE = re.compile(rf"^{_NAME}$")
# A condition's characters: a profile name, parameters, and rules (`KIND:METHOD /path/*@n`).
_CONDITION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._,=@:/* -]*$")
# Conditions that were always accepted keep their readable folder names (so their attempt ids);
# any other one is named by a readable prefix and a hash of its text (section 7.1: "a hash of the spec").
_PLAIN_CONDITION_RE = re.compile(r"^[a-z0-9][a-z0-9._,=@-]*$")
_SLUG_PREFIX_CHARS = 24


class CellError(ValueError):
    exit_class = "bad_input"  # orchestrator.exit_codes.Failure
    """A cell string that does not parse; the message says what is wrong and shows the form."""


@dataclass(frozen=True, order=True)
class Cell:
    """One cell of a campaign."""

    system: str
    task: str
    condition: str = CLEAN
    interface: str = CLI

    @property
    def is_policy(self) -> bool:
        """True for scripted policies (run from the task pack's policies.py)."""
        return is_policy_name(self.system)

    @property
    def is_human(self) -> bool:
        """True when a person works the turns in the browser (`human`, `human-assisted`)."""
        return is_human_system(self.system)

    @property
    def text(self) -> str:
        """The canonical cell text, `SYSTEM:TASK[+CONDITION]` (clean is left implicit)."""
        return str(self)

    @property
    def slug(self) -> str:
        """A folder and engine-object friendly name: `null__payment-run[__lost-writes]`."""
        base = f"{self.system.replace(':', '-')}__{self.task}"
        if self.condition != CLEAN:
            base = f"{base}__{condition_slug(self.condition)}"
        return base if self.interface == CLI else f"{base}__if-{self.interface}"

    def __str__(self) -> str:
        text = f"{self.system}:{self.task}"
        text = text if self.condition == CLEAN else f"{text}+{self.condition}"
        return text if self.interface == CLI else f"{text}#{self.interface}"


def condition_slug(condition: str) -> str:
    """A condition as a folder and engine-object friendly name (`[a-z0-9._-]`)."""
    if _PLAIN_CONDITION_RE.match(condition):
        return condition.replace(",", "_").replace("=", "-").replace("@", "-")
    readable = re.sub(r"[^a-z0-9.]+", "-", condition.lower()).strip("-.")[:_SLUG_PREFIX_CHARS].strip("-.")
    digest = hashlib.sha256(condition.encode("utf-8")).hexdigest()[:10]
    return f"{readable}-{digest}" if readable else digest


def normalize_condition(text: str) -> str:
    """The canonical text of a condition: comma items stripped, inner white space one space.
    Raises `CellError` for an empty item."""
    items = [" ".join(item.split()) for item in text.split(",")]
    if any(not item for item in items):
        raise CellError(f"condition {text!r} has an empty item between commas")
    return ",".join(items)


def is_human_system(system: str) -> bool:
    """Whether `system` is a person in the browser rather than an agent or a scripted policy."""
    return system in HUMAN_SYSTEMS


def parse_cell(text: str) -> Cell:
    """Parse `SYSTEM:TASK[+CONDITION][#INTERFACE]`; raise `CellError` naming the faulty part."""
    form = ("expected SYSTEM:TASK[+CONDITION][#INTERFACE], e.g. oracle:payment-run, "
            "neg:skip-check:payment-run+lost-writes, oracle:payment-run+flaky-writes:seed=3,rate=0.1, "
            "oracle:payment-run+lost_response:POST /payment-runs@1 or claude-code:payment-run#mcp")
    if not isinstance(text, str) or not text.strip():
        raise CellError(f"empty cell; {form}")
    raw = text.strip()
    head, hash_sign, interface = raw.partition("#")
    if hash_sign and interface not in INTERFACES:
        raise CellError(f"cell {raw!r}: interface {interface!r} is not one of {', '.join(INTERFACES)}; {form}")
    body, plus, condition = head.partition("+")
    if any(c.isspace() for c in body + hash_sign + interface):
        raise CellError(f"cell {raw!r} contains whitespace outside its condition; {form}")
    condition = condition.strip()
    if plus and not condition:
        raise CellError(f"cell {raw!r} has '+' but no condition; {form}")
    if "+" in condition:
        raise CellError(f"cell {raw!r} has more than one '+'; {form}")
    system, colon, task = body.rpartition(":")
    if not colon:
        raise CellError(f"cell {raw!r} has no ':' between system and task; {form}")
    if not system:
        raise CellError(f"cell {raw!r} has an empty system; {form}")
    if not task:
        raise CellError(f"cell {raw!r} has an empty task; {form}")
    if system == "neg":
        raise CellError(f"cell {raw!r}: a negative control needs a name (neg:<name>); {form}")
    if not _SYSTEM_RE.match(system):
        raise CellError(
            f"cell {raw!r}: system {system!r} must be lower-case letters, digits, '.', '_' or '-' "
            f"(or neg:<name>); {form}"
        )
    if not _TASK_RE.match(task):
        raise CellError(f"cell {raw!r}: task {task!r} must be lower-case letters, digits, '.', '_' or '-'; {form}")
    try:
        condition = normalize_condition(condition) if condition else CLEAN
    except CellError as exc:
        raise CellError(f"cell {raw!r}: {exc}; {form}") from None
    if not _CONDITION_RE.match(condition):
        raise CellError(f"cell {raw!r}: condition {condition!r} must start with a letter or digit and hold only "
                        f"letters, digits, spaces and . _ , = @ : / * -; {form}")
    return Cell(system=system, task=task, condition=condition, interface=interface or CLI)
