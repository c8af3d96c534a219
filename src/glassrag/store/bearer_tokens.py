"""Bearer tokens for the HTTP and MCP servers.

A token is a random secret shown once at creation; the knowledge base keeps only its
sha256, the principal it stands for, and that principal's roles. The roles of a request
come from here and nowhere else.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections.abc import Callable, Sequence
from typing import Any

from glassrag.errors import InvalidInput, NotFound, Unauthorized
from glassrag.records import Principal
from glassrag.store.connection import Connection
from glassrag.store.database import Store, now

TOKEN_PREFIX = "grt_"
ANONYMOUS = "anonymous"  # the principal of token-less requests, when they are allowed
MISSING_HEADER = "missing bearer token (Authorization: Bearer <token>)"


def hash_token(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(
    store: Store, principal_id: str, roles: Sequence[str] = (), admin: bool = False
) -> str:
    """Create a token for ``principal_id``; return the secret (it is not stored anywhere)."""
    principal_id = principal_id.strip()
    if not principal_id:
        raise InvalidInput("a token needs a principal id", field="principal")
    if principal_id == ANONYMOUS:
        raise InvalidInput("'anonymous' is reserved for requests without a token",
                           field="principal")
    principal = Principal(principal_id, roles, admin)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    store.db.execute(
        "INSERT INTO tokens(token_hash, principal_id, roles, admin, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (hash_token(token), principal.principal_id, json.dumps(list(principal.roles)),
         int(principal.admin), now()),
    )
    return token


def list_tokens(store: Store) -> list[dict[str, Any]]:
    """Every token (by a short prefix of its hash, never the secret), oldest first."""
    rows = store.db.execute(
        "SELECT token_hash, principal_id, roles, admin, created_at, revoked_at FROM tokens"
        " ORDER BY rowid"
    ).fetchall()
    return [
        {
            "token_id": row["token_hash"][:12],
            "principal_id": row["principal_id"],
            "roles": json.loads(row["roles"]),
            "admin": bool(row["admin"]),
            "created_at": row["created_at"],
            "revoked_at": row["revoked_at"],
        }
        for row in rows
    ]


def revoke_token(store: Store, token_or_id: str) -> int:
    """Revoke a token given the secret itself or its ``token_id`` (a hash prefix, as listed).

    Returns how many tokens were revoked; NotFound when none matches.
    """
    token_or_id = token_or_id.strip()
    if token_or_id.startswith(TOKEN_PREFIX):
        where, arg = "token_hash = ?", hash_token(token_or_id)
    elif len(token_or_id) >= 8 and all(c in "0123456789abcdef" for c in token_or_id):
        where, arg = "token_hash LIKE ?", token_or_id + "%"
    else:
        raise InvalidInput("give a token or a token_id of at least 8 hex digits",
                           field="token")
    matches = store.db.execute(f"SELECT count(*) FROM tokens WHERE {where}", (arg,)).fetchone()[0]
    if matches == 0:
        raise NotFound("no such token", token_id=token_or_id[:12])
    if matches > 1:
        raise InvalidInput("token_id matches more than one token; give more digits",
                           field="token")
    store.db.execute(
        f"UPDATE tokens SET revoked_at = ? WHERE {where} AND revoked_at IS NULL", (now(), arg)
    )
    return int(matches)


def principal_for(store: Store, token: str | None) -> Principal | None:
    """The principal a valid, unrevoked token stands for; None for anything else."""
    return _lookup(store.db, token)


def _lookup(db: Connection, token: str | None) -> Principal | None:
    if not token:
        return None
    row = db.execute(
        "SELECT principal_id, roles, admin FROM tokens WHERE token_hash = ? AND revoked_at IS NULL",
        (hash_token(token),),
    ).fetchone()
    if row is None:
        return None
    return Principal(row["principal_id"], json.loads(row["roles"]), bool(row["admin"]))


def authenticate(lookup: Callable[[str], Principal | None], token: str | None, *,
                 allow_anonymous: bool, missing: str = MISSING_HEADER) -> Principal:
    """The principal ``token`` stands for, or Unauthorized: the one check behind every
    server (the HTTP guard, both MCP transports).

    ``token`` None means none was sent: the ``anonymous`` principal (public role only) when
    allowed, else Unauthorized with ``missing``, which says where a token goes. A token that
    was sent but is wrong, malformed ("") or revoked is refused even then: silently
    downgrading would hide a misconfigured client.
    """
    if token is None:
        if allow_anonymous:
            return Principal(ANONYMOUS)
        raise Unauthorized(missing)
    found = lookup(token)
    if found is None:
        raise Unauthorized("invalid or revoked token")
    return found


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value.

    None when there is no header, "" when it is not a bearer token (so it is refused
    rather than treated as absent).
    """
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class TokenReader:
    """Token look-ups on a connection of their own, for the HTTP servers.

    Every request is authenticated before its body is read, on the server's event loop;
    the knowledge base's lock may be held for seconds by an ingest, and its connection is
    shared, so this connection is separate (read-only for SQLite, whose WAL lets it read
    while another connection writes). A revocation is seen by the next request, on every
    server sharing the store.
    """

    def __init__(self, store: Store) -> None:
        self._db = store.reader()
        self._lock = threading.Lock()

    def principal(self, token: str | None) -> Principal | None:
        """The principal of a valid, unrevoked token; None for anything else."""
        with self._lock:
            return _lookup(self._db, token)

    def authenticate(self, header: str | None, *, allow_anonymous: bool) -> Principal:
        """The principal of an ``Authorization`` header value (None: no header), or
        Unauthorized; see :func:`authenticate`."""
        return authenticate(self.principal, bearer_token(header),
                            allow_anonymous=allow_anonymous)

    def close(self) -> None:
        with self._lock:
            self._db.close()
