"""The knowledge base's source of truth: SQLite by default, or PostgreSQL shared by servers.

Documents, the normalised text of every version (by content hash), chunks with their analysed
tokens, and a change log. Derived indexes (Tantivy today) replay the change log, so anything
committed here survives a crash of an index, and an ingest killed before its commit leaves
the previous state intact (the database rolls the transaction back).

The SQL is written once for both databases (see :mod:`glassrag.store.connection`); the
schema is the named migrations of :mod:`glassrag.store.migrations`.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from glassrag.locks import WRITE_LOCK_NAME, exclusive
from glassrag.records import Chunk, ChunkSpan, Document
from glassrag.settings import StoreSettings
from glassrag.store import migrations
from glassrag.store.checkpoints import Checkpointer
from glassrag.store.connection import Connection, connect_sqlite

DB_NAME = "glassrag.db"
_BATCH = 500  # values per IN (...) list
# The write-ahead log's size (in pages, 4 KiB by default) that triggers a checkpoint
# during bulk writes: 64 MiB.
_BULK_CHECKPOINT_PAGES = 16384
# SQLite's page cache during bulk writes, in KiB (a negative cache_size): 64 MiB instead of
# the default 2 MiB. A batch of 10,000 documents dirties tens of MiB of pages; in 2 MiB they
# were spilled to the log mid-transaction and the random-key indexes (content hashes, doc
# ids) were read back page by page. Measured ~10% less time writing 100k documents.
_BULK_CACHE_KIB = 65536

_CHUNK_COLUMNS = (
    "c.id, c.chunk_id, c.doc_id, c.ordinal, c.text, c.line_start, c.line_end, c.char_start,"
    " c.char_end, c.heading, d.roles, d.version, d.content_hash, d.title, d.source,"
    " c.page, c.slide"
)
# Where the tokens are in a row of ``_CHUNK_COLUMNS, c.tokens``: just after those columns.
_TOKENS_AT = _CHUNK_COLUMNS.count(",") + 1


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class NewDocument:
    """Everything ingest writes for one document version."""

    document: Document
    text: str
    fingerprint: str
    spans: Sequence[ChunkSpan]
    tokens: Sequence[Sequence[str]]
    positions: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # Where the roles came from: "document", "rule", "option" or "default".
    roles_origin: str = ""


class ChangeListener(Protocol):
    """Wakes a follower of the change log when another process commits a change."""

    def notifies(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True if a change was committed meanwhile."""

    def close(self) -> None: ...


class Store:
    """The truth, on one connection (SQLite or PostgreSQL), migrated when opened.

    ``Store(path)`` opens (creating) a SQLite file; :meth:`postgres` connects to a shared
    PostgreSQL database.
    """

    def __init__(self, source: Path | Connection, *, location: str | None = None,
                 dsn: str | None = None) -> None:
        if isinstance(source, Path):
            self.path: Path | None = source
            self.db: Connection = connect_sqlite(source)
        else:
            self.path, self.db = None, source
        self.dsn = dsn
        self.location = location or str(source)
        self._checkpointer: Checkpointer | None = None  # during bulk writes to SQLite
        migrations.migrate(self.db, self.location, now())

    @classmethod
    def postgres(cls, dsn: str) -> Store:
        """Connect to the PostgreSQL database ``dsn`` names (a ``postgresql://`` URL or
        ``key=value`` pairs) and migrate it."""
        from glassrag.store.postgres import PostgresConnection, redact_dsn

        return cls(PostgresConnection(dsn), location=redact_dsn(dsn), dsn=dsn)

    @property
    def dialect(self) -> str:
        return self.db.dialect

    def migrations(self) -> list[migrations.SetStatus]:
        """Per migration set, the applied and pending migrations."""
        return migrations.status(self.db)

    def reader(self) -> Connection:
        """A new connection for reading alongside this one (e.g. token look-ups on a
        server's event loop while an ingest holds the store's own)."""
        if self.dsn is not None:
            from glassrag.store.postgres import PostgresConnection

            return PostgresConnection(self.dsn, application_name="glassrag reader")
        assert self.path is not None
        return connect_sqlite(self.path, read_only=True)

    def write_lock(self, on_wait: Callable[[], None] | None = None
                   ) -> contextlib.AbstractContextManager[None]:
        """One writer (ingest, delete) at a time, whichever process or machine it runs on.

        ``on_wait`` is called once first if it must wait. SQLite: a file lock next to the
        database; PostgreSQL: an advisory lock on the server.
        """
        if self.dsn is not None:
            from glassrag.store.postgres import writer_lock

            return writer_lock(self.dsn, on_wait)
        assert self.path is not None
        return exclusive(self.path.parent / WRITE_LOCK_NAME, on_wait)

    def listen(self) -> ChangeListener | None:
        """A listener woken by every commit to the change log, from any process (PostgreSQL
        LISTEN/NOTIFY); None for SQLite, whose readers poll."""
        if self.dsn is None:
            return None
        from glassrag.store.postgres import listener

        return listener(self.dsn)

    def close(self) -> None:
        self.db.close()

    # -- transactions ----------------------------------------------------------------
    def begin(self) -> None:
        self.db.begin()

    def commit(self) -> None:
        self.db.commit()
        if self._checkpointer is not None:
            self._checkpointer.committed()

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.rollback()

    @contextlib.contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """Many write transactions in a row (an ingest), on SQLite: a thread of its own
        (:class:`~glassrag.store.checkpoints.Checkpointer`) copies each commit from the
        write-ahead log into the database file (a checkpoint, with an fsync) while the
        next batch is being prepared; the writer itself checkpoints only past
        :data:`_BULK_CHECKPOINT_PAGES` pages instead of 1,000 (small checkpoints re-copy
        the same index pages over and over), and once at the end. The page cache is
        :data:`_BULK_CACHE_KIB` meanwhile. Every transaction still commits to the log as
        before, so what a crash leaves is unchanged."""
        if self.dialect != "sqlite" or self.path is None:
            yield
            return
        pages = int(self.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        cache = int(self.db.execute("PRAGMA cache_size").fetchone()[0])
        checkpointer = Checkpointer(self.path)
        self.db.execute(f"PRAGMA wal_autocheckpoint={max(pages, _BULK_CHECKPOINT_PAGES)}")
        self.db.execute(f"PRAGMA cache_size={-_BULK_CACHE_KIB}")
        self._checkpointer = checkpointer
        try:
            yield
        finally:
            self._checkpointer = None
            checkpointer.close()
            self.db.execute(f"PRAGMA cache_size={cache}")
            self.db.execute(f"PRAGMA wal_autocheckpoint={pages}")
            if not self.db.in_transaction:
                self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    # -- writes (call inside begin/commit) ---------------------------------------------
    def write_documents(self, batch: Sequence[NewDocument], existing: Collection[str]) -> None:
        """Replace documents and all their chunks, and log the changes.

        One ``executemany`` per table for the whole batch: per-row ``execute`` calls were
        the largest cost of an ingest. ``existing`` names the doc_ids already stored, the
        only ones whose old chunks need deleting.
        """
        at = now()
        db = self.db
        db.executemany(
            # Only missing ones: PostgreSQL would use up an id for every conflicting row.
            # In first-seen order, so the same ingest numbers role sets the same way.
            "INSERT INTO rolesets(roles) SELECT ? WHERE NOT EXISTS"
            " (SELECT 1 FROM rolesets WHERE roles = ?) ON CONFLICT DO NOTHING",
            [(r, r) for r in dict.fromkeys(_roles_json(n.document.roles) for n in batch)],
        )
        db.executemany(
            "INSERT INTO document_versions(content_hash, text, created_at)"
            " VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(n.document.content_hash, n.text, at) for n in batch],
        )
        db.executemany(
            "DELETE FROM chunks WHERE doc_id = ?",
            [(n.document.doc_id,) for n in batch if n.document.doc_id in existing],
        )
        db.executemany(
            # An upsert, not INSERT OR REPLACE: the row keeps its rowid, which is the
            # ingest order that the ``terms`` scorer uses to break ties (seed 001).
            "INSERT INTO documents(doc_id, source, title, roles, content_hash,"
            " version, parser, chunker, chunk_count, path, encoding, line_offset, metadata,"
            " fingerprint, updated_at, positions, roles_origin)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(doc_id) DO UPDATE SET positions=excluded.positions,"
            " roles_origin=excluded.roles_origin,"
            " source=excluded.source, title=excluded.title,"
            " roles=excluded.roles, content_hash=excluded.content_hash,"
            " version=excluded.version, parser=excluded.parser, chunker=excluded.chunker,"
            " chunk_count=excluded.chunk_count, path=excluded.path, encoding=excluded.encoding,"
            " line_offset=excluded.line_offset, metadata=excluded.metadata,"
            " fingerprint=excluded.fingerprint, updated_at=excluded.updated_at",
            [_document_row(n, at) for n in batch],
        )
        db.executemany(
            # Same version, new roles (the text did not change): the version takes the roles
            # it is now stored under.
            "INSERT INTO document_history(doc_id, version, content_hash, recorded_at, roles)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT(doc_id, version) DO UPDATE SET"
            " roles=excluded.roles WHERE document_history.content_hash=excluded.content_hash",
            [(n.document.doc_id, n.document.version, n.document.content_hash, at,
              _roles_json(n.document.roles)) for n in batch],
        )
        db.executemany(
            "INSERT INTO chunks(chunk_id, doc_id, ordinal, text, tokens, line_start, line_end,"
            " char_start, char_end, heading, page, slide) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [row for n in batch for row in _chunk_rows(n)],
        )
        db.executemany(
            "INSERT INTO changes(doc_id, op, recorded_at) VALUES (?, 'upsert', ?)",
            [(n.document.doc_id, at) for n in batch],
        )

    def file_record(self, path: str) -> tuple[str, str, list[str]] | None:
        row = self.db.execute(
            "SELECT sha256, settings_key, doc_ids FROM files WHERE path = ?", (path,)
        ).fetchone()
        return (row["sha256"], row["settings_key"], json.loads(row["doc_ids"])) if row else None

    def write_files(self, records: Sequence[tuple[str, str | None, str, list[str]]]) -> None:
        """(path, sha256 or None to forget the file, settings_key, doc_ids)."""
        self.db.executemany(
            "DELETE FROM files WHERE path = ?", [(r[0],) for r in records if r[1] is None]
        )
        self.db.executemany(
            "INSERT INTO files(path, sha256, settings_key, doc_ids) VALUES (?,?,?,?)"
            " ON CONFLICT(path) DO UPDATE SET sha256=excluded.sha256,"
            " settings_key=excluded.settings_key, doc_ids=excluded.doc_ids",
            [(r[0], r[1], r[2], json.dumps(r[3], ensure_ascii=False))
             for r in records if r[1] is not None],
        )

    def delete_document(self, doc_id: str) -> bool:
        cur = self.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
        if cur.rowcount:
            self.db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            self._log(doc_id, "delete", now())
        return bool(cur.rowcount)

    def _log(self, doc_id: str, op: str, at: str) -> None:
        self.db.execute(
            "INSERT INTO changes(doc_id, op, recorded_at) VALUES (?, ?, ?)", (doc_id, op, at)
        )

    # -- reads --------------------------------------------------------------------------
    def fingerprints(self) -> dict[str, tuple[str, int, str | None, str]]:
        """doc_id -> (fingerprint, version, path, content_hash) for the unchanged check."""
        rows = self.db.execute(
            "SELECT doc_id, fingerprint, version, path, content_hash FROM documents"
        )
        # Unpacked by position: by name costs a lookup per column, on every row of the store.
        return {doc_id: (fingerprint, version, path, content_hash)
                for doc_id, fingerprint, version, path, content_hash in rows}

    def document(self, doc_id: str) -> Document | None:
        row = self.db.execute("SELECT * FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return _document(row) if row else None

    def documents(self) -> list[Document]:
        rows = self.db.execute("SELECT * FROM documents ORDER BY rowid")
        return [_document(r) for r in rows]

    def version_text(self, content_hash: str) -> str | None:
        row = self.db.execute(
            "SELECT text FROM document_versions WHERE content_hash = ?", (content_hash,)
        ).fetchone()
        return row["text"] if row else None

    def history(self, doc_id: str) -> list[dict[str, Any]]:
        """Every recorded version of a document: version, content_hash, recorded_at and
        roles (None for a version recorded before roles were kept per version)."""
        rows = self.db.execute(
            "SELECT version, content_hash, recorded_at, roles FROM document_history"
            " WHERE doc_id = ? ORDER BY version",
            (doc_id,),
        )
        return [{**dict(r), "roles": None if r["roles"] is None else json.loads(r["roles"])}
                for r in rows]

    def versions_with_hash(self, content_hash: str) -> list[tuple[str, tuple[str, ...] | None]]:
        """``(doc_id, roles)`` of every recorded document version with this text."""
        rows = self.db.execute(
            "SELECT doc_id, roles FROM document_history WHERE content_hash = ?", (content_hash,)
        )
        return [(r["doc_id"], None if r["roles"] is None else tuple(json.loads(r["roles"])))
                for r in rows]

    def retired_versions(self) -> dict[str, int]:
        """doc_id -> highest recorded version, for documents deleted since: a document that
        comes back continues its numbering instead of reusing an old version number."""
        rows = self.db.execute(
            "SELECT doc_id, MAX(version) AS version FROM document_history"
            " WHERE doc_id NOT IN (SELECT doc_id FROM documents) GROUP BY doc_id"
        )
        return {r["doc_id"]: int(r["version"]) for r in rows}

    def roles_origins(self, path: str) -> dict[str, str]:
        """doc_id -> where its stored roles came from ("" if stored before this was kept),
        for every document stored from the file at ``path``."""
        return dict(self.db.execute(
            "SELECT doc_id, roles_origin FROM documents WHERE path = ?", (path,)))

    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, Chunk]:
        return {rowid: chunk for rowid, (chunk, _) in self.chunks_with_tokens(rowids).items()}

    def chunks_with_tokens(self, rowids: Sequence[int]) -> dict[int, tuple[Chunk, str]]:
        """Chunks and their analysed tokens in one query (the search hot path)."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self.db.execute(
            f"SELECT {_CHUNK_COLUMNS}, c.tokens FROM chunks c JOIN documents d USING (doc_id)"
            f" WHERE c.id IN ({marks})",
            list(rowids),
        )
        return {r[0]: (_chunk(r), r[_TOKENS_AT]) for r in rows}

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        rows = self.db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d USING (doc_id)"
            " WHERE c.doc_id = ? ORDER BY c.ordinal",
            (doc_id,),
        )
        return [_chunk(r) for r in rows]

    def iter_chunks(self) -> Iterator[Chunk]:
        """Every chunk in document order (for the scan scorers ``overlap`` and ``terms``)."""
        rows = self.db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d USING (doc_id)"
            " ORDER BY d.rowid, c.ordinal"
        )
        for r in rows:
            yield _chunk(r)

    def index_rows(
        self, doc_ids: Iterable[str] | None = None, *, db: Connection | None = None
    ) -> Iterator[tuple[int, str, int, str]]:
        """(rowid, doc_id, roleset id, tokens) for feeding a lexical index, in (doc_id,
        ordinal) order: the index breaks ties between equal scores by insertion order, which
        must be the documented tie order and not depend on how a database happens to return
        a join (PostgreSQL and SQLite differ). ``db``: read through that connection (a
        :meth:`reader`) instead of the store's own."""
        sql = (
            "SELECT c.id AS rowid, c.doc_id, r.id AS roleset, c.tokens FROM chunks c"
            " JOIN documents d USING (doc_id) JOIN rolesets r ON r.roles = d.roles"
        )
        if doc_ids is None:
            yield from (db or self.db).execute(f"{sql} ORDER BY c.doc_id, c.ordinal")
            return
        for part in _batches(list(doc_ids)):
            yield from self.db.execute(
                f"{sql} WHERE c.doc_id IN ({','.join('?' * len(part))})"
                " ORDER BY c.doc_id, c.ordinal", part
            )

    def chunk_order(self, rowids: Sequence[int]) -> dict[int, tuple[str, int]]:
        """rowid -> (doc_id, ordinal) of those chunks still stored: the order that breaks
        ties between equal scores."""
        order: dict[int, tuple[str, int]] = {}
        for part in _batches(list(rowids)):
            rows = self.db.execute(
                f"SELECT id, doc_id, ordinal FROM chunks WHERE id IN ({','.join('?' * len(part))})",
                part)
            order.update((r["id"], (r["doc_id"], r["ordinal"])) for r in rows)
        return order

    def rolesets(self) -> dict[int, tuple[str, ...]]:
        return {r["id"]: tuple(json.loads(r["roles"]))
                for r in self.db.execute("SELECT id, roles FROM rolesets")}

    def changes_since(self, seq: int) -> list[tuple[int, str, str]]:
        """(seq, doc_id, op) of every change after ``seq``, in order."""
        return [
            (r["seq"], r["doc_id"], r["op"])
            for r in self.db.execute(
                "SELECT seq, doc_id, op FROM changes WHERE seq > ? ORDER BY seq", (seq,)
            )
        ]

    def last_seq(self) -> int:
        row = self.db.execute("SELECT MAX(seq) AS seq FROM changes").fetchone()
        return int(row["seq"] or 0)

    def counts(self) -> dict[str, int]:
        tables = {"documents": "documents", "chunks": "chunks", "versions": "document_versions",
                  "changes": "changes"}
        return {name: int(self.db.execute(f"SELECT COUNT(*) AS n FROM {table}").fetchone()["n"])
                for name, table in tables.items()}


def _document_row(new: NewDocument, at: str) -> tuple[Any, ...]:
    doc = new.document
    return (
        doc.doc_id, doc.source, doc.title, _roles_json(doc.roles),
        doc.content_hash, doc.version, doc.parser, doc.chunker, len(new.spans),
        doc.path, doc.encoding, doc.line_offset,
        json.dumps(doc.metadata, ensure_ascii=False) if doc.metadata else "{}",
        new.fingerprint, at,
        json.dumps({k: list(v) for k, v in new.positions.items()}) if new.positions else "{}",
        new.roles_origin,
    )


def _chunk_rows(new: NewDocument) -> list[tuple[Any, ...]]:
    doc = new.document
    pages, slides = new.positions.get("page"), new.positions.get("slide")
    return [
        (
            f"{doc.doc_id}#{n}", doc.doc_id, n, span.text, " ".join(toks),
            span.line_start, span.line_end, span.char_start, span.char_end, span.heading,
            _at(pages, span.line_start - doc.line_offset),
            _at(slides, span.line_start - doc.line_offset),
        )
        for n, (span, toks) in enumerate(zip(new.spans, new.tokens, strict=True), start=1)
    ]


def _at(values: Sequence[int] | None, line: int) -> int | None:
    """The position (page, slide) of 1-based ``line`` of a document's text, if known."""
    if not values or line < 1:
        return None
    return values[min(line, len(values)) - 1]


def _batches(values: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(values), _BATCH):
        yield values[start : start + _BATCH]


def _document(row: Any) -> Document:
    return Document(
        doc_id=row["doc_id"], source=row["source"], title=row["title"],
        roles=tuple(json.loads(row["roles"])), content_hash=row["content_hash"],
        version=row["version"], parser=row["parser"], chunker=row["chunker"],
        chunk_count=row["chunk_count"], path=row["path"], encoding=row["encoding"],
        line_offset=row["line_offset"], metadata=json.loads(row["metadata"]),
        updated_at=row["updated_at"],
        positions={k: tuple(v) for k, v in json.loads(row["positions"]).items()},
    )


@functools.lru_cache(maxsize=1024)
def _roles_json(roles: tuple[str, ...]) -> str:
    # The stored form of a role set, written three times per document; there are few sets.
    return json.dumps(list(roles))


@functools.lru_cache(maxsize=1024)
def _roles(text: str) -> tuple[str, ...]:
    # A knowledge base has a handful of distinct role sets; parse each JSON list once.
    return tuple(json.loads(text))


def _chunk(row: Any) -> Chunk:
    """A chunk from a row that starts with ``_CHUNK_COLUMNS``, read by position (both
    backends' rows allow it): a lookup by column name costs about as much again as the
    rest of building a search's hits."""
    return Chunk(
        chunk_id=row[1], doc_id=row[2], ordinal=row[3], text=row[4], line_start=row[5],
        line_end=row[6], char_start=row[7], char_end=row[8], heading=row[9],
        roles=_roles(row[10]), doc_version=row[11], content_hash=row[12], title=row[13],
        source=row[14], page=row[15], slide=row[16],
    )


def open_store(kb_dir: Path, settings: StoreSettings) -> Store:
    """The store ``[store]`` names: ``glassrag.db`` in ``kb_dir`` (SQLite, the default), or
    the PostgreSQL database of ``dsn`` (else ``$GLASSRAG_DATABASE_URL``)."""
    if settings.backend == "sqlite":
        return Store(kb_dir / DB_NAME)
    return Store.postgres(settings.postgres_dsn())


def store_exists(kb_dir: Path, settings: StoreSettings) -> bool:
    """Whether a knowledge base's truth exists: its SQLite file, or (PostgreSQL, shared by
    every server and created by the first) a settings file naming the database."""
    return settings.backend == "postgres" or (kb_dir / DB_NAME).exists()
