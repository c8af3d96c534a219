"""The Qdrant index: the role filter inside every query, blocked counts, incremental
updates and deletes, rebuilds, dense and hybrid, and the move from the embedded index.

Each test runs on qdrant-client's local mode, and against a real Qdrant given
``GLASSRAG_TEST_QDRANT_URL`` (see tests/qdrant_support.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.errors import EmptyQuery, GlassragError, InvalidInput
from glassrag.interfaces.cli.main import app
from glassrag.retrieval.qdrant_index import QdrantIndex
from glassrag.retrieval.query_terms import MAX_QUERY_TERMS
from qdrant_support import drop_collections, qdrant_kb_dir

# The fixtures qdrant_backend, qdrant_dir and qdrant_kb.
pytest_plugins = ["qdrant_fixtures"]

PUBLIC = Principal("p")
HR = Principal("h", roles=["hr"])


def _records(n_blocked: int) -> list[dict]:
    # The blocked chunks say "heron" three times in a short text: each outscores the one
    # readable chunk, which says it once among many other words.
    blocked = [{"doc_id": f"hr-{i}", "roles": ["hr"], "text": f"Heron heron heron {i}."}
               for i in range(n_blocked)]
    readable = {"doc_id": "open", "roles": ["public"],
                "text": "A heron was seen near the lake, the river, the pond and the old mill."}
    return [*blocked, readable]


def _index(kb: KnowledgeBase) -> QdrantIndex:
    assert isinstance(kb.lexical, QdrantIndex)
    return kb.lexical


def test_readable_chunk_below_many_blocked_ones_is_found(qdrant_kb: KnowledgeBase,
                                                          tmp_path: Path) -> None:
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(60)))
    admin = qdrant_kb.search("heron", principal=Principal("a", admin=True), top_k=61)
    assert [h.chunk.doc_id for h in admin.hits][-1] == "open"  # ranked below all 60
    found = qdrant_kb.search("heron", principal=PUBLIC, top_k=1)
    assert [h.chunk.doc_id for h in found.hits] == ["open"]
    assert found.blocked_count == 60
    assert qdrant_kb.ask("Where was a heron seen?", principal=PUBLIC).status == "answered"


def test_equal_scores_keep_the_embedded_indexs_order(qdrant_kb: KnowledgeBase,
                                                    tmp_path: Path) -> None:
    # Twelve chunks with the same text score the same; stored in a shuffled order, and one
    # updated (a new row) after. Both indexes order the ties by doc_id, also at the top-k
    # cut, where Qdrant alone would pick among them by point id.
    order = [7, 3, 11, 0, 5, 9, 1, 10, 4, 8, 2, 6]
    records = [{"doc_id": f"t{i:02}", "text": "same words exactly"} for i in order]
    corpus = write_jsonl(tmp_path / "t.jsonl", records)
    update = write_jsonl(tmp_path / "u.jsonl", [{**records[0], "text": "same words exactly."}])
    embedded = KnowledgeBase.open(tmp_path / "embedded")
    try:
        for kb in (embedded, qdrant_kb):
            kb.ingest(corpus)
            kb.ingest(update)
        for top_k in (1, 5, 12):
            want = [h.chunk.doc_id for h in embedded.search("same words", top_k=top_k).hits]
            got = [h.chunk.doc_id for h in qdrant_kb.search("same words", top_k=top_k).hits]
            assert got == want == [f"t{i:02}" for i in range(12)][:top_k]
    finally:
        embedded.close()


def test_stop_words_only_are_refused_naming_the_callers_field(qdrant_kb: KnowledgeBase,
                                                              tmp_path: Path) -> None:
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(1)))
    with pytest.raises(EmptyQuery, match="the question has no searchable terms") as asked:
        qdrant_kb.ask("the of and")
    with pytest.raises(EmptyQuery, match="the query has no searchable terms") as searched:
        qdrant_kb.search("the of and")
    assert asked.value.details["field"] == "question"
    assert searched.value.details["field"] == "query"


def test_blocked_counts_are_the_unreadable_matching_chunks(qdrant_kb: KnowledgeBase,
                                                           tmp_path: Path) -> None:
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(7) + [
        {"doc_id": "fin", "roles": ["finance"], "text": "The heron budget."},
        {"doc_id": "other", "roles": ["hr"], "text": "Nothing about birds."}]))
    assert qdrant_kb.search("heron", principal=PUBLIC).blocked_count == 8
    assert qdrant_kb.search("heron", principal=HR).blocked_count == 1
    assert qdrant_kb.search("heron", principal=Principal("a", admin=True)).blocked_count == 0
    assert qdrant_kb.search("birds", principal=PUBLIC).blocked_count == 1
    for principal in (PUBLIC, HR):
        only_blocked = qdrant_kb.ask("What is the budget?", principal=principal)
        assert only_blocked.status == "blocked_by_permission"
        assert only_blocked.citations == ()
    reader = qdrant_kb.ask("What is the budget?", principal=Principal("f", roles=["finance"]))
    assert reader.status == "answered"
    assert reader.citations[0].doc_id == "fin"


def test_incremental_updates_and_deletes(qdrant_kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Otters\n\nOtters hold hands while they sleep.\n")
    (docs / "b.md").write_text("# Lynx\n\nThe lynx has tufted ears.\n")
    qdrant_kb.ingest(docs)
    assert [h.chunk.doc_id for h in qdrant_kb.search("otters").hits] == ["a.md"]
    (docs / "a.md").write_text("# Otters\n\nSea otters use stones as tools.\n")
    qdrant_kb.ingest(docs)
    assert qdrant_kb.search("sleep").hits == []  # the old version's text is gone
    assert [h.chunk.text.splitlines()[-1] for h in qdrant_kb.search("stones").hits] == [
        "Sea otters use stones as tools."]
    qdrant_kb.delete("b.md")
    assert qdrant_kb.search("lynx").hits == []
    status = qdrant_kb.status()
    assert status["indexed_chunks"] == status["chunks"] == status["index"]["points"]
    assert status["applied_seq"] == status["last_seq"]


def test_another_process_sees_changes_through_the_change_log(qdrant_dir: Path,
                                                              tmp_path: Path) -> None:
    with KnowledgeBase.open(qdrant_dir) as reader:
        assert reader.search("heron").hits == []
        with KnowledgeBase.open(qdrant_dir) as writer:
            writer.ingest(write_jsonl(tmp_path / "d.jsonl", _records(2)))
        assert [h.chunk.doc_id for h in reader.search("lake").hits] == ["open"]


def test_rebuild_switches_to_a_new_collection_with_the_same_results(
        qdrant_kb: KnowledgeBase, tmp_path: Path) -> None:
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(5)))
    before = qdrant_kb.search("heron lake", principal=HR, top_k=10)
    serving = qdrant_kb.status()["index"]["serving"]
    assert qdrant_kb.reindex() == 6
    after = qdrant_kb.search("heron lake", principal=HR, top_k=10)
    assert qdrant_kb.status()["index"]["serving"] != serving
    assert [(h.chunk.chunk_id, round(h.score, 5)) for h in after.hits] == [
        (h.chunk.chunk_id, round(h.score, 5)) for h in before.hits]
    collections = [c.name for c in _index(qdrant_kb).call("get_collections").collections]
    assert serving not in collections  # the old one was dropped


def test_a_missing_collection_is_rebuilt_on_open(qdrant_dir: Path, tmp_path: Path) -> None:
    with KnowledgeBase.open(qdrant_dir) as kb:
        kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(3)))
        index = _index(kb)
        index.call("delete_collection", index.target())
    with KnowledgeBase.open(qdrant_dir) as kb:
        assert kb.status()["index"]["points"] == 4
        assert [h.chunk.doc_id for h in kb.search("lake").hits] == ["open"]


def test_average_length_is_measured_and_remeasured_when_the_corpus_doubles(
        qdrant_kb: KnowledgeBase, tmp_path: Path) -> None:
    qdrant_kb.ingest(write_jsonl(tmp_path / "a.jsonl", [
        {"doc_id": "one", "text": "Herons wade."}]))
    first = qdrant_kb.status()["index"]
    tokens = [t.split() for *_, t in qdrant_kb.store.index_rows()]
    assert (first["avgdl_scope"], first["avgdl"]) == ("measured", len(tokens[0]))
    qdrant_kb.ingest(write_jsonl(tmp_path / "b.jsonl", [
        {"doc_id": f"long-{i}", "text": "Herons wade in shallow water and wait for fish."}
        for i in range(3)]))
    second = qdrant_kb.status()["index"]
    assert second["avgdl"] > first["avgdl"]
    assert second["serving"] != first["serving"]


def test_long_questions_keep_the_rarest_readable_terms(qdrant_kb: KnowledgeBase,
                                                       tmp_path: Path) -> None:
    words = [f"word{i}" for i in range(MAX_QUERY_TERMS + 10)]
    # Every word but the last ten is common among public chunks; the last ten are rare
    # there but common in hidden chunks, which must not make them look common.
    records = [{"doc_id": f"pub-{i}", "text": " ".join(words[:MAX_QUERY_TERMS])}
               for i in range(3)]
    records.append({"doc_id": "rare", "text": " ".join(words[-10:])})
    records += [{"doc_id": f"hid-{i}", "roles": ["hr"], "text": " ".join(words[-10:])}
                for i in range(5)]
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", records))
    found = qdrant_kb.search(" ".join(words), principal=PUBLIC)
    assert len(found.query_terms) == MAX_QUERY_TERMS
    assert set(words[-10:]) <= set(found.query_terms)


def test_inspect_contributions_add_up_to_the_score(qdrant_kb: KnowledgeBase,
                                                   tmp_path: Path) -> None:
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(3)))
    view = qdrant_kb.inspect("heron near the lake", principal=HR)
    for row in view["candidates"]:
        assert sum(row["contributions"].values()) == pytest.approx(row["score"], rel=1e-5)
        assert set(row["contributions"]) == set(row["matched_terms"])


def _dense_kb(kb_dir: Path, backend: str, tmp_path: Path, **index: object) -> KnowledgeBase:
    qdrant_kb_dir(kb_dir, backend, '[dense]\nembedder = "hash:64"\n', **index)
    kb = KnowledgeBase.open(kb_dir)
    kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(4)))
    return kb


@pytest.mark.parametrize("fusion", ["dbsf", "rrf"])
def test_dense_and_hybrid_filter_inside_and_fuse_in_qdrant(
        qdrant_backend: str, tmp_path: Path, fusion: str) -> None:
    kb_dir = tmp_path / "kb"
    with _dense_kb(kb_dir, qdrant_backend, tmp_path, fusion=fusion) as kb:
        assert kb.status()["index"]["embedder"] == "hash:64"
        dense = kb.search("heron lake", principal=PUBLIC, mode="dense", top_k=5)
        assert [h.chunk.doc_id for h in dense.hits] == ["open"]
        assert dense.blocked_count == 4
        hybrid = kb.search("heron lake", principal=PUBLIC, mode="hybrid", top_k=5)
        assert [h.chunk.doc_id for h in hybrid.hits] == ["open"]
        hit = hybrid.hits[0]
        assert {"bm25", "dense", fusion} <= set(hit.scores)
        assert hit.score == hit.scores[fusion]
        # Qdrant's dbsf takes no weights, so none is reported; its rrf is sent them.
        assert hybrid.fusion_weights == (None if fusion == "dbsf" else {"bm25": 1.0,
                                                                         "dense": 1.0})
        named = kb.search("heronSighting near the lake", principal=PUBLIC, mode="hybrid")
        assert named.fusion_weights == (None if fusion == "dbsf" else {"bm25": 2.0,
                                                                        "dense": 1.0})
        assert hybrid.blocked_count == 4
        everyone = kb.search("heron", principal=HR, mode="hybrid", top_k=5)
        assert len(everyone.hits) == 5
        assert kb.ask("Where was a heron seen?", principal=PUBLIC, mode="hybrid").status == \
            "answered"
    drop_collections(kb_dir)


def test_vectors_embedded_later_reach_the_collection(qdrant_kb: KnowledgeBase,
                                                     tmp_path: Path) -> None:
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(2)))
    assert qdrant_kb.status()["index"]["embedder"] is None
    report = qdrant_kb.embed("hash:32")
    assert report.embedded == 3
    assert qdrant_kb.status()["index"]["embedder"] == "hash:32"
    assert [h.chunk.doc_id for h in qdrant_kb.search(
        "lake mill", mode="dense", top_k=1).hits] == ["open"]
    # Documents ingested afterwards are embedded and written with their vectors.
    qdrant_kb.ingest(write_jsonl(tmp_path / "e.jsonl", [
        {"doc_id": "late", "text": "Kingfishers dive for minnows."}]))
    assert [h.chunk.doc_id for h in qdrant_kb.search(
        "kingfishers minnows", mode="dense", top_k=1).hits] == ["late"]
    assert not any(p.name == "vectors" for p in (qdrant_kb.path / "index").iterdir())


def test_cli_reindex_moves_an_embedded_knowledge_base_to_qdrant(
        tmp_path: Path, qdrant_backend: str) -> None:
    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES], exclude=["**/*.yaml", "README.md"])
        embedded = kb.search("refund days", top_k=5)
    # The [index] options of the target, written by the move itself.
    target = qdrant_kb_dir(tmp_path / "probe", qdrant_backend)
    from glassrag.settings import load_settings

    wanted = load_settings(target).index
    args = ["--kb", str(kb_dir), "reindex", "--index", "qdrant"]
    if wanted.url:
        args += ["--url", wanted.url, "--collection", wanted.collection]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "(qdrant index)" in result.output
    assert 'backend = "qdrant"' in (kb_dir / "glassrag.toml").read_text()
    with KnowledgeBase.open(kb_dir) as kb:
        assert isinstance(kb.lexical, QdrantIndex)
        moved = kb.search("refund days", top_k=5)
        assert [(h.chunk.chunk_id, round(h.score, 4)) for h in moved.hits] == [
            (h.chunk.chunk_id, round(h.score, 4)) for h in embedded.hits]
    back = CliRunner().invoke(app, ["--kb", str(kb_dir), "reindex", "--index", "embedded"])
    assert back.exit_code == 0, back.output
    with KnowledgeBase.open(kb_dir) as kb:
        assert not isinstance(kb.lexical, QdrantIndex)
    drop_collections(target if wanted.url else kb_dir)


def test_a_failed_move_leaves_the_settings_as_they_were(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES], exclude=["**/*.yaml", "README.md"])
        before = (kb_dir / "glassrag.toml").read_text()
        # Nothing listens on port 9 (discard); the build fails before the switch.
        with pytest.raises(GlassragError, match="Qdrant at http://127.0.0.1:9"):
            kb.reindex("qdrant", url="http://127.0.0.1:9")
        assert (kb_dir / "glassrag.toml").read_text() == before
        assert kb.search("refund days").hits  # still served by the embedded index
        with pytest.raises(InvalidInput, match="backend"):
            kb.reindex("elastic")


def test_settings_errors_name_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_QDRANT_KEY", raising=False)
    kb_dir = qdrant_kb_dir(tmp_path / "kb", "local", url="http://127.0.0.1:9",
                           api_key_env="NO_SUCH_QDRANT_KEY")
    with pytest.raises(InvalidInput, match="api_key_env names NO_SUCH_QDRANT_KEY"):
        KnowledgeBase.open(kb_dir)
    bad = qdrant_kb_dir(tmp_path / "bad", "local", collection="a/b")
    with pytest.raises(InvalidInput, match="index.collection"):
        KnowledgeBase.open(bad)


def test_local_mode_in_another_process_is_refused_clearly(qdrant_kb: KnowledgeBase) -> None:
    if _index(qdrant_kb).config.url:
        pytest.skip("local mode only")
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "glassrag", "--kb", str(qdrant_kb.path),
                             "status"], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "in use by another process" in result.stderr


def test_a_write_for_an_earlier_change_never_replaces_a_later_one(
        qdrant_kb: KnowledgeBase, tmp_path: Path) -> None:
    # Two servers catching up at once: the one that read the log earlier writes last.
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", _records(2)))
    index = _index(qdrant_kb)
    name = index.target()
    assert name is not None
    later = index.applied_seq
    index._write_docs(qdrant_kb.store, name, ["open", "hr-0"], later - 1)
    points = index.call("scroll", name, limit=100, with_payload=["seq", "doc_id"])[0]
    assert {p.payload["doc_id"]: p.payload["seq"] for p in points} == {
        "open": later, "hr-0": later, "hr-1": later}


def test_a_name_no_readable_chunk_holds_refuses_as_on_the_embedded_index(
        qdrant_kb: KnowledgeBase, tmp_path: Path) -> None:
    # Only the finance page names Bazel: unknown to the public, known to finance.
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", [
        {"doc_id": "build", "text": "The build writes its archives to the shared folder."},
        {"doc_id": "fin", "roles": ["finance"], "text": "Bazel writes the build archives."}]))
    question = "Does the build write archives with Bazel?"
    public = qdrant_kb.ask(question, principal=PUBLIC)
    assert public.status == "blocked_by_permission" and public.citations == ()
    finance = qdrant_kb.ask(question, principal=Principal("f", roles=["finance"]))
    assert finance.status == "answered"
    nobody = qdrant_kb.ask("Does the shared folder sync with Dropbox?", principal=PUBLIC)
    assert nobody.status == "no_evidence" and nobody.citations == ()


def test_a_rare_name_outside_the_quote_refuses_as_on_the_embedded_index(
        qdrant_kb: KnowledgeBase, tmp_path: Path) -> None:
    # One release note names Quasar; the exporters page covers the rest of the question.
    # Three finance pages name it too, which the public may not read.
    qdrant_kb.ingest(write_jsonl(tmp_path / "d.jsonl", [
        {"doc_id": "exporters", "text": "The CSV exporter writes report files to the output "
                                        "folder, one file per run."},
        {"doc_id": "news", "text": "Version 2.1 reads archives made by Quasar as well."},
        *({"doc_id": f"fin-{n}", "roles": ["finance"],
           "text": f"Quasar builds run nightly on host {n}."} for n in range(3))]))
    question = "Which exporter writes Quasar files?"
    public = qdrant_kb.ask(question, principal=PUBLIC)
    assert public.status == "no_evidence" and public.citations == ()
    # To finance four chunks name Quasar: a common word, so the exporters line answers.
    finance = qdrant_kb.ask(question, principal=Principal("f", roles=["finance"]))
    assert finance.status == "answered" and "CSV exporter" in finance.answer
