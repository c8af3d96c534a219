"""Refusals through the knowledge base, in every mode: an off-topic question, one sharing a
single word with an unrelated page, and one naming something no readable document mentions
get ``no_evidence``; the same documents still answer what they do say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassrag import KnowledgeBase, Principal
from shipping_fixtures import SHIPPING_MD

PUBLIC = Principal("p")
MODES = ("bm25", "dense", "hybrid")


@pytest.fixture
def docs_kb(tmp_path: Path) -> KnowledgeBase:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "shipping.md").write_text(SHIPPING_MD, encoding="utf-8")
    (docs / "部署.md").write_text(
        "# 部署\n\n集群部署需要三台机器，每台机器运行一个 Broker。\n\n"
        "默认端口是 9876，可以在配置文件中修改。\n", encoding="utf-8")
    (docs / "secret.md").write_text(
        "---\nroles: [ops]\n---\n# Ops\n\nThe `KubeOperator` deploys the cluster on Kubernetes.\n"
        "Parcel labels are printed from the dispatch spreadsheet.\n", encoding="utf-8")
    (docs / "tracking.md").write_text(
        "# Tracking\n\nEvery parcel gets a tracking number by e-mail. The courier "
        "configuration sets how often tracking pages refresh. A geofence around the depot "
        "marks a parcel as arrived.\n", encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kb")
    report = kb.ingest([docs], embedder="hash:256")
    assert report.failed == []
    yield kb
    kb.close()


@pytest.mark.parametrize("mode", MODES)
def test_the_documents_still_answer_what_they_say(docs_kb: KnowledgeBase, mode: str) -> None:
    answer = docs_kb.ask("How long do parcels to Canada take?", mode=mode, principal=PUBLIC)
    assert answer.status == "answered" and "twelve days" in answer.answer
    chinese = docs_kb.ask("集群部署需要几台机器？", mode=mode, principal=PUBLIC)
    assert chinese.status == "answered" and "三台" in chinese.answer


@pytest.mark.parametrize("mode", MODES)
def test_one_shared_word_is_no_evidence(docs_kb: KnowledgeBase, mode: str) -> None:
    answer = docs_kb.ask("What is the capital of France?", mode=mode, principal=PUBLIC)
    assert answer.status == "no_evidence", answer.answer


@pytest.mark.parametrize("mode", MODES)
def test_an_off_topic_question_is_no_evidence(docs_kb: KnowledgeBase, mode: str) -> None:
    answer = docs_kb.ask("Which football team won the league in 1998?", mode=mode,
                         principal=PUBLIC)
    assert answer.status == "no_evidence", answer.answer


@pytest.mark.parametrize("mode", MODES)
def test_a_name_no_readable_document_mentions_is_no_evidence(docs_kb: KnowledgeBase,
                                                             mode: str) -> None:
    # On-topic words (集群, 部署) but a product the readable documents never name.
    answer = docs_kb.ask("如何用 Kubernetes 部署集群？", mode=mode, principal=PUBLIC)
    assert answer.status == "no_evidence", answer.answer
    assert "Kubernetes" not in answer.answer


def test_an_uncommon_word_no_readable_document_uses_is_no_evidence_in_bm25(
        docs_kb: KnowledgeBase) -> None:
    from glassrag.retrieval.search import retrieve

    # On-topic words (parcels, tracking) but a thing no readable page mentions.
    question = "Do parcels get a tracking number by blockchain?"
    answer = docs_kb.ask(question, mode="bm25", principal=PUBLIC)
    assert answer.status == "no_evidence", answer.answer
    trace = docs_kb.trace(answer.trace_id)
    assert trace is not None and "blockchain" in json.dumps(trace["attempts"])
    # A word may have synonyms an embedder bridges ("reimbursed" for a refund): in dense and
    # hybrid modes only names count.
    for mode in ("dense", "hybrid"):
        found = retrieve(docs_kb.store, docs_kb.lexical, question, PUBLIC, 5, mode=mode,
                         dense=docs_kb.dense(), words=True)
        assert found.unknown == (), mode
    # Only an answer reads them: a search does not count them.
    assert retrieve(docs_kb.store, docs_kb.lexical, question, PUBLIC, 5).unknown == ()
    assert retrieve(docs_kb.store, docs_kb.lexical, question, PUBLIC, 5,
                    words=True).unknown_words == ("blockchain",)


def test_everyday_words_and_shortened_words_the_documents_lack_decide_nothing(
        docs_kb: KnowledgeBase) -> None:
    from glassrag.retrieval.search import retrieve

    store, lexical = docs_kb.store, docs_kb.lexical
    # "stay", "widest" and "uncompressed" are everyday English (or built on it); "config"
    # is what the tracking page writes long ("configuration"), "cardbaord" a slip of the
    # everyday "cardboard" and "geofnece" of the tracking page's "geofence".
    for question in ("How long do parcels stay at sea on the widest route?",
                     "Are uncompressed parcels packed in cardboard?",
                     "Which courier config sets how often tracking pages refresh?",
                     "Is every parcel packed in recycled cardbaord?",
                     "Which geofnece marks a tracked parcel as arrived?"):
        assert retrieve(store, lexical, question, PUBLIC, 5, words=True).unknown == (), question
    answer = docs_kb.ask("Which courier config sets how often tracking pages refresh?",
                         principal=PUBLIC)
    assert answer.status == "answered" and "configuration" in answer.answer


def test_an_uncommon_word_only_a_hidden_page_uses_is_unknown_to_who_cannot_read_it(
        docs_kb: KnowledgeBase) -> None:
    from glassrag.retrieval.search import retrieve

    store, lexical = docs_kb.store, docs_kb.lexical
    question = "Are parcel labels printed from a spreadsheet?"
    found = retrieve(store, lexical, question, PUBLIC, 5, words=True)
    assert found.unknown_words == ("spreadsheet",) and found.unknown_names == ()
    ops = Principal("o", roles=["ops"])
    assert retrieve(store, lexical, question, ops, 5, words=True).unknown == ()


def test_unknown_names_are_counted_among_readable_chunks(docs_kb: KnowledgeBase) -> None:
    from glassrag.retrieval.search import retrieve

    store, lexical = docs_kb.store, docs_kb.lexical
    question = "Does KubeOperator deploy the cluster on Kubernetes?"
    # Only the ops page names them: unknown to the public, known to ops.
    assert retrieve(store, lexical, question, PUBLIC, 5).unknown_names == ("kubeoper",
                                                                             "kubernet")
    ops = Principal("o", roles=["ops"])
    assert retrieve(store, lexical, question, ops, 5).unknown_names == ()
    assert retrieve(store, lexical, "如何用 Kubernetes 部署？", ops, 5).unknown_names == ()
    assert retrieve(store, lexical, "如何用 Kubernetes 部署？", PUBLIC, 5).unknown_names == (
        "kubernet",)


def test_dense_margin_is_the_best_cosine_over_the_candidates_median() -> None:
    from glassrag.retrieval.search import Retrieval, dense_margin
    from glassrag.vectors.index import VectorMatch

    assert dense_margin([VectorMatch(1, 0.93), VectorMatch(2, 0.90), VectorMatch(3, 0.88)]) \
        == pytest.approx(0.03)
    assert dense_margin([VectorMatch(1, 0.9)]) is None
    flat = Retrieval("hybrid", ("x",), [], 0, dense_margin=0.01, dense_min_margin=0.02)
    assert not flat.dense_stands_out
    assert Retrieval("hybrid", ("x",), [], 0, dense_margin=0.03,
                     dense_min_margin=0.02).dense_stands_out
    assert Retrieval("bm25", ("x",), [], 0).dense_stands_out  # no dense side: no margin


def test_min_margin_auto_is_per_embedder_kind_and_validated() -> None:
    from pydantic import ValidationError

    from glassrag.settings import DenseSettings

    assert DenseSettings().margin("e5:multilingual-e5-small") == 0.045
    assert DenseSettings().margin("st:all-MiniLM-L6-v2") == 0.0
    assert DenseSettings(min_margin=0.05).margin("e5:x") == 0.05
    with pytest.raises(ValidationError):
        DenseSettings(min_margin=-0.1)


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_dense_evidence_that_does_not_stand_out_is_no_evidence(docs_kb: KnowledgeBase,
                                                               mode: str) -> None:
    question = "How long do parcels to Canada take?"
    everyone = Principal("o", roles=["ops"])  # reads every page: nothing is blocked
    assert docs_kb.ask(question, mode=mode, principal=everyone).status == "answered"
    # A margin no candidate list reaches: every hit is as close as the others.
    docs_kb.settings.dense = docs_kb.settings.dense.model_copy(
        update={"min_margin": 2.0, "min_score": -1.0})
    assert docs_kb.ask(question, mode=mode, principal=everyone).status == "no_evidence"
    assert docs_kb.ask(question, mode="bm25", principal=everyone).status == "answered"
