"""Dense and hybrid retrieval through the knowledge base: real SQLite, Tantivy and vectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, write_jsonl
from dense_fixtures import minilm_path  # noqa: F401 - a fixture used by the model tier
from glassrag import KnowledgeBase, Principal
from glassrag.dense.hash_embedder import HashEmbedder
from glassrag.errors import EmbedderMismatch, EmbeddingError
from glassrag.interfaces.cli.main import app

PUBLIC = Principal("p")
HR = Principal("h", roles=["hr"])

RECORDS = [
    {"doc_id": "refunds", "title": "Refunds", "roles": ["public"],
     "text": "Refund requests are accepted within 14 days. Money goes back to the card."},
    {"doc_id": "hours", "title": "Hours", "roles": ["public"],
     "text": "The help desk opens at nine every weekday morning."},
    {"doc_id": "salaries", "title": "Salary bands", "roles": ["hr"],
     "text": "Salary bands for engineers are reviewed every spring by the hr team."},
]


@pytest.fixture
def dense_kb(kb: KnowledgeBase, tmp_path: Path) -> KnowledgeBase:
    report = kb.ingest([write_jsonl(tmp_path / "r.jsonl", RECORDS)], embedder="hash:256")
    assert report.failed == []
    return kb


def test_dense_and_hybrid_modes_keep_per_retriever_scores(dense_kb: KnowledgeBase) -> None:
    dense = dense_kb.search("refund requests card", mode="dense", top_k=3)
    assert dense.hits[0].chunk.doc_id == "refunds"
    assert dense.hits[0].scores["dense"] == dense.hits[0].score
    hybrid = dense_kb.search("refund requests card", mode="hybrid", top_k=3)
    top = hybrid.hits[0]
    assert top.chunk.doc_id == "refunds"
    # Weighted fusion is the default (it beat RRF on every BEIR set measured).
    assert set(top.scores) == {"bm25", "dense", "weighted"} and top.ranks["weighted"] == 1
    assert top.ranks["bm25"] == 1 and top.ranks["dense"] == 1
    assert top.score == pytest.approx(2.0)  # best of both: 1.0 + 1.0 after min-max
    dense_kb.settings.dense.fusion = "rrf"
    rrf = dense_kb.search("refund requests card", mode="hybrid", top_k=3).hits[0]
    assert set(rrf.scores) == {"bm25", "dense", "rrf"} and rrf.ranks["rrf"] == 1
    assert rrf.score == pytest.approx(2 / 61)


def test_dense_filter_and_blocked_counts(dense_kb: KnowledgeBase) -> None:
    public = dense_kb.search("salary bands engineers", mode="dense", principal=PUBLIC)
    assert all(h.chunk.doc_id != "salaries" for h in public.hits)
    assert public.blocked_count == 1
    hr = dense_kb.search("salary bands engineers", mode="dense", principal=HR)
    assert hr.hits[0].chunk.doc_id == "salaries" and hr.blocked_count == 0
    answer = dense_kb.ask("salary bands for engineers", mode="hybrid", principal=PUBLIC)
    assert answer.status == "blocked_by_permission"


def test_dense_leak(dense_kb: KnowledgeBase) -> None:
    for mode in ("dense", "hybrid"):
        for query in ("salary bands engineers", "spring review", "refund card", "hr team"):
            for surface in (
                dense_kb.search(query, mode=mode, principal=PUBLIC, top_k=10).to_dict(),
                dense_kb.ask(query, mode=mode, principal=PUBLIC).to_dict(),
                dense_kb.inspect(query, mode=mode, principal=PUBLIC),
            ):
                text = json.dumps(surface).casefold()
                assert "salaries" not in text and "reviewed every spring" not in text


def test_unchanged_chunks_are_not_embedded_again(dense_kb: KnowledgeBase, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = HashEmbedder._embed_batch
    monkeypatch.setattr(HashEmbedder, "_embed_batch",
                        lambda self, texts: calls.append(len(texts)) or real(self, texts))
    changed = [dict(r) for r in RECORDS]
    changed[1]["text"] = "The help desk now opens at ten every weekday morning."
    dense_kb.ingest([write_jsonl(tmp_path / "r.jsonl", changed)])  # embedder is recorded
    assert calls == [1]
    assert dense_kb.search("help desk opens ten", mode="dense").hits[0].chunk.doc_id == "hours"


def test_query_with_another_embedder_is_refused(dense_kb: KnowledgeBase) -> None:
    with pytest.raises(EmbedderMismatch, match="hash:256"):
        dense_kb.search("refund", mode="dense", embedder="hash:128")


def test_failed_embedding_keeps_lexical_and_resumes(kb: KnowledgeBase, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self, texts):
        raise EmbeddingError("embedding endpoint unreachable (test)")

    monkeypatch.setattr(HashEmbedder, "_embed_batch", broken)
    report = kb.ingest([write_jsonl(tmp_path / "r.jsonl", RECORDS)], embedder="hash:256")
    assert report.added == 3 and "glassrag embed" in report.failed[0].error
    assert kb.search("refund").hits  # the lexical part is committed
    monkeypatch.undo()
    resumed = kb.embed("hash:256")
    assert resumed.embedded == 3
    assert kb.search("refund card", mode="dense").hits[0].chunk.doc_id == "refunds"


def test_vector_index_persists_across_opens(dense_kb: KnowledgeBase) -> None:
    path = dense_kb.path
    dense_kb.close()
    with KnowledgeBase.open(path) as again:
        assert again.embed().embedded == 0
        assert again.search("help desk", mode="dense").hits[0].chunk.doc_id == "hours"
        assert (path / "index" / "vectors").is_dir()


def test_cli_dense_and_embed(tmp_path: Path) -> None:
    runner = CliRunner()
    kb = str(tmp_path / "kb")
    assert runner.invoke(app, ["--kb", kb, "ingest", str(EXAMPLES / "workshop" /
                                                         "documents.jsonl")]).exit_code == 0
    embedded = runner.invoke(app, ["--kb", kb, "embed", "--embedder", "hash:64", "--json"])
    assert json.loads(embedded.stdout)["embedded"] == 4
    found = runner.invoke(app, ["--kb", kb, "search", "refund", "--mode", "hybrid", "--json"])
    assert json.loads(found.stdout)["hits"][0]["chunk_id"] == "refund-policy#1"
    missing = runner.invoke(app, ["--kb", str(tmp_path / "other"), "ingest",
                                  str(EXAMPLES / "kb" / "kb.txt")])
    assert missing.exit_code == 0
    no_embedder = runner.invoke(app, ["--kb", str(tmp_path / "other"), "search", "发票",
                                      "--mode", "dense", "--json"])
    assert no_embedder.exit_code == 2
    assert "embedder" in json.loads(no_embedder.stdout)["error"]["message"]


@pytest.mark.model
def test_paraphrase_found_by_dense_and_answered(kb: KnowledgeBase, tmp_path: Path,
                                                minilm_path: str) -> None:  # noqa: F811
    kb.ingest([write_jsonl(tmp_path / "r.jsonl", RECORDS)], embedder="st:all-MiniLM-L6-v2")
    question = "How can I get reimbursed?"
    assert kb.search(question, mode="bm25").hits == []  # no shared word: BM25 misses it
    dense = kb.search(question, mode="dense", top_k=1)
    assert dense.hits[0].chunk.doc_id == "refunds"
    answer = kb.ask(question, mode="dense")
    assert answer.status == "answered"
    assert answer.citations[0].doc_id == "refunds"
    unrelated = kb.ask("Which volcano erupted in 1815?", mode="dense")
    assert unrelated.status == "no_evidence"


def test_vectors_past_the_threshold_go_into_the_graph(kb: KnowledgeBase, tmp_path: Path) -> None:
    """After embedding, a knowledge base past the HNSW threshold searches a graph, not a delta
    that would be scanned in full on every query."""
    pytest.importorskip("faiss", reason="faiss-cpu is not installed")
    from glassrag.dense.retriever import DenseRetriever
    from glassrag.vectors.index import HnswParams

    records = [{"doc_id": f"d{i}", "text": f"note {i} about topic {i % 7} and item {i}"}
               for i in range(120)]
    kb.ingest([write_jsonl(tmp_path / "r.jsonl", records)])
    side = DenseRetriever(kb.path, kb.store, "hash:64", HnswParams(threshold=50))
    report = side.embed()
    assert report.embedded == 120
    index = side.index()
    assert index.hnsw is not None and not index.needs_compaction()
    hits = index.search(side.embedder.embed(["note 5 about topic 5"])[0], None, 3)[0]
    assert hits


def test_status_shows_the_graph_and_its_measured_recall(kb: KnowledgeBase,
                                                        tmp_path: Path) -> None:
    """[dense] hnsw_threshold reaches the index; status reports the calibration of the graph
    (read from the index's state file) so nobody has to trust an approximate search blindly."""
    pytest.importorskip("faiss", reason="faiss-cpu is not installed")
    records = [{"doc_id": f"d{i}", "text": f"note {i} about topic {i % 7} and item {i}"}
               for i in range(120)]
    kb.settings.dense.hnsw_threshold = 50
    kb.ingest([write_jsonl(tmp_path / "r.jsonl", records)], embedder="hash:64")
    dense = kb.status()["dense"]
    assert (dense["embedder"], dense["vectors"], dense["hnsw_threshold"]) == ("hash:64", 120, 50)
    assert dense["search"] == "hnsw"
    calibration = dense["calibration"]
    assert calibration["accepted"] and calibration["recall_at_10"] >= calibration["target"]
    assert calibration["sample"] == 120  # fewer rows than the sample size: all of them
    text = CliRunner().invoke(app, ["--kb", str(kb.path), "status"]).stdout
    assert "dense.search: hnsw" in text and "dense.calibration.recall_at_10:" in text


def test_the_graph_is_calibrated_on_the_questions_asked(kb: KnowledgeBase,
                                                        tmp_path: Path) -> None:
    """With enough recorded questions (traces), the graph's recall is measured on them
    rather than on stored vectors, and status says which."""
    pytest.importorskip("faiss", reason="faiss-cpu is not installed")
    from glassrag.dense.retriever import DenseRetriever
    from glassrag.vectors.index import HnswParams

    records = [{"doc_id": f"d{i}", "text": f"note {i} about topic {i % 7} and item {i}"}
               for i in range(150)]
    kb.ingest([write_jsonl(tmp_path / "r.jsonl", records)], embedder="hash:64")
    for i in range(60):
        kb.ask(f"which note is about topic {i % 7} and item {i}?", mode="dense")
    kb.ask("which note is about topic 0 and item 0?", mode="dense")  # a repeat counts once
    side = DenseRetriever(kb.path, kb.store, "hash:64", HnswParams(threshold=100))
    index = side.index()  # the threshold is now below the size: the graph is built
    assert index.hnsw is not None and index.calibration is not None
    assert (index.calibration.queries, index.calibration.sample) == ("questions", 60)
    assert index.calibration.required == index.calibration.target
    assert side.describe()["calibration"]["queries"] == "questions"
    # Raising the threshold past the index again drops the graph at the next load.
    exact = DenseRetriever(kb.path, kb.store, "hash:64", HnswParams(threshold=1000))
    assert exact.index().hnsw is None and exact.index().calibration is None
    assert exact.describe()["search"] == "exact" and "calibration" not in exact.describe()
