"""PostgreSQL as the knowledge base's truth, through psycopg 3.

psycopg 3 rather than asyncpg or psycopg2: the store is synchronous (it runs under the
knowledge base's lock, in the server's worker threads), psycopg 3 sends ``executemany`` in
pipeline mode (one round trip for a whole batch, which is what ingest needs), waits for
LISTEN/NOTIFY notifications with a timeout (``Connection.notifies``), and ships a binary
wheel with its own libpq (``psycopg[binary]``), so nothing needs compiling.

This module is the only place that knows the dialect: ``?`` placeholders become ``%s``,
rows come back addressable by column name like ``sqlite3.Row``, and the two cross-process
guarantees SQLite gets from its file lock are made with advisory locks (:func:`writer_lock`)
and a trigger on the change log (see :mod:`glassrag.store.migrations`).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from glassrag.errors import StoreUnavailable, needs_extra
from glassrag.store.connection import Dialect

# Advisory lock keys (any 64-bit number; these spell "glassrag" and a purpose).
WRITER_KEY = 0x676C617373726167  # one ingest or delete at a time, across every machine
MIGRATION_KEY = 0x676C617373726168  # one process migrating the schema at a time
CHANGES_KEY = 0x676C617373726169  # appending to the change log (see migrations.CORE)
CHANGES_CHANNEL = "glassrag_changes"  # NOTIFYed by the change log's trigger at each commit

_KV_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def _psycopg() -> Any:
    with needs_extra("postgres", "psycopg"):
        import psycopg
    return psycopg


def redact_dsn(dsn: str) -> str:
    """``dsn`` without its password, for messages."""
    return _URL_PASSWORD.sub(r"\1***@", _KV_PASSWORD.sub(r"\1***", dsn))


# Quoted strings, quoted names and dollar-quoted bodies: their "?" and "%" are literal.
_QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"]|"")*"|\$\$.*?\$\$)""", re.DOTALL)


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s``; every literal ``%`` doubled, since psycopg
    reads ``%`` as the start of a placeholder anywhere in the query."""
    parts = _QUOTED.split(sql)
    return "".join(part.replace("%", "%%") if n % 2 else
                   part.replace("%", "%%").replace("?", "%s")
                   for n, part in enumerate(parts))


class Row(tuple):
    """A result row: a tuple whose items can also be read by column name, as with
    ``sqlite3.Row`` (``row["doc_id"]``, ``dict(row)``)."""

    __slots__ = ()
    _names: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


@functools.lru_cache(maxsize=1024)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    return type("Row", (Row,), {"__slots__": (), "_names": {n: i for i, n in enumerate(names)}})


def _named_rows(cursor: Any) -> Callable[[Sequence[Any]], Any]:
    if cursor.description is None:
        return tuple
    return _row_class(tuple(column.name for column in cursor.description))


class PostgresConnection:
    """A psycopg connection in autocommit mode that speaks
    :class:`~glassrag.store.connection.Connection`.

    A connection that broke outside a transaction (the database restarted, or failed over)
    is replaced once, and the statement run again: nothing was lost, and a long-running
    server carries on. Inside a transaction the error goes to the caller, whose rollback
    ends it.
    """

    dialect: Dialect = "postgres"

    def __init__(self, dsn: str, *, application_name: str = "glassrag") -> None:
        self.dsn = dsn
        self._name = application_name
        self._writing = False  # between begin() and commit() or rollback()
        self._conn = self._connect()

    def _connect(self) -> Any:
        psycopg = _psycopg()
        try:
            return psycopg.connect(self.dsn, autocommit=True, row_factory=_named_rows,
                                   application_name=self._name)
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL ({redact_dsn(self.dsn)}): {exc}".strip(),
                public_message="the knowledge base's database is unavailable") from exc

    def _run(self, call: Callable[[Any], Any]) -> Any:
        psycopg = _psycopg()
        try:
            return call(self._conn)
        except psycopg.OperationalError:
            if self._writing or not self._conn.broken:
                raise
            self._conn = self._connect()
            return call(self._conn)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        query = translate(sql)
        return self._run(lambda conn: conn.execute(query, parameters))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        query, rows = translate(sql), list(parameters)

        def run(conn: Any) -> Any:
            cursor = conn.cursor()
            cursor.executemany(query, rows)
            return cursor

        return self._run(run)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        if self._conn.broken:
            return self._writing
        return bool(self._conn.info.transaction_status != TransactionStatus.IDLE)

    def begin(self) -> None:
        self._run(lambda conn: conn.execute("BEGIN"))
        self._writing = True

    def commit(self) -> None:
        try:
            self._conn.execute("COMMIT")
        finally:
            self._writing = False

    def rollback(self) -> None:
        self._writing = False
        if not (self._conn.closed or self._conn.broken) and self.in_transaction:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()

    def notifies(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a notification on a channel this connection
        LISTENs to; True if one (or more) arrived."""
        got = False
        for _ in self._conn.notifies(timeout=timeout, stop_after=1):
            got = True
        return got


@contextlib.contextmanager
def writer_lock(dsn: str, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the knowledge base's writer lock (a session advisory lock) for the block.

    On a connection of its own: waiting for another machine's ingest must not hold up this
    process's searches, which share the store's connection. The server releases the lock
    when the connection ends, so a killed writer never leaves it held.
    """
    conn = PostgresConnection(dsn, application_name="glassrag writer lock")
    try:
        got = conn.execute("SELECT pg_try_advisory_lock(?)", (WRITER_KEY,)).fetchone()[0]
        if not got:
            if on_wait is not None:
                on_wait()
            conn.execute("SELECT pg_advisory_lock(?)", (WRITER_KEY,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(?)", (WRITER_KEY,))
    finally:
        conn.close()


def listener(dsn: str) -> PostgresConnection:
    """A connection LISTENing to the change log's notifications."""
    conn = PostgresConnection(dsn, application_name="glassrag change follower")
    conn.execute(f"LISTEN {CHANGES_CHANNEL}")
    return conn
