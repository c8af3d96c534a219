"""The request path on the Qdrant index: the knowledge base's lock is held around store and
Qdrant access only, never while a model embeds a query (as for the embedded index, see
tests/test_request_path.py)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import write_jsonl
from glassrag import KnowledgeBase
from glassrag.dense import embedders
from glassrag.records import Status
from qdrant_support import drop_collections, qdrant_kb_dir
from test_request_path import DOCS, SLOW, WAIT, GatedEmbedder

pytest_plugins = ["qdrant_fixtures"]


@pytest.fixture
def gated_qdrant(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                 qdrant_backend: str) -> Iterator[KnowledgeBase]:
    monkeypatch.setitem(embedders.EMBEDDER_KINDS, "gated",
                        lambda target, **opts: GatedEmbedder(int(target), **opts))
    kb_dir = qdrant_kb_dir(tmp_path / "kb", qdrant_backend)
    kb = KnowledgeBase.open(kb_dir)
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)], embedder="gated:64")
    yield kb
    kb.close()
    drop_collections(kb_dir)


def test_qdrant_reads_go_on_while_another_querys_embedding_runs(
        gated_qdrant: KnowledgeBase) -> None:
    side = gated_qdrant.dense()
    assert side is not None and isinstance(side.embedder, GatedEmbedder)
    embedder = side.embedder
    with ThreadPoolExecutor(max_workers=4) as pool:
        slow = pool.submit(gated_qdrant.search, f"refunds {SLOW}", mode="dense")
        try:
            assert embedder.entered.wait(WAIT)
            # The slow search is inside the embedder; dense, hybrid and bm25 reads on the
            # same knowledge base (and its Qdrant collection) still complete.
            dense = pool.submit(gated_qdrant.search, "refunds card", mode="dense").result(WAIT)
            assert dense.hits and dense.hits[0].chunk.doc_id == "refunds"
            answer = pool.submit(gated_qdrant.ask, "How long do refunds take to reach the card?",
                                 mode="hybrid").result(WAIT)
            assert answer.status == Status.ANSWERED
            assert pool.submit(gated_qdrant.search, "refunds").result(WAIT).hits
            assert pool.submit(gated_qdrant.status).result(WAIT)["chunks"] >= 2
            assert not slow.done()
        finally:
            embedder.release.set()
        assert slow.result(WAIT).hits[0].chunk.doc_id == "refunds"
