"""Named migrations: listed per set, applied one transaction each, on SQLite and PostgreSQL;
old SQLite databases (numbered migrations, ``user_version`` 1 to 6) adopted without loss."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from legacy_schema import MIGRATIONS, split
from legacy_snapshot import snapshot

from glassrag import KnowledgeBase
from glassrag.errors import SchemaVersionError
from glassrag.store import migrations
from glassrag.store.database import DB_NAME, Store

LEGACY = Path(__file__).resolve().parents[1] / "data" / "legacy_kb"
ALL = {s.name: [m.name for m in s.migrations] for s in migrations.SETS}


def _schema(path: Path) -> dict[str, str]:
    db = sqlite3.connect(path)
    try:
        return {name: sql for name, sql in db.execute(
            "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"
            f" AND name NOT IN ('{migrations.TABLE}', 'sqlite_sequence')")}
    finally:
        db.close()


def _legacy_db(path: Path, version: int) -> Path:
    """A database as the numbered migrations left it at ``version``."""
    db = sqlite3.connect(path)
    for script in MIGRATIONS[:version]:
        for statement in split(script):
            db.execute(statement)
    db.execute(f"PRAGMA user_version={version}")
    db.commit()
    db.close()
    return path


def test_a_new_database_lists_every_set_applied(tmp_path: Path) -> None:
    store = Store(tmp_path / DB_NAME)
    try:
        listed = {s.name: (s.applied, s.pending) for s in store.migrations()}
        assert listed == {name: (names, []) for name, names in ALL.items()}
        assert list(listed) == ["core", "traces", "embeddings", "tokens"]
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == migrations.NAMED_SCHEMA
    finally:
        store.close()
    # Opening again applies nothing.
    again = Store(tmp_path / DB_NAME)
    assert migrations.migrate(again.db, "again", "now") == []
    again.close()


def test_status_of_an_empty_database_lists_everything_pending(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "empty.db")
    db.row_factory = sqlite3.Row

    class Plain:  # a bare connection, before any migration
        dialect = "sqlite"
        execute = db.execute
        in_transaction = False

    assert {s.name: s.pending for s in migrations.status(Plain())} == ALL  # type: ignore[arg-type]


@pytest.mark.parametrize("version", range(7))
def test_every_old_schema_version_is_adopted_and_completed(tmp_path: Path, version: int) -> None:
    fresh = tmp_path / "fresh.db"
    Store(fresh).close()
    old = _legacy_db(tmp_path / "old.db", version)
    store = Store(old)
    try:
        assert all(not s.pending for s in store.migrations())
    finally:
        store.close()
    # The same tables, columns and indexes as a database created new, to the letter.
    assert _schema(old) == _schema(fresh)
    # What the numbered migrations had applied is recorded, not applied again.
    db = sqlite3.connect(old)
    applied_at = dict(db.execute(
        f"SELECT migration_set || '.' || name, applied_at FROM {migrations.TABLE}"))
    assert len(applied_at) == sum(len(v) for v in ALL.values())
    db.close()


def test_a_knowledge_base_written_before_named_migrations_reads_the_same(tmp_path: Path) -> None:
    """A database written by glassrag before this change (tests/data/legacy_kb, made by
    legacy_snapshot.py with that version) opens and reads back exactly as it did then."""
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    db = sqlite3.connect(kb_dir / DB_NAME)
    db.executescript((LEGACY / "glassrag.sql").read_text(encoding="utf-8"))
    assert db.execute("PRAGMA user_version").fetchone()[0] == 6
    db.close()
    recorded = json.loads((LEGACY / "snapshot.json").read_text(encoding="utf-8"))
    with KnowledgeBase.open(kb_dir) as kb:
        now = snapshot(kb, recorded["token"], recorded["trace_id"])
        assert all(not s.pending for s in kb.store.migrations())
    assert json.loads(json.dumps(now, ensure_ascii=False)) == recorded["snapshot"]


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / DB_NAME).close()
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.execute(f"INSERT INTO {migrations.TABLE} VALUES ('core', 'm999_from_the_future', 'x')")
    db.commit()
    db.close()
    with pytest.raises(SchemaVersionError, match="core.m999_from_the_future"):
        Store(tmp_path / DB_NAME)


def test_a_failing_migration_leaves_nothing_half_done(tmp_path: Path) -> None:
    # A version-1 database that somehow already has a traces table: the traces migration
    # fails, and rolls back whole; the core ones before it stay applied.
    path = _legacy_db(tmp_path / "old.db", 1)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE traces (x)")
    db.commit()
    db.close()
    with pytest.raises(sqlite3.OperationalError, match="traces already exists"):
        Store(path)
    db = sqlite3.connect(path)
    recorded = {r[0] for r in db.execute(f"SELECT migration_set FROM {migrations.TABLE}")}
    columns = {r[1] for r in db.execute("PRAGMA table_info(traces)")}
    db.close()
    assert recorded == {"core"} and columns == {"x"}


def test_the_store_does_not_load_the_vector_stack() -> None:
    # The package's __init__ is skipped (it loads the whole engine): only what the store's
    # own modules import gets loaded.
    code = (
        "import importlib.util, sys, types\n"
        "package = types.ModuleType('glassrag')\n"
        "package.__path__ = importlib.util.find_spec('glassrag').submodule_search_locations\n"
        "sys.modules['glassrag'] = package\n"
        "import glassrag.store.database, glassrag.store.migrations, glassrag.store.postgres\n"
        "import glassrag.store.bearer_tokens, glassrag.store.traces\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('glassrag.dense',"
        " 'glassrag.vectors', 'glassrag.retrieval', 'numpy', 'faiss', 'tantivy')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_postgres_gets_the_same_sets_and_tables(pg_dsn: str, tmp_path: Path) -> None:
    store = Store.postgres(pg_dsn)
    try:
        assert {s.name: s.applied for s in store.migrations()} == ALL
        tables = {r["table_name"] for r in store.db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")}
        sqlite_tables = set(_schema_tables(tmp_path))
        assert tables == sqlite_tables | {migrations.TABLE}
        assert migrations.migrate(store.db, "again", "now") == []
    finally:
        store.close()


def _schema_tables(tmp_path: Path) -> list[str]:
    Store(tmp_path / DB_NAME).close()
    db = sqlite3.connect(tmp_path / DB_NAME)
    try:
        return [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            f" AND name NOT IN ('{migrations.TABLE}', 'sqlite_sequence')")]
    finally:
        db.close()


def test_postgres_servers_opening_a_new_database_together_migrate_it_once(
        pg_dsn: str) -> None:
    code = ("import sys; from glassrag.store.database import Store\n"
            "s = Store.postgres(sys.argv[1]); print(len(s.migrations())); s.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, pg_dsn], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 3, [err for _, err in results]
    store = Store.postgres(pg_dsn)
    count = store.db.execute(f"SELECT COUNT(*) AS n FROM {migrations.TABLE}").fetchone()["n"]
    store.close()
    assert count == sum(len(v) for v in ALL.values())


def _trace_body(doc_ids: list[str]) -> str:
    return json.dumps({"principal": {"principal_id": "ana"},
                       "citations": [{"doc_id": d, "chunk_id": f"{d}#0"} for d in doc_ids]})


def _undo_trace_citations(store: Store) -> None:
    """The store as it was before ``m002_trace_citations``: traces, no citation index."""
    store.db.begin()
    store.db.execute("DROP TABLE trace_citations")
    store.db.execute(f"DELETE FROM {migrations.TABLE} WHERE name = 'm002_trace_citations'")
    store.db.commit()


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_traces_written_before_the_citation_index_are_indexed_on_open(
        dialect: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    def opened() -> Store:
        if dialect == "sqlite":
            return Store(tmp_path / DB_NAME)
        return Store.postgres(request.getfixturevalue("pg_dsn"))

    store = opened()
    try:
        store.db.begin()
        for trace_id, cited in (("tr_a", ["guide.md", "faq.md", "guide.md"]), ("tr_b", []),
                                ("tr_c", ["faq.md"])):
            store.db.execute("INSERT INTO traces(trace_id, created_at, principal_id, status,"
                             " question, body) VALUES (?, 'now', 'ana', 'answered', 'q', ?)",
                             (trace_id, _trace_body(cited)))
        store.db.commit()
        _undo_trace_citations(store)
    finally:
        store.close()
    store = opened()
    try:
        rows = store.db.execute("SELECT doc_id, trace_id FROM trace_citations"
                                " ORDER BY doc_id, trace_id").fetchall()
        assert [tuple(r) if dialect == "sqlite" else (r["doc_id"], r["trace_id"])
                for r in rows] == [("faq.md", "tr_a"), ("faq.md", "tr_c"), ("guide.md", "tr_a")]
    finally:
        store.close()
