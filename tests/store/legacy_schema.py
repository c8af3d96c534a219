"""The SQLite schema as glassrag wrote it before migrations had names: numbered migrations
applied in order, the count kept in ``PRAGMA user_version``. Copied verbatim from that
version (store/database.py and dense/embeddings.py), to build databases of every old
schema version in tests; never edit it.
"""

from __future__ import annotations

EMBEDDINGS_DDL = """
CREATE TABLE embeddings (
    content_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL CHECK (dim > 0),
    vector BLOB NOT NULL CHECK (length(vector) = 4 * dim),
    created_at TEXT NOT NULL,
    PRIMARY KEY (content_hash, model)
);
CREATE TABLE vector_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

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


def split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
