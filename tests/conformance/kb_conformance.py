"""The conformance suite: what every configuration of glassrag must do the same way.

In the style of Haystack's ``DocumentStoreBaseTests``: :class:`KnowledgeBaseConformance` is a
base class of tests, and each runs once per configuration in
:data:`configurations.CONFIGURATIONS` (the embedded default is the reference: answers must
be identical to its answers). It checks the bundled examples' statuses and citations, the
leak tests of every interface (the same functions as tests/test_leak.py, test_server.py and
test_mcp.py run), incremental updates and deletes, rebuilding from the truth, and a killed
ingest repaired on the next open.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from configurations import CONFIGURATIONS, EMBEDDED, Configuration

import leak_fixtures
import test_leak as leak
from conftest import EXAMPLES, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.eval.cases import load_cases
from glassrag.eval.docs_questions import load_questions
from glassrag.retrieval.integrity import check
from glassrag.settings import MAX_TOP_K

# (example, what is ingested, the questions asked of it)
EXAMPLES_ASKED = [
    ("workshop", "workshop/documents.jsonl", "workshop.yaml"),
    ("fare-rules", "fare-rules", "fare-rules.yaml"),
    ("notes", "notes", "notes.yaml"),
    ("kb", "kb/kb.txt", "kb.yaml"),
    ("tidepool", "tidepool", "tidepool-questions.yaml"),
]
_REFERENCE: dict[str, list[dict[str, Any]]] = {}
# How far a score may be from the embedded one where a configuration scores on its own
# (Configuration.same_scores False): Qdrant's BM25 uses exact chunk lengths, Tantivy's a
# one-byte quantisation of them (about 1% apart on the examples).
SCORE_REL = 0.05
RETRIEVERS = ("bm25", "dense")
WORDS = ["heron", "otter", "lynx", "badger", "marten", "stoat", "weasel", "ferret"]


def _questions(case_file: str) -> list[tuple[str, Principal, int | None, str | None]]:
    path = EXAMPLES / "cases" / case_file
    if "questions" in case_file:
        return [(q.question, Principal("eval"), None, None) for q in load_questions(path)]
    return [(c.question, Principal("eval", roles=c.roles), c.top_k, c.mode)
            for c in load_cases(path)]


def _answers(kb_dir: Path, example: str) -> list[dict[str, Any]]:
    """Ingest one example and ask its questions; every answer without its trace id."""
    _, corpus, case_file = next(e for e in EXAMPLES_ASKED if e[0] == example)
    out = []
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([EXAMPLES / corpus], exclude=["*.yaml"])
        assert report.failed == []
        for question, principal, top_k, mode in _questions(case_file):
            answer = kb.ask(question, principal=principal, top_k=top_k, mode=mode).to_dict()
            answer.pop("trace_id")
            out.append(answer)
    return out


def _corpus(path: Path, n: int, tag: str, start: int = 0) -> Path:
    return write_jsonl(path, [
        {"doc_id": f"{tag}-{i}", "roles": ["public"] if i % 3 else ["staff"],
         "text": f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} record {tag} number {i}."}
        for i in range(start, start + n)])


def _consistent(kb: KnowledgeBase) -> dict[str, Any]:
    """The knowledge base is whole: truth and index agree, and search agrees with both."""
    assert check(kb.store, kb.lexical) == []
    status = kb.status()
    assert status["indexed_chunks"] == status["chunks"]
    assert status["applied_seq"] == status["last_seq"]
    staff = Principal("s", roles=["staff"])
    ids = [h.chunk.chunk_id for h in kb.search("heron", principal=staff, top_k=MAX_TOP_K).hits]
    expected = sum(1 for d in kb.documents() for c in kb.chunks(d.doc_id) if "heron" in c.text)
    assert len(ids) == len(set(ids)) == expected
    return status


def _scores(value: Any, path: str = "") -> tuple[Any, dict[str, float]]:
    """``value`` without its scores, and the scores by where they were. A fused score (a
    hit of several retrievers) and the fusion's own entries are left out: the engine may
    fuse by another formula (Qdrant's DBSF); each retriever's score and rank stay."""
    found: dict[str, float] = {}
    if isinstance(value, list):
        rest = []
        for i, item in enumerate(value):
            kept, scores = _scores(item, f"{path}/{i}")
            rest.append(kept)
            found.update(scores)
        return rest, found
    if not isinstance(value, dict):
        return value, found
    legs = set(value.get("scores") or ()) & set(RETRIEVERS)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "score":
            if len(legs) < 2:
                found[f"{path}/score"] = item
        elif key in ("scores", "ranks") and isinstance(item, dict):
            kept = {n: v for n, v in item.items() if n in RETRIEVERS}
            if key == "ranks":
                out[key] = kept
            else:
                found.update({f"{path}/scores/{n}": v for n, v in kept.items()})
        else:
            out[key], scores = _scores(item, f"{path}/{key}")
            found.update(scores)
    return out, found


def _assert_same(got: Any, want: Any, configuration: Configuration) -> None:
    """``got`` is ``want``; for a configuration that scores on its own, but for scores
    within :data:`SCORE_REL` of the embedded ones."""
    if configuration.same_scores:
        assert got == want
        return
    got_rest, got_scores = _scores(got)
    want_rest, want_scores = _scores(want)
    assert got_rest == want_rest
    assert got_scores.keys() == want_scores.keys()
    assert got_scores == pytest.approx(want_scores, rel=SCORE_REL)


class KnowledgeBaseConformance:
    """Every test runs once per configuration (the ``configuration`` fixture)."""

    @pytest.fixture(scope="class", params=CONFIGURATIONS, ids=lambda c: c.name)
    @classmethod
    def configuration(cls, request: pytest.FixtureRequest) -> Configuration:
        return request.param  # type: ignore[no-any-return]

    @pytest.fixture
    def new_kb(self, configuration: Configuration, request: pytest.FixtureRequest,
               tmp_path: Path) -> Callable[..., Path]:
        """``new_kb(name="kb", extra="")``: the folder of a new knowledge base."""
        def make(name: str = "kb", extra: str = "") -> Path:
            return configuration.new_kb_dir(request, tmp_path / name, extra)
        return make

    @pytest.fixture
    def kb(self, new_kb: Callable[..., Path]) -> Iterator[KnowledgeBase]:
        with KnowledgeBase.open(new_kb()) as opened:
            yield opened

    @pytest.fixture(scope="class")
    @classmethod
    def leak_kb(cls, configuration: Configuration, request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Path:
        root = tmp_path_factory.mktemp(f"leak-{configuration.name.replace('+', '-')}")
        configuration.new_kb_dir(request, root / "kb")
        return leak_fixtures.build_leak_kb(root)

    # -- the same answers ------------------------------------------------------------------
    @pytest.mark.parametrize("example", [e[0] for e in EXAMPLES_ASKED])
    def test_examples_get_the_embedded_statuses_and_citations(
            self, example: str, new_kb: Callable[..., Path], configuration: Configuration,
            request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
        if example not in _REFERENCE:
            reference_dir = tmp_path_factory.mktemp(f"reference-{example}") / "kb"
            _REFERENCE[example] = _answers(EMBEDDED.new_kb_dir(request, reference_dir), example)
        answers = _answers(new_kb(), example)
        statuses = {a["status"] for a in answers}
        assert len(answers) >= 3 and "answered" in statuses
        _assert_same(answers, _REFERENCE[example], configuration)

    def test_dense_and_hybrid_match_the_embedded(self, new_kb: Callable[..., Path],
                                                configuration: Configuration,
                                                request: pytest.FixtureRequest,
                                                tmp_path: Path) -> None:
        def run(kb_dir: Path, own_fusion: bool = False) -> list[Any]:
            with KnowledgeBase.open(kb_dir) as kb:
                kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"], embedder="hash:64")
                found = []
                for mode in ("dense", "hybrid"):
                    for query in leak_fixtures.QUERIES[:4]:
                        result = kb.search(query, mode=mode, top_k=5).to_dict()
                        result.pop("took_ms")
                        if own_fusion:  # Qdrant's dbsf takes no weights and reports none
                            result.pop("fusion_weights", None)
                        found.append(result)
                return found

        own = not configuration.same_scores
        reference = run(EMBEDDED.new_kb_dir(request, tmp_path / "reference"), own)
        _assert_same(run(new_kb(), own), reference, configuration)
        assert any(r["hits"] for r in reference)

    # -- permissions -----------------------------------------------------------------------
    def test_the_role_filter_runs_before_top_k(self, kb: KnowledgeBase, tmp_path: Path) -> None:
        # 60 chunks only staff may read outrank the one public chunk on "heron".
        records = [{"doc_id": f"s{i}", "roles": ["staff"], "text": "heron heron heron"}
                   for i in range(60)]
        records.append({"doc_id": "pub", "roles": ["public"], "text": "a heron, once"})
        kb.ingest([write_jsonl(tmp_path / "r.jsonl", records)])
        found = kb.search("heron", principal=Principal("p"), top_k=1)
        assert [h.chunk.doc_id for h in found.hits] == ["pub"] and found.blocked_count == 60

    def test_ties_keep_the_order_documents_were_stored_in(self, kb: KnowledgeBase,
                                                          tmp_path: Path) -> None:
        records = [{"doc_id": f"t{i}", "text": "same words exactly"} for i in (3, 1, 2)]
        kb.ingest([write_jsonl(tmp_path / "t.jsonl", records)])
        kb.ingest([write_jsonl(tmp_path / "t.jsonl", [{**records[0], "roles": ["public"]},
                                                      *records[1:]])])
        # Equal scores: bm25 and overlap order by doc_id, terms (seed 001) by the order the
        # documents were first stored in; an update keeps a document's place.
        assert [h.chunk.doc_id for h in kb.search("x", terms=["same"], top_k=3).hits] == [
            "t3", "t1", "t2"]
        for mode in ("bm25", "overlap"):
            hits = kb.search("same words", mode=mode, top_k=3).hits
            assert [h.chunk.doc_id for h in hits] == ["t1", "t2", "t3"], mode

    @pytest.mark.parametrize("principal", leak_fixtures.PRINCIPALS, ids=lambda p: p.principal_id)
    def test_nothing_leaks_through_python_or_the_cli(self, leak_kb: Path, principal: Principal,
                                                     tmp_path: Path) -> None:
        leak.test_python_api_never_leaks(leak_kb, principal)
        leak.test_answers_traces_and_records_never_leak(leak_kb, principal, tmp_path)
        leak.test_cli_never_leaks(leak_kb, principal)
        leak.test_cli_ask_never_leaks(leak_kb, principal)

    def test_secrets_reach_their_readers(self, leak_kb: Path) -> None:
        leak.test_secrets_are_findable_by_their_readers(leak_kb)
        leak.test_secret_questions_are_blocked_not_answered(leak_kb)

    def test_nothing_leaks_over_http(self, leak_kb: Path) -> None:
        pytest.importorskip("fastapi", reason="the [server] extra is not installed")
        import test_server as http
        from fastapi.testclient import TestClient

        import server_fixtures
        from glassrag.interfaces.http.app import create_app
        from glassrag.store.bearer_tokens import create_token

        app = create_app(leak_kb)
        kb = app.state.kb
        with kb.lock:
            tokens = {p.principal_id: create_token(kb.store, p.principal_id, p.roles, p.admin)
                      for p in [*leak_fixtures.PRINCIPALS, server_fixtures.ADMIN]}
        with TestClient(app, base_url="http://127.0.0.1") as client:
            for principal in leak_fixtures.PRINCIPALS:
                http.test_http_never_leaks((client, tokens), principal)
            http.test_secrets_reach_their_readers_over_http((client, tokens))

    def test_nothing_leaks_over_mcp(self, leak_kb: Path) -> None:
        pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
        import test_mcp as mcp

        for principal in leak_fixtures.PRINCIPALS:
            mcp.test_mcp_never_leaks(leak_kb, principal)

    # -- the truth and its indexes ---------------------------------------------------------
    def test_incremental_updates_and_deletes(self, kb: KnowledgeBase, tmp_path: Path) -> None:
        first = _corpus(tmp_path / "c.jsonl", 30, "a")
        assert kb.ingest([first]).added == 30
        seq = kb.store.last_seq()
        assert kb.ingest([first]).unchanged == 30 and kb.store.last_seq() == seq
        records = [json.loads(line) for line in first.read_text().splitlines()]
        records[0]["text"] = "a changed heron record, version two"
        records.append({"doc_id": "a-new", "text": "a brand new heron record"})
        write_jsonl(first, records[:1] + records[2:])  # a-1 removed from the file
        report = kb.ingest([first], prune=True)
        assert (report.added, report.updated, report.deleted) == (1, 1, 1)
        kb.delete("a-2")
        assert kb.document("a-0").version == 2 and [
            h["version"] for h in kb.store.history("a-0")] == [1, 2]
        staff = Principal("s", roles=["staff"])
        hits = {h.chunk.doc_id for h in kb.search("heron", principal=staff, top_k=100).hits}
        assert {"a-0", "a-new"} <= hits and not {"a-1", "a-2"} & hits
        top = kb.search("changed version two", principal=staff, top_k=1).hits
        assert top[0].chunk.doc_id == "a-0"
        status = _consistent(kb)
        assert status["documents"] == 29

    def test_indexes_are_rebuilt_from_the_truth(self, new_kb: Callable[..., Path],
                                                tmp_path: Path) -> None:
        kb_dir = new_kb()
        with KnowledgeBase.open(kb_dir) as kb:
            kb.ingest([_corpus(tmp_path / "c.jsonl", 40, "r")], embedder="hash:32")
            before = [kb.search(w, mode=m, top_k=10).to_dict()["hits"]
                      for w in WORDS[:3] for m in ("bm25", "dense")]
            assert kb.reindex() == 40
        shutil.rmtree(kb_dir / "index")  # every derived index gone
        with KnowledgeBase.open(kb_dir) as kb:
            after = [kb.search(w, mode=m, top_k=10).to_dict()["hits"]
                     for w in WORDS[:3] for m in ("bm25", "dense")]
            _consistent(kb)
        assert after == before and any(before)

    @pytest.mark.slow
    @pytest.mark.parametrize("crash_at", ["ingest.before_commit:2", "ingest.after_commit:1",
                                          "index.before_commit"])
    def test_a_killed_ingest_is_repaired_on_the_next_open(
            self, new_kb: Callable[..., Path], tmp_path: Path, crash_at: str) -> None:
        kb_dir = new_kb(extra="[ingest]\nbatch_size = 100\n")

        def ingest(corpus: Path, crash: str = "") -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest", str(corpus),
                 "--json"], env={**os.environ, "GLASSRAG_CRASH_AT": crash},
                capture_output=True, text=True, timeout=120)

        assert ingest(_corpus(tmp_path / "one.jsonl", 100, "a")).returncode == 0
        second = _corpus(tmp_path / "two.jsonl", 400, "b")
        killed = ingest(second, crash_at)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        with KnowledgeBase.open(kb_dir) as kb:
            status = _consistent(kb)
            assert status["documents"] >= 100
            if crash_at.startswith("ingest.before_commit"):
                assert status["documents"] == 200  # the uncommitted batch left no trace
        assert ingest(second).returncode == 0
        with KnowledgeBase.open(kb_dir) as kb:
            assert _consistent(kb)["documents"] == 500
