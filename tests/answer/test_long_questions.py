"""Long questions (a pasted error message, a passage, a counter-argument): accepted up to
20,000 characters in search, ask and every eval, with the searched terms capped at the
rarest ones; an eval reports a question it cannot ask and goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TEST_DATA, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.errors import InvalidInput
from glassrag.eval.beir import run_beir
from glassrag.eval.cases import EvalCase, run_cases
from glassrag.eval.docs import run_docs_eval
from glassrag.eval.docs_questions import load_questions
from glassrag.eval.qa import run_qa
from glassrag.pipeline import MAX_QUESTION_CHARS
from glassrag.retrieval.query_terms import MAX_QUERY_TERMS
from glassrag.retrieval.search import MAX_QUERY_CHARS
from glassrag.text.analysis import analyze

# Words in every chunk, words in one chunk only, words in no chunk: the cap keeps the
# one-chunk words, then the common ones, and drops the unknown ones first.
COMMON = [f"common{i:03d}x" for i in range(70)]
RARE = ["zephyrine", "quillwort", "marrowbone"]
UNKNOWN = [f"absent{i:03d}x" for i in range(40)]


def _terms(words: list[str]) -> list[str]:
    return [analyze(w)[0] for w in words]


def _long(words: list[str], chars: int = 10_000) -> str:
    text = " ".join(words)
    return (text + ". ") * (chars // (len(text) + 2) + 1)


@pytest.fixture
def capped_kb(tmp_path: Path):
    records = [{"doc_id": f"d{n}", "title": f"Note {n}", "roles": ["public"],
                "text": " ".join(COMMON) + (" " + " ".join(RARE) if n == 7 else "")}
               for n in range(12)]
    write_jsonl(tmp_path / "notes.jsonl", records)
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.ingest([tmp_path / "notes.jsonl"]).ok
        yield kb


def test_a_ten_thousand_character_query_keeps_its_rarest_terms(capped_kb) -> None:
    query = _long(UNKNOWN + COMMON + RARE)
    assert len(query) >= 10_000
    for principal in (None, Principal("admin", admin=True)):
        found = capped_kb.search(query, principal=principal)
        kept = list(found.query_terms)
        assert len(kept) == MAX_QUERY_TERMS
        assert set(_terms(RARE)) <= set(kept) and not set(kept) & set(_terms(UNKNOWN))
        # The kept terms stay in query order: the first 61 common words, then the rare ones.
        assert kept == _terms(COMMON)[:MAX_QUERY_TERMS - len(RARE)] + _terms(RARE)
        assert found.hits[0].chunk.doc_id == "d7"


def test_short_queries_are_not_touched(capped_kb) -> None:
    found = capped_kb.search(" ".join(UNKNOWN[:3] + RARE))
    assert list(found.query_terms) == _terms(UNKNOWN[:3] + RARE)


def test_ask_and_cli_take_long_questions(capped_kb, tmp_path: Path) -> None:
    question = _long(COMMON[:5] + RARE, 12_000) + "?"
    answer = capped_kb.ask(question)
    assert answer.status in ("answered", "no_evidence") and answer.trace_id
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([sys.executable, "-m", "glassrag", "--kb", str(capped_kb.path),
                           "search", question, "--json"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"][0]["doc_id"] == "d7"


def test_over_the_limit_is_a_clear_error(capped_kb) -> None:
    assert MAX_QUESTION_CHARS == MAX_QUERY_CHARS >= 10_000
    too_long = "x" * (MAX_QUESTION_CHARS + 1)
    with pytest.raises(InvalidInput, match=f"characters long; the limit is {MAX_QUESTION_CHARS}"):
        capped_kb.ask(too_long)
    with pytest.raises(InvalidInput, match=f"the limit is {MAX_QUERY_CHARS}"):
        capped_kb.search(too_long)


def test_kept_terms_do_not_depend_on_unreadable_documents(tmp_path: Path) -> None:
    # 40 "a" words each in one public chunk, 40 "b" words each in two: for a public reader
    # the a words are the rarer ones. A hidden document repeating every a word in many
    # chunks must not change which terms that reader's long query keeps.
    a_words = [f"alpha{i:03d}x" for i in range(40)]
    b_words = [f"bravo{i:03d}x" for i in range(40)]
    public = [{"doc_id": f"p{n}", "title": "t", "roles": ["public"],
               "text": " ".join(a_words[n * 10:(n + 1) * 10] + b_words)} for n in range(4)]
    public += [{"doc_id": "p9", "title": "t", "roles": ["public"], "text": " ".join(b_words)}]
    hidden = [{"doc_id": f"h{n}", "title": "t", "roles": ["secret"],
               "text": " ".join(a_words)} for n in range(20)]
    query = _long(a_words + b_words, 2_000)
    kept = []
    for name, records in (("without", public), ("with", public + hidden)):
        write_jsonl(tmp_path / f"{name}.jsonl", records)
        with KnowledgeBase.open(tmp_path / name) as kb:
            assert kb.ingest([tmp_path / f"{name}.jsonl"]).ok
            kept.append(kb.search(query, principal=Principal("reader")).query_terms)
            if name == "with":  # the admin reads everything, so the a words are common
                admin = kb.search(query, principal=Principal("root", admin=True)).query_terms
    assert kept[0] == kept[1]
    assert set(_terms(a_words)) <= set(kept[0])
    assert set(_terms(b_words)) <= set(admin)


def test_docs_eval_asks_long_questions_and_reports_what_it_cannot(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "relay.md").write_text("# Relay\n\nThe relay listens on port 7781.\n",
                                   encoding="utf-8")
    paste = "Traceback (most recent call last): ConnectionRefusedError " * 180
    questions = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "long", "question": paste + " Which port does the relay listen on?",
         "answerable": True, "answers": ["7781"],
         "evidence": [{"path": "relay.md", "line_start": 3, "line_end": 3}]},
        {"id": "huge", "question": "port " * 5000, "answerable": False},
        {"id": "short", "question": "Which port does the relay listen on?",
         "answerable": True, "answers": ["7781"],
         "evidence": [{"path": "relay.md", "line_start": 3, "line_end": 3}]}])
    report = run_docs_eval(load_questions(questions), docs)
    rows = {r["id"]: r for r in report.rows}
    assert len(rows["long"]["question"]) > 10_000 and rows["long"]["error"] is None
    assert rows["long"]["gold_in_top5"]
    assert "the limit is" in rows["huge"]["error"] and rows["huge"]["status"] == "error"
    assert rows["short"]["both_correct"]


def test_a_case_that_cannot_be_asked_fails_alone(kb) -> None:
    kb.ingest([TEST_DATA / "docs_eval" / "docs" / "greenhouse"])
    cases = [EvalCase("bad", "?!", (), "answered"),
             EvalCase("good", "What is the valve timeout?", (), "answered")]
    report = run_cases(kb, cases)
    assert [(r.name, r.status, r.ok) for r in report.results] == [
        ("bad", "error", False), ("good", "answered", True)]
    assert report.results[0].reasons == [
        "error: the question has no searchable terms (only stop words or punctuation)"]
    assert report.passed == 1 and report.total == 2


def test_qa_benchmark_reports_a_question_it_cannot_ask(tmp_path: Path) -> None:
    root = tmp_path / "qa"
    write_jsonl(root / "corpus.jsonl", [{"_id": "p1", "title": "Relay",
                                         "text": "The relay listens on port 7781."}])
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "Which port does the relay use?"},
                                         {"_id": "q2", "text": "port " * 5000}])
    write_jsonl(root / "answers.jsonl", [{"_id": q, "corpus-id": "p1", "answers": ["7781"]}
                                         for q in ("q1", "q2")])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tp1\t1\nq2\tp1\t1\n")
    report = run_qa(root)
    rows = {r["qid"]: r for r in report.rows}
    assert rows["q1"]["correct"] and rows["q2"]["outcome"] == "error"
    assert "the limit is" in rows["q2"]["error"]
    assert report.outcomes["error"] == 1 and report.statuses["error"] == 1
    assert report.answer_contains_gold == 0.5


def _beir(root: Path, corpus: list[dict], queries: list[dict], qrels: str) -> Path:
    write_jsonl(root / "corpus.jsonl", corpus)
    write_jsonl(root / "queries.jsonl", queries)
    (root / "qrels").mkdir(parents=True)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return root


def test_beir_long_self_queries_and_a_failing_query(tmp_path: Path) -> None:
    # ArguAna's shape: each query is an argument that is itself in the corpus, up to
    # thousands of characters long, and the counter-argument is the relevant document.
    argument = _long(["tariffs", "protect", "infant", "industries", "from", "dumping"], 6_000)
    corpus = [
        {"_id": "a1", "title": "For tariffs", "text": argument},
        {"_id": "a2", "title": "Against tariffs",
         "text": "Tariffs on infant industries invite retaliation and raise prices."},
        {"_id": "a3", "title": "Gardening", "text": "Compost feeds the soil."},
    ]
    queries = [{"_id": "a1", "text": argument},
               {"_id": "q2", "text": "compost " * 5000},
               {"_id": "q3", "text": "compost soil"}]
    root = _beir(tmp_path / "args", corpus, queries, "a1\ta2\t1\nq2\ta3\t1\nq3\ta3\t1\n")
    report = run_beir(root)
    assert report.per_query["a1"] == 1.0  # its own text ranked first, dropped (BEIR)
    assert "a1" not in report.run["a1"] and list(report.run["a1"])[0] == "a2"
    assert report.failed_queries == [{"id": "q2", "error": report.failed_queries[0]["error"]}]
    assert "the limit is" in report.failed_queries[0]["error"]
    assert report.per_query["q2"] == 0.0 and report.per_query["q3"] == 1.0
    assert report.metrics["ndcg@10"] == pytest.approx(2 / 3)
    text = "\n".join(report.lines())
    assert "queries that failed (scored 0): 1" in text and "  q2: " in text
    assert report.to_dict()["failed_queries"][0]["id"] == "q2"


def test_cli_beir_prints_figures_and_exits_1_when_a_query_failed(tmp_path: Path) -> None:
    corpus = [{"_id": "d1", "title": "Soil", "text": "Compost feeds the soil."}]
    root = _beir(tmp_path / "set", corpus, [{"_id": "q1", "text": "compost"},
                                            {"_id": "q2", "text": "soil " * 5000}],
                 "q1\td1\t1\nq2\td1\t1\n")
    done = subprocess.run([sys.executable, "-m", "glassrag", "eval", "--beir", str(root)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "ndcg@10 0.5000" in done.stdout and "queries that failed (scored 0): 1" in done.stdout
