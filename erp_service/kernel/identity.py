"""Who is acting: users, roles, permissions, tokens, and the `Actor` every call carries."""
from __future__ import annotations

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


def actor_for_token(conn, secret: str) -> Actor | None:
    """Resolve a bearer secret to its Actor (channel api), or None."""
    row = conn.execute(tokens.select().where(tokens.c.secret == secret)).mappings().first()
    if row is None:
        return None
    return load_actor(conn, row["user_id"], token_id=row["id"], channel="api")
