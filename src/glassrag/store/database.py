"""SQLite, the knowledge base's source of truth.

Documents, the normalised text of every version (by content hash), chunks with their analysed
tokens, and a change log. Derived indexes (Tantivy today) replay the change log, so anything
committed here survives a crash of an index, and an ingest killed before its commit leaves
the previous state intact (SQLite rolls the transaction back).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from glassrag.dense.embeddings import EMBEDDINGS_DDL
from glassrag.errors import SchemaVersionError
from glassrag.records import Chunk, ChunkSpan, Document

DB_NAME = "glassrag.db"

# Numbered migrations: index i brings the schema from version i to i + 1. Never edit one
# that has shipped; append a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE document_versions (
        content_hash TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE documents (
        doc_id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        title TEXT NOT NULL,
        roles TEXT NOT NULL,
        content_hash TEXT NOT NULL REFERENCES document_versions(content_hash),
        version INTEGER NOT NULL,
        parser TEXT NOT NULL,
        chunker TEXT NOT NULL,
        chunk_count INTEGER NOT NULL,
        path TEXT,
        encoding TEXT,
        line_offset INTEGER NOT NULL DEFAULT 0,
        metadata TEXT NOT NULL DEFAULT '{}',
        fingerprint TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX documents_path ON documents(path);
    CREATE TABLE document_history (
        doc_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        PRIMARY KEY (doc_id, version)
    );
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        chunk_id TEXT NOT NULL UNIQUE,
        doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        text TEXT NOT NULL,
        tokens TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        char_start INTEGER NOT NULL,
        char_end INTEGER NOT NULL,
        heading TEXT
    );
    CREATE INDEX chunks_doc ON chunks(doc_id, ordinal);
    CREATE TABLE changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        doc_id TEXT NOT NULL,
        op TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
        recorded_at TEXT NOT NULL
    );
    """,
    # 2: positions for paged formats, and traces of every ask.
    """
    ALTER TABLE chunks ADD COLUMN page INTEGER;
    ALTER TABLE chunks ADD COLUMN slide INTEGER;
    ALTER TABLE documents ADD COLUMN positions TEXT NOT NULL DEFAULT '{}';
    CREATE TABLE traces (
        trace_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        principal_id TEXT NOT NULL,
        status TEXT NOT NULL,
        question TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX traces_created ON traces(created_at);
    """,
    # 3: what each file produced last time, so an unchanged file is skipped unparsed; and a
    # small id per distinct set of roles, which the lexical index keeps in a fast field so a
    # search checks readability per candidate without a join.
    """
    CREATE TABLE files (
        path TEXT PRIMARY KEY,
        sha256 TEXT NOT NULL,
        settings_key TEXT NOT NULL,
        doc_ids TEXT NOT NULL
    );
    CREATE TABLE rolesets (id INTEGER PRIMARY KEY, roles TEXT NOT NULL UNIQUE);
    INSERT OR IGNORE INTO rolesets(roles) SELECT DISTINCT roles FROM documents;
    """,
    # 4: embeddings by chunk-text hash and model, and which model the knowledge base uses.
    EMBEDDINGS_DDL,
    # 5: bearer tokens for the HTTP and MCP servers. Only the sha256 of a token is kept, so
    # a copy of the database does not let anyone authenticate.
    """
    CREATE TABLE tokens (
        token_hash TEXT PRIMARY KEY,
        principal_id TEXT NOT NULL,
        roles TEXT NOT NULL,
        admin INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    );
    """,
    # 6: the roles of every document version, so an old version is only ever served to a
    # caller its own roles allow; and where a document's roles came from (the document
    # itself, a roles rule, the ingest option or the default), for the ingest report.
    # Versions recorded before this migration get the roles of the document only when they
    # are its current version; older ones keep NULL, which no role can read.
    """
    ALTER TABLE document_history ADD COLUMN roles TEXT;
    UPDATE document_history SET roles = (
        SELECT d.roles FROM documents d WHERE d.doc_id = document_history.doc_id
        AND d.version = document_history.version
        AND d.content_hash = document_history.content_hash
    );
    ALTER TABLE documents ADD COLUMN roles_origin TEXT NOT NULL DEFAULT '';
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

_CHUNK_COLUMNS = (
    "c.id, c.chunk_id, c.doc_id, c.ordinal, c.text, c.line_start, c.line_end, c.char_start,"
    " c.char_end, c.heading, d.roles, d.version, d.content_hash, d.title, d.source,"
    " c.page, c.slide"
)


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


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        # check_same_thread=False: the HTTP server hands the connection between threads,
        # always under its own lock.
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        # The busy timeout first: switching to WAL needs a lock another process opening the
        # same new knowledge base may hold for a moment.
        self.db.execute("PRAGMA busy_timeout=10000")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        # Read pages through a memory map rather than a read() and a copy each: loading a
        # search's hits touches a few random pages per hit (about 15% of that time).
        self.db.execute("PRAGMA mmap_size=1073741824")
        self._migrate()
        # Role sets and the last change, read by every search, kept while the database is
        # unchanged: {name: (version when read, value)} (see _version).
        self._kept: dict[str, tuple[tuple[int, int], Any]] = {}

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path}: schema version {version} is newer than this glassrag "
                f"supports ({SCHEMA_VERSION}); upgrade glassrag",
                found=version,
                supported=SCHEMA_VERSION,
            )
        for number in range(version, SCHEMA_VERSION):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have applied this migration while we waited for the
                # write lock: re-read the version inside the transaction.
                if self.db.execute("PRAGMA user_version").fetchone()[0] > number:
                    self.db.execute("COMMIT")
                    continue
                for statement in _split_sql(MIGRATIONS[number]):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version={number + 1}")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self.db.close()

    # -- transactions ----------------------------------------------------------------
    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

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
            "INSERT OR IGNORE INTO rolesets(roles) VALUES (?)",
            [(r,) for r in {json.dumps(list(n.document.roles)) for n in batch}],
        )
        db.executemany(
            "INSERT OR IGNORE INTO document_versions(content_hash, text, created_at)"
            " VALUES (?, ?, ?)",
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
            " roles=excluded.roles WHERE content_hash=excluded.content_hash",
            [(n.document.doc_id, n.document.version, n.document.content_hash, at,
              json.dumps(list(n.document.roles))) for n in batch],
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
        return (row[0], row[1], json.loads(row[2])) if row else None

    def write_files(self, records: Sequence[tuple[str, str | None, str, list[str]]]) -> None:
        """(path, sha256 or None to forget the file, settings_key, doc_ids)."""
        self.db.executemany(
            "DELETE FROM files WHERE path = ?", [(r[0],) for r in records if r[1] is None]
        )
        self.db.executemany(
            "INSERT OR REPLACE INTO files(path, sha256, settings_key, doc_ids) VALUES (?,?,?,?)",
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
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

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
        return row[0] if row else None

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
        return [(r[0], None if r[1] is None else tuple(json.loads(r[1]))) for r in rows]

    def retired_versions(self) -> dict[str, int]:
        """doc_id -> highest recorded version, for documents deleted since: a document that
        comes back continues its numbering instead of reusing an old version number."""
        rows = self.db.execute(
            "SELECT doc_id, MAX(version) FROM document_history"
            " WHERE doc_id NOT IN (SELECT doc_id FROM documents) GROUP BY doc_id"
        )
        return {r[0]: int(r[1]) for r in rows}

    def roles_origins(self) -> dict[str, str]:
        """doc_id -> where its stored roles came from ("" if stored before this was kept)."""
        return dict(self.db.execute("SELECT doc_id, roles_origin FROM documents").fetchall())

    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, Chunk]:
        return {rowid: chunk for rowid, (chunk, _) in self.chunks_with_tokens(rowids).items()}

    def chunks_with_tokens(self, rowids: Sequence[int]) -> dict[int, tuple[Chunk, str]]:
        """Chunks and their analysed tokens in one query (the search hot path)."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        cursor = self.db.cursor()
        cursor.row_factory = None  # plain tuples: cheaper than sqlite3.Row, read by position
        rows = cursor.execute(
            f"SELECT {_CHUNK_COLUMNS}, c.tokens FROM chunks c JOIN documents d USING (doc_id)"
            f" WHERE c.id IN ({marks})",
            list(rowids),
        )
        return {r[0]: (_chunk(r), r[17]) for r in rows}

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
        self, doc_ids: Iterable[str] | None = None
    ) -> Iterator[tuple[int, str, int, str]]:
        """(rowid, doc_id, roleset id, tokens) for feeding a lexical index."""
        sql = (
            "SELECT c.id, c.doc_id, r.id, c.tokens FROM chunks c"
            " JOIN documents d USING (doc_id) JOIN rolesets r ON r.roles = d.roles"
        )
        if doc_ids is None:
            yield from self.db.execute(sql)
            return
        ids = list(doc_ids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            yield from self.db.execute(
                f"{sql} WHERE c.doc_id IN ({','.join('?' * len(part))})", part
            )

    def _version(self) -> tuple[int, int]:
        """Moves whenever the database may have changed: ``PRAGMA data_version`` when any
        other connection (another process, another KnowledgeBase) commits, the
        connection's ``total_changes`` when it writes itself. One statement, cheaper than
        the reads it saves."""
        return self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes

    def _kept_value(self, name: str, read: Callable[[], Any]) -> Any:
        """``read()``, or the value it gave while the database has not changed since.

        Inside a transaction the value is read and not kept: it may yet be rolled back.
        """
        if self.db.in_transaction:
            return read()
        version = self._version()
        kept = self._kept.get(name)
        if kept is not None and kept[0] == version:
            return kept[1]
        value = read()
        self._kept[name] = (version, value)
        return value

    def rolesets(self) -> dict[int, tuple[str, ...]]:
        """{role-set id: roles} (a copy: callers may change it)."""
        return dict(self._kept_value("rolesets", lambda: {
            r[0]: tuple(json.loads(r[1]))
            for r in self.db.execute("SELECT id, roles FROM rolesets")}))

    def changes_since(self, seq: int) -> list[tuple[int, str, str]]:
        return [
            (r[0], r[1], r[2])
            for r in self.db.execute(
                "SELECT seq, doc_id, op FROM changes WHERE seq > ? ORDER BY seq", (seq,)
            )
        ]

    def last_seq(self) -> int:
        """The change log's last sequence number (0 when empty)."""
        return int(self._kept_value("last_seq", lambda: int(
            self.db.execute("SELECT MAX(seq) FROM changes").fetchone()[0] or 0)))

    def counts(self) -> dict[str, int]:
        one = self.db.execute
        return {
            "documents": one("SELECT COUNT(*) FROM documents").fetchone()[0],
            "chunks": one("SELECT COUNT(*) FROM chunks").fetchone()[0],
            "versions": one("SELECT COUNT(*) FROM document_versions").fetchone()[0],
            "changes": one("SELECT COUNT(*) FROM changes").fetchone()[0],
        }


def _document_row(new: NewDocument, at: str) -> tuple[Any, ...]:
    doc = new.document
    return (
        doc.doc_id, doc.source, doc.title, json.dumps(list(doc.roles)),
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


def _split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _document(row: sqlite3.Row) -> Document:
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
def _roles(text: str) -> tuple[str, ...]:
    # A knowledge base has a handful of distinct role sets; parse each JSON list once.
    return tuple(json.loads(text))


def _chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(
        chunk_id=row[1], doc_id=row[2], ordinal=row[3], text=row[4], line_start=row[5],
        line_end=row[6], char_start=row[7], char_end=row[8], heading=row[9],
        roles=_roles(row[10]), doc_version=row[11], content_hash=row[12],
        title=row[13], source=row[14], page=row[15], slide=row[16],
    )
