"""Stored embeddings in a real knowledge base: caching by text hash, resuming after a
failing embedder, the model check, and the vector index following the change log."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import top_rows, write_jsonl
from glassrag import KnowledgeBase
from glassrag.dense.embeddings import (
    catch_up,
    check_model,
    chunk_text_hash,
    embed_pending,
    embedding_text,
    get_vectors,
    load_vector_rows,
    record_model,
    recorded_model,
    refresh_docs,
)
from glassrag.dense.hash_embedder import HashEmbedder
from glassrag.errors import EmbedderMismatch, EmbeddingError
from glassrag.store.connection import Connection
from glassrag.vectors.index import VectorIndex

DOCS = [
    {"doc_id": "refunds", "title": "Refunds", "source": "r.md", "roles": ["public"],
     "text": "Refunds are paid within 14 days."},
    {"doc_id": "salaries", "title": "Salaries", "source": "s.md", "roles": ["finance"],
     "text": "Salary bands are reviewed every March."},
    # Same title and text as refunds (what is embedded): one vector serves both.
    {"doc_id": "copy", "title": "Refunds", "source": "c.md", "roles": ["employee"],
     "text": "Refunds are paid within 14 days."},
    {"doc_id": "badges", "title": "Badges", "source": "b.md", "roles": ["employee"],
     "text": "Badges open every door on the ground floor."},
]


def db_of(kb: KnowledgeBase) -> Connection:
    return kb.store.db


@pytest.fixture
def loaded(kb: KnowledgeBase, tmp_path: Path) -> KnowledgeBase:
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)])
    return kb


class FailingAfter(HashEmbedder):
    """Works for ``good`` batches, then the endpoint "goes down"."""

    def __init__(self, good: int) -> None:
        super().__init__(64, batch_size=1)
        self.good = good

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        if self.good == 0:
            raise EmbeddingError("http://embedder/v1/embeddings: unreachable")
        self.good -= 1
        return super()._embed_batch(texts)


def test_embed_pending_caches_by_text_hash(loaded: KnowledgeBase) -> None:
    db = db_of(loaded)
    seen: list[tuple[int, int]] = []
    report = embed_pending(db, HashEmbedder(64), progress=lambda d, t: seen.append((d, t)))
    assert (report.embedded, report.cached) == (3, 0)  # 4 chunks, 3 distinct texts
    assert sorted(report.doc_ids) == ["badges", "copy", "refunds", "salaries"]
    assert seen[-1] == (3, 3)
    again = embed_pending(db, HashEmbedder(64))
    assert (again.embedded, again.cached, again.doc_ids) == (0, 4, [])
    text = embedding_text(str(DOCS[0]["title"]), str(DOCS[0]["text"]))
    stored = get_vectors(db, "hash:64", [chunk_text_hash(text)])
    np.testing.assert_allclose(next(iter(stored.values())), HashEmbedder(64).embed([text])[0])
    # Another model is a separate set of vectors.
    assert embed_pending(db, HashEmbedder(32)).embedded == 3


def test_a_failing_embedder_keeps_finished_batches_and_resumes(loaded: KnowledgeBase) -> None:
    db = db_of(loaded)
    with pytest.raises(EmbeddingError, match="unreachable"):
        embed_pending(db, FailingAfter(good=2), batch_size=1)
    assert db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == 2
    assert not db.in_transaction
    # Two texts cover three chunks (refunds and copy share one); badges is still to do.
    assert load_vector_rows(db, "hash:64", 64).missing == 1
    resumed = embed_pending(db, HashEmbedder(64, batch_size=1), batch_size=1)
    assert resumed.embedded == 1 and resumed.cached == 3
    # The lexical side never noticed.
    assert loaded.search("refunds paid").hits
    assert loaded.store.counts()["chunks"] == 4


def test_model_is_recorded_and_checked(loaded: KnowledgeBase) -> None:
    db = db_of(loaded)
    assert recorded_model(db) is None
    check_model(db, HashEmbedder(64))  # nothing recorded: anything goes
    record_model(db, "hash:64", 64)
    assert recorded_model(db) == ("hash:64", 64)
    check_model(db, HashEmbedder(64))
    with pytest.raises(EmbedderMismatch, match="made with hash:64.*hash:32"):
        check_model(db, HashEmbedder(32))


def test_the_index_follows_the_change_log(loaded: KnowledgeBase, tmp_path: Path) -> None:
    db = db_of(loaded)
    embedder = HashEmbedder(64)
    embed_pending(db, embedder)
    index = VectorIndex(64, embedder.name)
    assert catch_up(index, db) == 4 and len(index) == 4
    assert index.applied_seq == loaded.store.last_seq()
    query = embedder.embed(["when are refunds paid"])[0]
    public = {i for i, roles in loaded.store.rolesets().items() if "public" in roles}
    top = index.search(query, public, 5)
    assert [r for r, _ in top_rows(index, query, public, 5)] == [m.rowid for m in top[0]]
    assert [loaded.store.chunks_by_rowid([m.rowid])[m.rowid].doc_id for m in top[0]] == \
        ["refunds"]
    assert top[1] == 3  # three chunks the public may not read
    # Change one document, delete another: replayed from the log.
    changed = [dict(DOCS[0], text="Refunds are paid within 30 days now."), DOCS[1]]
    loaded.ingest([write_jsonl(tmp_path / "docs.jsonl", changed + DOCS[2:])])
    loaded.delete("badges")
    assert catch_up(index, db) == 2
    assert load_vector_rows(db, embedder.name, 64).missing == 1  # the new text
    assert len(index) == 2  # refunds has no vector yet, badges is gone
    report = embed_pending(db, embedder)
    # Embedding logged the document that gained a vector, so replaying the log loads it (a
    # server following the log from another machine learns of it no other way).
    assert report.doc_ids == ["refunds"] and catch_up(index, db) == 1 and len(index) == 3
    refresh_docs(index, db, report.doc_ids)  # what the embedding process itself does
    assert len(index) == 3 and catch_up(index, db) == 0
    fresh = VectorIndex(64, embedder.name)
    fresh.rebuild(load_vector_rows(db, embedder.name, 64), loaded.store.last_seq())
    assert top_rows(index, query, None, 5) == top_rows(fresh, query, None, 5)
    best = top_rows(index, query, None, 5)
    rows = {r: loaded.store.chunks_by_rowid([r])[r].doc_id for r, _ in best}
    assert sorted(rows.values()) == ["copy", "refunds", "salaries"]
    # Saved and reopened, it knows where it stopped.
    index.save(tmp_path / "vectors")
    reopened = VectorIndex.load(tmp_path / "vectors")
    assert reopened is not None and reopened.applied_seq == loaded.store.last_seq()
    assert catch_up(reopened, db) == 0
