"""The store on its own, the same tests on SQLite and on a real PostgreSQL: what is written
reads back, updates keep insertion order, deletes are logged, rows have names, and one
writer at a time holds the writer lock."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from glassrag.dense.embeddings import get_vectors, put_vectors, record_model, recorded_model
from glassrag.records import ChunkSpan, Document
from glassrag.store.bearer_tokens import TokenReader, create_token, principal_for, revoke_token
from glassrag.store.database import DB_NAME, NewDocument, Store, now


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened = Store(tmp_path / DB_NAME)
    else:
        opened = Store.postgres(request.getfixturevalue("pg_dsn"))
    yield opened
    opened.close()


def new_document(doc_id: str, texts: list[str], roles: tuple[str, ...] = ("public",),
                 version: int = 1, title: str = "") -> NewDocument:
    text = "\n\n".join(texts)
    spans, start = [], 0
    for n, part in enumerate(texts):
        spans.append(ChunkSpan(part, 2 * n + 1, 2 * n + 1, start, start + len(part),
                               heading=f"h{n}" if n else None))
        start += len(part) + 2
    document = Document(doc_id=doc_id, source=f"{doc_id}.md", title=title or doc_id.title(),
                        roles=roles, content_hash=f"hash-{doc_id}-{version}-{hash(text)}",
                        version=version, parser="markdown", chunker="docs",
                        chunk_count=len(spans), path=f"/docs/{doc_id}.md",
                        metadata={"lang": "en"})
    return NewDocument(document=document, text=text, fingerprint=f"fp-{doc_id}-{version}",
                       spans=spans, tokens=[part.lower().split() for part in texts],
                       positions={"page": (1, 1, 2)}, roles_origin="document")


def write(store: Store, batch: list[NewDocument]) -> None:
    known = store.fingerprints()
    store.begin()
    try:
        store.write_documents(batch, known)
        store.commit()
    except BaseException:
        store.rollback()
        raise


def test_documents_and_chunks_read_back(store: Store) -> None:
    write(store, [new_document("alpha", ["Refunds take days.", "Second part here."]),
                  new_document("beta", ["Salaries are secret."], roles=("hr",))])
    alpha = store.document("alpha")
    assert alpha is not None and alpha.roles == ("public",) and alpha.metadata == {"lang": "en"}
    assert alpha.positions == {"page": (1, 1, 2)} and alpha.chunk_count == 2
    chunks = store.chunks_of("alpha")
    assert [(c.chunk_id, c.line_start, c.heading, c.page) for c in chunks] == [
        ("alpha#1", 1, None, 1), ("alpha#2", 3, "h1", 2)]
    assert chunks[1].text == "Second part here." and chunks[1].title == "Alpha"
    rows = {c.chunk_id: rowid for rowid, c in
            ((r, c) for r, (c, _) in store.chunks_with_tokens(
                [row[0] for row in store.index_rows()]).items())}
    found = store.chunks_with_tokens(list(rows.values()))
    assert found[rows["beta#1"]][1] == "salaries are secret."
    assert store.version_text(alpha.content_hash) == "Refunds take days.\n\nSecond part here."
    assert store.counts() == {"documents": 2, "chunks": 3, "versions": 2, "changes": 2}
    assert store.roles_origins("/docs/alpha.md") == {"alpha": "document"}
    assert store.roles_origins("/docs/gamma.md") == {}


def test_an_update_keeps_the_first_insertion_order(store: Store) -> None:
    write(store, [new_document("first", ["one"]), new_document("second", ["two"])])
    write(store, [new_document("first", ["one, changed"], version=2)])
    assert [d.doc_id for d in store.documents()] == ["first", "second"]
    assert [c.chunk_id for c in store.iter_chunks()] == ["first#1", "second#1"]
    assert [h["version"] for h in store.history("first")] == [1, 2]
    assert store.changes_since(0)[-1][1:] == ("first", "upsert")


def test_index_rows_carry_roleset_ids_and_chunk_order(store: Store) -> None:
    write(store, [new_document("a", ["x y"], roles=("hr",)), new_document("b", ["z", "w"])])
    sets = store.rolesets()
    rows = list(store.index_rows(["b"]))
    assert [(r["doc_id"], sets[r["roleset"]], r["tokens"]) for r in rows] == [
        ("b", ("public",), "z"), ("b", ("public",), "w")]
    rowid, doc_id, roleset, tokens = rows[0]  # rows also unpack as tuples
    assert (doc_id, tokens) == ("b", "z") and dict(rows[0])["rowid"] == rowid
    order = store.chunk_order([r["rowid"] for r in rows] + [10**9])
    assert sorted(order.values()) == [("b", 1), ("b", 2)]  # a missing id is left out


def test_role_sets_get_one_id_each_however_often_they_are_written(store: Store) -> None:
    for n in range(5):
        write(store, [new_document(f"d{n}", ["text"], roles=("hr",)),
                      new_document(f"e{n}", ["text"])])
    assert sorted(store.rolesets()) == [1, 2]  # no id used up by a repeated write


def test_delete_is_logged_and_the_version_number_retired(store: Store) -> None:
    write(store, [new_document("gone", ["bye"], version=3)])
    store.begin()
    assert store.delete_document("gone") and not store.delete_document("never")
    store.commit()
    assert store.document("gone") is None and store.chunks_of("gone") == []
    assert [op for _, _, op in store.changes_since(0)] == ["upsert", "delete"]
    assert store.retired_versions() == {"gone": 3}
    assert store.last_seq() == store.changes_since(0)[-1][0]


def test_same_version_new_roles_updates_its_history(store: Store) -> None:
    write(store, [new_document("pay", ["nine to five"], roles=("hr",))])
    doc = store.document("pay")
    assert doc is not None
    write(store, [new_document("pay", ["nine to five"], roles=("public",))])
    assert [h["roles"] for h in store.history("pay")] == [["public"]]
    assert store.versions_with_hash(doc.content_hash) == [("pay", ("public",))]


def test_file_records_are_replaced_and_forgotten(store: Store) -> None:
    store.begin()
    store.write_files([("/a.md", "sha1", "key", ["a"]), ("/b.md", "sha2", "key", ["b"])])
    store.commit()
    store.begin()
    store.write_files([("/a.md", "sha3", "key2", ["a", "a2"]), ("/b.md", None, "", [])])
    store.commit()
    assert store.file_record("/a.md") == ("sha3", "key2", ["a", "a2"])
    assert store.file_record("/b.md") is None


def test_a_rolled_back_write_leaves_nothing(store: Store) -> None:
    store.begin()
    store.write_documents([new_document("half", ["never committed"])], {})
    store.rollback()
    assert store.documents() == [] and store.last_seq() == 0 and not store.db.in_transaction


def test_tokens_are_seen_by_a_separate_reader(store: Store) -> None:
    token = create_token(store, "alice", ["hr"], admin=False)
    reader = TokenReader(store)
    try:
        found = reader.principal(token)
        assert found is not None and found.roles == ("hr", "public")
        revoke_token(store, token)
        assert reader.principal(token) is None and principal_for(store, token) is None
    finally:
        reader.close()


def test_vectors_round_trip_as_bytes(store: Store) -> None:
    vectors = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    store.begin()
    put_vectors(store.db, "hash:4", ["h1", "h2", "h3"], vectors)
    put_vectors(store.db, "hash:4", ["h1"], vectors[2:])  # an existing vector is kept
    record_model(store.db, "hash:4", 4)
    record_model(store.db, "hash:8", 8)
    store.commit()
    got = get_vectors(store.db, "hash:4", ["h3", "h1", "missing"])
    assert sorted(got) == ["h1", "h3"]
    assert np.array_equal(got["h1"], vectors[0]) and np.array_equal(got["h3"], vectors[2])
    assert recorded_model(store.db) == ("hash:8", 8)


def test_one_writer_at_a_time(store: Store) -> None:
    held, release, waited, second_in = (threading.Event() for _ in range(4))

    def first() -> None:
        with store.write_lock():
            held.set()
            release.wait(30)

    thread = threading.Thread(target=first)
    thread.start()
    assert held.wait(30)

    def second() -> None:
        with store.write_lock(on_wait=waited.set):
            second_in.set()

    other = threading.Thread(target=second)
    other.start()
    assert waited.wait(30), "the second writer did not find the lock taken"
    assert not second_in.is_set()
    release.set()
    thread.join(30)
    other.join(30)
    assert second_in.is_set()


def test_sqlite_connections_are_still_sqlite3(tmp_path: Path) -> None:
    store = Store(tmp_path / DB_NAME)
    try:
        assert isinstance(store.db, sqlite3.Connection) and store.dialect == "sqlite"
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


def test_a_postgres_row_reads_like_sqlite3_row(pg_dsn: str) -> None:
    store = Store.postgres(pg_dsn)
    try:
        row = store.db.execute("SELECT 1 AS one, 'a%b?' AS two, ? AS three", ("x",)).fetchone()
        assert (row[0], row["two"], row["three"]) == (1, "a%b?", "x")
        assert dict(row) == {"one": 1, "two": "a%b?", "three": "x"} and tuple(row) == row[:]
        assert now() < "9999"
    finally:
        store.close()
