"""Behavioural case files (glassrag eval CASES) and the QA benchmark runner (eval --qa)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import EXAMPLES, write_jsonl
from evaluate_fixtures import CORPUS, qa_set
from glassrag import KnowledgeBase
from glassrag.errors import InvalidInput
from glassrag.eval.cases import (
    CaseResult,
    EvalCase,
    EvalReport,
    evaluate_file,
    load_cases,
    run_cases,
)
from glassrag.eval.qa import answer_body, contains_gold, run_qa
from glassrag.eval.qa import load_questions as load_qa_questions
from glassrag.records import Answer, Citation

# -- the bundled examples ------------------------------------------------------------------

EXAMPLE_CASES = [
    ("workshop", EXAMPLES / "workshop" / "documents.jsonl", 3),
    ("fare-rules", EXAMPLES / "fare-rules", 5),
    ("notes", EXAMPLES / "notes", 8),
    ("kb", EXAMPLES / "kb" / "kb.txt", 9),
]


def test_workshop_cases_reproduce_the_seed(kb: KnowledgeBase) -> None:
    kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    report = run_cases(kb, load_cases(EXAMPLES / "cases" / "workshop.yaml"))
    assert report.lines() == [
        "refund_window: PASS (answered, handbook.md#refund)",
        "api_key_setup: PASS (answered, setup.md#keys)",
        "private_block: PASS (blocked_by_permission, none)",
        "passed: 3/3",
    ]
    assert (report.passed, report.total, report.ok) == (3, 3, True)


@pytest.mark.parametrize(("name", "corpus", "count"), EXAMPLE_CASES,
                         ids=[e[0] for e in EXAMPLE_CASES])
def test_every_example_case_file_passes(kb: KnowledgeBase, name: str, corpus: Path,
                                        count: int) -> None:
    kb.ingest([corpus], exclude=["*.yaml"])
    report = evaluate_file(kb, EXAMPLES / "cases" / f"{name}.yaml")
    assert report.total == count
    assert report.passed == report.total, "\n".join(report.lines())


def test_failing_case_reports_reasons_and_counts(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    cases = [
        EvalCase("refund_ok", "How many days do learners have for refunds?", ("public",),
                 "answered", expected_source="handbook.md#refund",
                 answer_contains="１４ days"),  # full-width digits: NFKC makes them match
        EvalCase("wrong_source", "Where should I store the API key?", ("public",), "answered",
                 expected_source="handbook.md#refund", expected_doc_id="refund-policy",
                 expected_chunk_id="refund-policy#1", answer_contains="fourteen"),
        EvalCase("wrong_status", "What is the private beta roadmap for Q4?", ("public",),
                 "answered"),
        EvalCase("employee_reads_roadmap", "What is the private beta roadmap for Q4?",
                 ("employee",), "answered", expected_source="internal.md#roadmap", top_k=2,
                 mode="bm25"),
    ]
    ticks: list[tuple[int, int]] = []
    report = run_cases(kb, cases, progress=lambda done, total: ticks.append((done, total)))
    assert ticks == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert (report.passed, report.total, report.ok) == (2, 4, False)
    ok, wrong, blocked, employee = report.results
    assert ok.ok and employee.ok and employee.citations == ["internal.md#roadmap"]
    assert not wrong.ok and wrong.status == "answered"
    assert wrong.reasons == [
        "expected source handbook.md#refund not cited (cited: setup.md#keys)",
        "expected doc_id refund-policy not cited (cited: api-key-setup)",
        "expected chunk_id refund-policy#1 not cited (cited: api-key-setup#1)",
        "answer does not contain 'fourteen'",
    ]
    lines = report.lines()
    assert lines[1] == ("wrong_source: FAIL (answered, setup.md#keys) - "
                        + "; ".join(wrong.reasons))
    assert lines[2] == ("wrong_status: FAIL (blocked_by_permission, none) - "
                        "status blocked_by_permission, expected answered")
    assert lines[-1] == "passed: 2/4"
    as_json = json.loads(json.dumps(report.to_dict()))
    assert as_json["passed"] == 2 and as_json["ok"] is False
    assert as_json["results"][1]["reasons"] == wrong.reasons
    assert as_json["results"][0]["trace_id"]


def test_report_lines_format() -> None:
    report = EvalReport([CaseResult("a", True, "answered", ["x.md", "y.md"]),
                         CaseResult("b", False, "no_evidence", [], ["status no_evidence, "
                                                                    "expected answered"])], 1, 2)
    assert report.lines() == ["a: PASS (answered, x.md, y.md)",
                              "b: FAIL (no_evidence, none) - status no_evidence, expected "
                              "answered", "passed: 1/2"]


# -- loading case files --------------------------------------------------------------------

GOOD = {"name": "c1", "question": "q?", "roles": ["public"], "expected_status": "answered"}


def test_load_formats(tmp_path: Path) -> None:
    bare = tmp_path / "bare.yml"
    bare.write_text("- name: c1\n  question: q?\n  roles: [public]\n"
                    "  expected_status: no_evidence\n  top_k: 3\n  mode: overlap\n",
                    encoding="utf-8")
    (case,) = load_cases(bare)
    assert case == EvalCase("c1", "q?", ("public",), "no_evidence", top_k=3, mode="overlap")
    as_json = tmp_path / "cases.json"
    as_json.write_text(json.dumps({"cases": [GOOD, {**GOOD, "name": "c2"}]}), encoding="utf-8")
    assert [c.name for c in load_cases(as_json)] == ["c1", "c2"]
    lines = write_jsonl(tmp_path / "cases.jsonl", [GOOD, {**GOOD, "name": "c2",
                                                          "expected_source": None}])
    loaded = load_cases(lines)
    assert loaded[1].expected_source is None and loaded[0].roles == ("public",)


BAD_YAML = [
    ("expected_status: answerd", "field 'expected_status': unknown status 'answerd'"),
    ("roles: public", "field 'roles': must be a list of role names"),
    ("top_k: 0", "field 'top_k'"),
    ("top_k: true", "field 'top_k'"),
    ("mode: sparse", "field 'mode': unknown mode 'sparse'"),
    ("expected_source: 3", "field 'expected_source': must be a non-empty string"),
    ("expected_doc: x", "field 'expected_doc': unknown field"),
]


@pytest.mark.parametrize(("extra", "message"), BAD_YAML)
def test_bad_field_is_named_with_case_and_line(tmp_path: Path, extra: str,
                                               message: str) -> None:
    path = tmp_path / "cases.yaml"
    good = "  - name: first\n    question: q?\n    roles: [public]\n    expected_status: answered\n"
    fields = {"name": "second", "question": "q2?", "roles": "[public]",
              "expected_status": "no_evidence"}
    key = extra.split(":")[0]
    fields[key] = extra.split(": ", 1)[1]
    second = "".join(f"    {k}: {v}\n" for k, v in fields.items()).replace("    ", "  - ", 1)
    path.write_text("# comment\ncases:\n" + good + second, encoding="utf-8")
    with pytest.raises(InvalidInput) as err:
        load_cases(path)
    text = str(err.value)
    assert str(path) in text and "case 2 'second' (line 7)" in text and message in text
    assert err.value.details["field"] == key


@pytest.mark.parametrize(("content", "message"), [
    ("- name: a\n  roles: [public]\n  expected_status: answered\n",
     "case 1 'a' (line 1): field 'question': missing (required)"),
    ("- {name: a, question: q, roles: [public], expected_status: answered}\n"
     "- {name: a, question: r, roles: [public], expected_status: answered}\n",
     "case 2 'a' (line 2): field 'name': duplicate name 'a' (first used by case 1 'a' (line 1))"),
    ("cases: []\nextra: 1\n", "unknown top-level key(s) extra"),
    ("cases: {a: 1}\n", "field 'cases': expected a list"),
    ("", "holds no cases"),
    ("- just a string\n", "case 1 (line 1): expected a mapping"),
    ("- name: [unclosed\n", "invalid YAML at line"),
])
def test_bad_yaml_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInput) as err:
        load_cases(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_bad_jsonl_and_suffix(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps({**GOOD, "name": "x",
                                                            "question": ""}) + "\n",
                    encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"case 2 'x' \(line 3\): field 'question'"):
        load_cases(path)
    path.write_text(json.dumps(GOOD) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="line 2: invalid JSON"):
        load_cases(path)
    with pytest.raises(InvalidInput, match=r"\.yaml, \.yml, \.json or \.jsonl"):
        load_cases(tmp_path / "cases.txt")
    with pytest.raises(InvalidInput, match="cannot read"):
        load_cases(tmp_path / "missing.yaml")


# -- the QA runner -------------------------------------------------------------------------


def test_qa_metrics_by_hand(tmp_path: Path) -> None:
    ticks: list[tuple[int, int]] = []
    report = run_qa(qa_set(tmp_path / "qa"), top_k=3, kb_path=tmp_path / "qa-kb",
                    progress=lambda d, t: ticks.append((d, t)))
    rows = {r["qid"]: r for r in report.rows}
    assert report.n == 7 and ticks[-1] == (7, 7) and "q8" not in rows
    assert {q: r["outcome"] for q, r in rows.items()} == {
        "q1": "correct", "q2": "correct", "q3": "correct", "q4": "retrieval_miss",
        "q5": "correct", "q6": "gold_not_in_evidence", "q7": "wrong_sentence"}
    assert report.answer_contains_gold == pytest.approx(4 / 7)  # q1 q2 q3 q5
    assert report.first_citation_gold == pytest.approx(5 / 7)  # q1 q2 q3 q6 q7
    assert report.gold_in_evidence == pytest.approx(5 / 7)
    assert report.statuses == {"answered": 6, "no_evidence": 1, "blocked_by_permission": 0,
                               "unverified": 0}
    assert report.outcomes == {"correct": 4, "retrieval_miss": 1, "gold_not_in_evidence": 1,
                               "not_answered": 0, "wrong_sentence": 1}
    assert (report.mode, report.top_k, report.chunks, report.dataset) == ("bm25", 3, 3, "qa")
    summary = report.to_dict()
    assert summary["answer_contains_gold"] == round(4 / 7, 4) and "rows" not in summary
    assert summary["questions_per_second"] > 0
    assert any(line.startswith("answer_contains_gold: 0.5714") for line in report.lines())
    with KnowledgeBase.open(tmp_path / "qa-kb", create=False) as kept:  # kb_path keeps it
        assert kept.trace(rows["q1"]["trace_id"])["question"] == "Where was Nikola Tesla born?"


def test_qa_limit_and_errors(tmp_path: Path) -> None:
    root = qa_set(tmp_path / "qa")
    assert run_qa(root, limit=2).n == 2
    with pytest.raises(InvalidInput, match=r"qrels/dev.tsv: not found"):
        run_qa(root, split="dev")
    with pytest.raises(InvalidInput, match="limit"):
        run_qa(root, limit=0)
    write_jsonl(root / "answers.jsonl", [{"_id": "q1", "answers": "Smiljan"}])
    with pytest.raises(InvalidInput, match=r"answers.jsonl:1: \"answers\" must be a list"):
        run_qa(root)
    (root / "answers.jsonl").unlink()
    with pytest.raises(InvalidInput, match=r"answers.jsonl: not found \(a QA set also needs"):
        run_qa(root)


def test_qa_questions_with_numeric_ids_are_asked(tmp_path: Path) -> None:
    # JSON ids may be numbers; qrels are text: both name the same question.
    root = tmp_path / "qa"
    write_jsonl(root / "corpus.jsonl", CORPUS)
    write_jsonl(root / "queries.jsonl", [{"_id": 1, "text": "Where was Nikola Tesla born?"}])
    write_jsonl(root / "answers.jsonl", [{"_id": 1, "answers": ["Smiljan"]}])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\ttesla_p0\t1\n",
                                             encoding="utf-8")
    [question] = load_qa_questions(root)
    assert (question.qid, question.gold_docs, question.answers) == (
        "1", frozenset({"tesla_p0"}), ("Smiljan",))
    assert run_qa(root).answer_contains_gold == 1.0


def test_gold_normalisation_and_answer_body() -> None:
    assert contains_gold("Based on x: In  １８８９\nit opened.", ("in 1889",))
    assert contains_gold("位于中国北方。", ("中国 北方",))
    assert not contains_gold("in 1889", ("1890",))
    cite = Citation("p#1", "Super_Bowl_50_p0", "Super_Bowl_50_p0", "t", 1, 1, "It won.")
    answer = Answer("answered", "Based on Super_Bowl_50_p0: It won.", (cite,), (), None)
    assert answer_body(answer) == "It won."
    assert not contains_gold(answer_body(answer), ("50",))


def test_kb_evaluate_runs_a_case_file(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
        report = kb.evaluate(EXAMPLES / "cases" / "workshop.yaml")
        assert (report.passed, report.total) == (3, 3)
