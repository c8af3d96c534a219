"""Hybrid fusion counts BM25 ``identifier_bm25_factor`` times when the query names an
identifier: the embedder cannot tell one stream function from another, BM25 matches the
name itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from glassrag import KnowledgeBase, Principal
from glassrag.retrieval.search import fusion_settings
from glassrag.settings import DenseSettings

READER = Principal("reader", roles=["public"])

PAGES = {
    "fs.md": "# fs.createReadStream\n\nOpens a file as a readable stream; highWaterMark "
             "defaults to 64 KiB for this stream.\n",
    "stream.md": "# Readable streams\n\nA readable stream buffers data up to its "
                 "highWaterMark before it stops reading from the source stream.\n",
    "net.md": "# Sockets\n\nA socket is a duplex stream over a network connection.\n",
}


def test_identifier_queries_weigh_bm25_by_the_factor() -> None:
    settings = DenseSettings(bm25_weight=1.5)
    named = fusion_settings(settings, "What highWaterMark does fs.createReadStream use?")
    assert named.bm25_weight == pytest.approx(3.0)
    assert named.dense_weight == settings.dense_weight
    assert fusion_settings(settings, "How large is the stream buffer?") is settings
    off = DenseSettings(identifier_bm25_factor=1.0)
    assert fusion_settings(off, "What does fs.createReadStream return?") is off


def _kb(path: Path, factor: float, docs: Path, fusion: str = "weighted") -> KnowledgeBase:
    path.mkdir(parents=True)
    (path / "glassrag.toml").write_text(
        f'[dense]\nembedder = "hash:64"\nidentifier_bm25_factor = {factor}\n'
        f'fusion = "{fusion}"\n', encoding="utf-8")
    kb = KnowledgeBase.open(path)
    kb.ingest([docs])
    return kb


def test_a_named_identifier_doubles_bm25s_share_of_the_fused_score(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    named = "What highWaterMark does fs.createReadStream give a stream?"
    plain = "What highwatermark does a readable stream have?"
    with _kb(tmp_path / "off", 1.0, docs) as off, _kb(tmp_path / "on", 2.0, docs) as on:
        for query, extra in ((named, 1.0), (plain, 0.0)):
            before = off.search(query, principal=READER, mode="hybrid", top_k=3).hits
            after = on.search(query, principal=READER, mode="hybrid", top_k=3).hits
            # BM25's best candidate normalises to 1.0, so its fused score gains exactly one
            # more bm25_weight when the query names an identifier, and nothing otherwise.
            best = max(before, key=lambda h: h.scores["bm25"])
            again = next(h for h in after if h.chunk.chunk_id == best.chunk.chunk_id)
            assert again.scores["weighted"] == pytest.approx(best.scores["weighted"] + extra)
            assert again.scores["bm25"] == pytest.approx(best.scores["bm25"])
        top = on.search(named, principal=READER, mode="hybrid", top_k=1)
        assert top.hits[0].chunk.doc_id == "fs.md"
        # The weights each search fused with are shown: in the result, the trace, inspect.
        assert top.fusion_weights == {"bm25": 2.0, "dense": 1.0}
        assert off.search(named, principal=READER, mode="hybrid").fusion_weights == {
            "bm25": 1.0, "dense": 1.0}
        assert on.search(plain, principal=READER, mode="hybrid").fusion_weights == {
            "bm25": 1.0, "dense": 1.0}
        assert on.search(named, principal=READER, mode="bm25").fusion_weights is None
        answer = on.ask(named, principal=READER, mode="hybrid")
        trace = on.trace(answer.trace_id)
        assert trace["settings"]["fusion_weights"] == {"bm25": 2.0, "dense": 1.0}
        assert on.inspect(named, principal=READER, mode="hybrid")["fusion_weights"] == {
            "bm25": 2.0, "dense": 1.0}


def test_reciprocal_rank_fusion_takes_no_weights_and_reports_none(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fs.md").write_text(PAGES["fs.md"], encoding="utf-8")
    with _kb(tmp_path / "rrf", 2.0, docs, fusion="rrf") as kb:
        found = kb.search("What does fs.createReadStream return?", principal=READER,
                          mode="hybrid")
        assert found.hits and "rrf" in found.hits[0].scores
        assert found.fusion_weights is None and "fusion_weights" not in found.to_dict()
