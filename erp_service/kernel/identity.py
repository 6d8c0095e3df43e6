"""Who is acting: users, roles, permissions, tokens, and the `Actor` every call carries."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import Column, Integer, String, Table, Text

from .errors import forbidden
from .schema import metadata

users = Table(
    "users", metadata,
    Column("id", String, primary_key=True),          # e.g. hannah.brooks, sys-bank
    Column("name", String, nullable=False),
    Column("title", String),
    Column("kind", String, nullable=False),           # staff | system | external
    Column("department_id", String),
    Column("manager_id", String),
    Column("email", String),
    Column("phone", String),
    Column("active", Integer, nullable=False, default=1),
)

roles = Table(
    "roles", metadata,
    Column("id", String, primary_key=True),
    Column("description", Text, nullable=False),
)

role_permissions = Table(
    "role_permissions", metadata,
    Column("role_id", String, primary_key=True),
    Column("permission", String, primary_key=True),   # action code, `prefix.*`, or `*`
)

user_roles = Table(
    "user_roles", metadata,
    Column("user_id", String, primary_key=True),
    Column("role_id", String, primary_key=True),
)

tokens = Table(
    "tokens", metadata,
    Column("id", String, primary_key=True),            # recorded in the audit log
    Column("secret", String, nullable=False, unique=True),
    Column("user_id", String, nullable=False),
    Column("label", String),
)

CHANNELS = ("api", "sim", "setup")


@dataclass(frozen=True)
class Actor:
    """The user on whose behalf a request runs, with the permissions of their roles."""

    user_id: str
    roles: frozenset[str] = field(default_factory=frozenset)
    permissions: frozenset[str] = field(default_factory=frozenset)
    token_id: str | None = None
    channel: str = "api"

    def can(self, permission: str) -> bool:
        """True if one of the actor's roles grants `permission` (exactly or by wildcard)."""
        if "*" in self.permissions or permission in self.permissions:
            return True
        parts = permission.split(".")
        return any(".".join(parts[:i]) + ".*" in self.permissions for i in range(1, len(parts)))

    def require(self, permission: str) -> None:
        """Raise 403 forbidden unless the actor holds `permission`."""
        if not self.can(permission):
            raise forbidden(f"Your role does not allow {permission}.", permission=permission)


def load_actor(conn, user_id: str, *, token_id: str | None = None, channel: str = "api") -> Actor | None:
    """Build the Actor for `user_id` from the database, or None if the user does not exist."""
    user = conn.execute(users.select().where(users.c.id == user_id)).mappings().first()
    if user is None or not user["active"]:
        return None
    role_ids = frozenset(r for (r,) in conn.execute(
        user_roles.select().with_only_columns(user_roles.c.role_id).where(user_roles.c.user_id == user_id)))
    perms = frozenset(p for (p,) in conn.execute(
        role_permissions.select().with_only_columns(role_permissions.c.permission)
        .where(role_permissions.c.role_id.in_(role_ids)))) if role_ids else frozenset()
    return Actor(user_id=user_id, roles=role_ids, permissions=perms, token_id=token_id, channel=channel)


#: The shortest secret `rekey_tokens` accepts: a re-keyed token must not be guessable.
MIN_SECRET_CHARS = 32


def rekey_tokens(conn, new_secrets: Mapping[str, str]) -> None:
    """Give the tokens named in `new_secrets` (token id -> secret) those secrets.

    The orchestrator re-keys every token of an attempt's copy of the database before the ERP
    serves it: the scenario's secrets are reproducible from its seed, so an agent that knew the
    scheme could compute anyone's. Token ids (which the audit log records) stay as they were.

    Raises:
        ValueError: an id that is no token, a secret shorter than MIN_SECRET_CHARS, or one
            secret given twice.
    """
    if len(set(new_secrets.values())) != len(new_secrets):
        raise ValueError("token secrets must be distinct")
    known = {r[0] for r in conn.execute(tokens.select().with_only_columns(tokens.c.id))}
    for token_id, secret in sorted(new_secrets.items()):
        if token_id not in known:
            raise ValueError(f"no token {token_id!r} to re-key")
        if len(secret) < MIN_SECRET_CHARS:
            raise ValueError(f"the secret for {token_id!r} is shorter than {MIN_SECRET_CHARS} characters")
        conn.execute(tokens.update().where(tokens.c.id == token_id).values(secret=secret))


def actor_for_token(conn, secret: str) -> Actor | None:
    """Resolve a bearer secret to its Actor (channel api), or None."""
    row = conn.execute(tokens.select().where(tokens.c.secret == secret)).mappings().first()
    if row is None:
        return None
    return load_actor(conn, row["user_id"], token_id=row["id"], channel="api")
