"""readable_bm25 against an established implementation: under ``conceal``, a non-admin's
BM25 scores are bm25s's Lucene BM25 over exactly the chunks it may read (bm25s leaves out
the constant factor k1 + 1 that Tantivy and glassrag apply)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.text.analysis import analyze, unique_terms

bm25s = pytest.importorskip("bm25s")
K1 = 1.2  # Lucene's, Tantivy's and glassrag's

# Repeats next to each other ("refund refund"), far apart, long and short chunks.
PUBLIC = [
    ("p-short", "Refund days."),
    ("p-repeat", "Refund refund refund: the refund desk answers refund mail within days."),
    ("p-long", "The travel office books trains, hotels and flights for staff and answers "
               "questions about receipts, mileage, per diem rates and refund claims."),
    ("p-none", "Canteen opening hours change in August."),
    ("p-key", "Keys for the API are rotated; a key that leaked is revoked the same day."),
]
HIDDEN = [(f"h-{n}", "Refund days refund days key key " * (n + 2)) for n in range(4)]
QUERIES = ["refund days", "refund", "API key days", "travel refund claims", "canteen hours"]
P0 = Principal("p0")


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readable-bm25")
    kb_dir = init_kb_with(root / "kb", 'disclosure = "disclose"', 'disclosure = "conceal"')
    records = [{"doc_id": d, "title": "Notice", "source": f"{d}.md", "roles": [role], "text": t}
               for role, docs in (("hr", HIDDEN), ("public", PUBLIC)) for d, t in docs]
    with KnowledgeBase.open(kb_dir) as kb:
        assert kb.ingest([write_jsonl(root / "docs.jsonl", records)]).failed == []
    return kb_dir


def _reference(kb: KnowledgeBase, query: str) -> dict[str, float]:
    """bm25s (method "lucene") over the public chunks' own analysed tokens."""
    rows = kb.store.db.execute(
        "SELECT c.chunk_id, c.tokens FROM chunks c JOIN documents d USING (doc_id)"
        " WHERE d.roles = '[\"public\"]' ORDER BY c.chunk_id").fetchall()
    corpus = [tokens.split() for _, tokens in rows]
    vocab = {t: i for i, t in enumerate(sorted({w for doc in corpus for w in doc}))}
    retriever = bm25s.BM25(method="lucene", k1=K1, b=0.75)
    retriever.index(bm25s.tokenization.Tokenized(
        ids=[[vocab[w] for w in doc] for doc in corpus], vocab=vocab), show_progress=False)
    terms = [t for t in unique_terms(analyze(query)) if t in vocab]
    scores = retriever.get_scores(terms) * (K1 + 1.0) if terms else np.zeros(len(rows))
    return {chunk_id: float(s) for (chunk_id, _), s in zip(rows, scores, strict=True) if s > 0}


@pytest.mark.parametrize("query", QUERIES)
def test_conceal_scores_are_bm25_over_the_readable_chunks(kb_dir: Path, query: str) -> None:
    with KnowledgeBase.open(kb_dir) as kb:
        expected = _reference(kb, query)
        hits = kb.search(query, principal=P0, top_k=50).hits
    assert expected, query
    got = {h.chunk.chunk_id: h.score for h in hits}
    assert set(got) == set(expected)
    for chunk_id, score in expected.items():
        assert got[chunk_id] == pytest.approx(score, rel=1e-5), chunk_id


def test_inspect_contributions_are_per_term_bm25(kb_dir: Path) -> None:
    with KnowledgeBase.open(kb_dir) as kb:
        view = kb.inspect("refund days", principal=P0, candidates=50)
        for row in view["candidates"]:
            parts = row["contributions"]
            assert set(parts) == set(row["matched_terms"])
            assert sum(parts.values()) == pytest.approx(row["score"], abs=1e-5)
            for term, value in parts.items():
                assert value == pytest.approx(_reference(kb, term)[row["chunk_id"]], rel=1e-5)
