"""The one interface the store's SQL runs through, whichever database holds the truth.

Every query in glassrag is written once, in the SQL that SQLite and PostgreSQL share: ``?``
placeholders, ``INSERT ... ON CONFLICT`` for upserts, a ``rowid`` column for insertion order.
A :class:`Connection` runs it; the PostgreSQL one (:mod:`glassrag.store.postgres`) turns
the placeholders into psycopg's. Rows are addressed by column name (``row["doc_id"]``) and
also unpack as tuples. Transactions are explicit: :meth:`Connection.begin` starts one that
writes, and outside one every statement commits on its own.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

Dialect = Literal["sqlite", "postgres"]


class Cursor(Protocol):
    """What a query returns: rows addressed by column name or position."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ...) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection to the knowledge base's database (SQLite or PostgreSQL)."""

    dialect: Dialect

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...

    @property
    def in_transaction(self) -> bool: ...

    def begin(self) -> None:
        """Start a transaction that will write."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


class SQLiteConnection(sqlite3.Connection):
    """A ``sqlite3`` connection (so everything ``sqlite3`` offers still works) that also
    speaks :class:`Connection`."""

    dialect: Dialect = "sqlite"

    def begin(self) -> None:
        # IMMEDIATE takes the write lock now: a writer never fails later, mid-transaction,
        # because another connection wrote first.
        self.execute("BEGIN IMMEDIATE")


def connect_sqlite(path: Path, *, read_only: bool = False) -> SQLiteConnection:
    """Open ``path`` in autocommit mode (transactions are explicit), WAL journal, foreign
    keys on; ``read_only`` opens an existing file for reading only."""
    if read_only:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                             isolation_level=None, check_same_thread=False,
                             factory=SQLiteConnection)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA busy_timeout=2000")
        return db
    # check_same_thread=False: the HTTP server hands the connection between threads,
    # always under its own lock.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                         factory=SQLiteConnection)
    db.row_factory = sqlite3.Row
    # The busy timeout first: switching to WAL needs a lock another process opening the
    # same new knowledge base may hold for a moment.
    db.execute("PRAGMA busy_timeout=10000")
    _switch_to_wal(db)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA foreign_keys=ON")
    # Read pages through a memory map rather than a read() and a copy each: loading a
    # search's hits touches a few random pages per hit (about 15% of that time).
    db.execute("PRAGMA mmap_size=1073741824")
    return db


def _switch_to_wal(db: sqlite3.Connection, wait_s: float = 10.0) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the new file.

    Two processes opening one new knowledge base both switch it to WAL, which takes an
    exclusive lock. When SQLite sees that waiting could deadlock (each holding a shared
    lock) it answers "database is locked" at once, without the busy timeout, so the wait
    is done here.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
