"""``glassrag eval QUESTIONS.jsonl --docs DIR``: questions about your own documentation.

The bundled set (tests/data/docs_eval) has two corpora, English and Chinese, and one question
for each outcome: answered and cited right, answered with a gold string the text does not
hold, answered with evidence pointing elsewhere, refused, rejected by the engine (nothing but
punctuation), and unanswerable questions refused or answered.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, TEST_DATA, write_jsonl
from glassrag import KnowledgeBase
from glassrag.errors import InvalidInput
from glassrag.eval.docs import percentile, run_docs_eval
from glassrag.eval.docs_questions import (
    Span,
    answer_text,
    holds_answer,
    is_question_file,
    load_questions,
    normalise_answer,
    overlaps,
    path_matches,
)
from glassrag.records import Answer, Citation

DATA = TEST_DATA / "docs_eval"
QUESTIONS = DATA / "questions.jsonl"
DOCS = DATA / "docs"


@pytest.fixture(scope="module")
def report():
    return run_docs_eval(load_questions(QUESTIONS), DOCS)


def test_the_four_rates_and_gold_in_top5(report) -> None:
    o = report.overall
    assert (o["n_answerable"], o["n_unanswerable"]) == (7, 3)
    assert o["answered_correct"] == pytest.approx(4 / 7, abs=1e-4)  # gh-001/002/004, kl-001
    assert o["cited_correct"] == pytest.approx(4 / 7, abs=1e-4)  # gh-001/002/003, kl-001
    assert o["both_correct"] == pytest.approx(3 / 7, abs=1e-4)
    assert o["false_refusal"] == pytest.approx(2 / 7, abs=1e-4)  # gh-005 refused, gh-006 error
    assert o["no_evidence"] == pytest.approx(2 / 3, abs=1e-4)  # gh-008 is answered
    assert o["gold_in_top5"] == pytest.approx(4 / 7, abs=1e-4)
    assert o["errors"] == 1


def test_each_question_is_judged_as_designed(report) -> None:
    rows = {r["id"]: r for r in report.rows}
    assert [r["id"] for r in report.rows] == [q.qid for q in load_questions(QUESTIONS)]
    assert rows["gh-003"]["cited_correct"] and not rows["gh-003"]["answered_correct"]
    assert rows["gh-004"]["answered_correct"] and not rows["gh-004"]["cited_correct"]
    assert rows["gh-005"]["status"] == "no_evidence" and rows["gh-005"]["false_refusal"]
    assert rows["gh-006"]["status"] == "error" and "no searchable terms" in rows["gh-006"]["error"]
    assert rows["gh-008"]["status"] == "answered" and not rows["gh-008"]["no_evidence"]
    assert rows["kl-001"]["both_correct"] and rows["kl-002"]["no_evidence"]
    # The answer is judged without the renderer's "Based on <source>:" prefix.
    assert not rows["gh-001"]["answer"].startswith("Based on")
    assert rows["gh-001"]["answer_chars"] == len(rows["gh-001"]["answer"])
    assert rows["gh-001"]["citations"][0]["source"] == "docs/watering.md"


def test_groups_per_corpus_language_and_kind(report) -> None:
    groups = report.groups
    assert set(groups) == {"overall", "corpus", "lang", "kind"}
    assert list(groups["corpus"]) == ["greenhouse", "kiln"]
    assert groups["corpus"]["kiln"]["answered_correct"] == 1.0
    assert groups["corpus"]["greenhouse"]["false_refusal"] == pytest.approx(2 / 6, abs=1e-4)
    assert groups["lang"]["zh"]["no_evidence"] == 1.0
    assert groups["kind"]["unanswerable"]["n_unanswerable"] == 3
    assert groups["kind"]["yesno"]["false_refusal"] == 1.0
    # One knowledge base per corpus folder: corpora never mix.
    assert [(b.name, b.documents) for b in report.builds] == [("greenhouse", 2), ("kiln", 1)]


def test_report_text_lists_failures(report) -> None:
    text = "\n".join(report.lines(failures=None))
    assert "overall" in text and "corpus kiln" in text and "kind howto" in text
    assert "failures: 5" in text
    assert "- gh-003 [value] status answered answered_correct=no cited_correct=yes" in text
    assert "expected: 10 minutes at docs/sensors.md:5-5" in text
    assert "error: the question has no searchable terms" in text
    assert re.search(r"top hits: docs/sensors\.md:\d+-\d+", text)
    assert "failures: 5 (first 2 shown" in "\n".join(report.lines(failures=2))
    data = report.to_dict()
    assert data["errors"] == 1 and len(data["questions"]) == 10
    json.dumps(data)  # JSON-ready


def test_settings_overrides_change_the_run_only(tmp_path: Path) -> None:
    questions = load_questions(QUESTIONS)
    strict = run_docs_eval(questions, DOCS, kb_path=tmp_path / "kb",
                           overrides={"answer": {"min_coverage": 1.0}})
    # Only a quote holding every term of its question (the kiln one) answers at 1.0.
    assert strict.overall["false_refusal"] == pytest.approx(6 / 7, abs=1e-4)
    assert strict.settings["min_coverage"] == 1.0
    with pytest.raises(InvalidInput, match="answer.min_coverage"):
        run_docs_eval(questions, DOCS, overrides={"answer": {"min_coverage": 2}})
    # The kept knowledge bases still have their own settings on disk.
    again = run_docs_eval(questions, DOCS, kb_path=tmp_path / "kb")
    assert again.overall["answered_correct"] == pytest.approx(4 / 7, abs=1e-4)


def test_kept_knowledge_bases_are_updated_not_rebuilt(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "notes").mkdir(parents=True)
    (docs / "notes" / "a.md").write_text("# Ports\n\nThe relay listens on port 7781.\n",
                                         encoding="utf-8")
    questions = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "p1", "corpus": "notes", "question": "Which port does the relay listen on?",
         "answerable": True, "answers": ["7781"],
         "evidence": [{"path": "a.md", "line_start": 3, "line_end": 3}]}])
    first = run_docs_eval(load_questions(questions), docs, kb_path=tmp_path / "kb")
    assert first.overall["both_correct"] == 1.0
    assert (tmp_path / "kb" / "glassrag.db").exists()  # one corpus: the kb path itself
    (docs / "notes" / "a.md").write_text("# Ports\n\nThe relay listens on port 9000.\n",
                                         encoding="utf-8")
    second = run_docs_eval(load_questions(questions), docs, kb_path=tmp_path / "kb")
    assert second.overall["answered_correct"] == 0.0  # the changed file was re-read
    assert second.builds[0].documents == 1


def test_an_existing_knowledge_base_is_asked_as_it_is(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([DOCS / "greenhouse"])
        before = kb.status()["chunks"]
        report = run_docs_eval([q for q in load_questions(QUESTIONS) if q.corpus == "greenhouse"],
                               kb=kb)
        assert kb.status()["chunks"] == before
        same = kb.evaluate(EXAMPLES / "cases" / "tidepool-questions.yaml")  # other docs
        assert same.overall["false_refusal"] == 1.0 and kb.status()["chunks"] == before
    assert report.overall["both_correct"] == pytest.approx(2 / 6, abs=1e-4)
    with pytest.raises(InvalidInput, match="either a documentation folder"):
        run_docs_eval(load_questions(QUESTIONS))


def test_kb_evaluate_asks_a_question_file_as_run_docs_eval_does(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([DOCS / "greenhouse"])
        by_method = kb.evaluate(QUESTIONS)
        by_function = run_docs_eval(load_questions(QUESTIONS), kb=kb)

    def comparable(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k not in ("ask_ms", "trace_id")} for r in rows]

    assert comparable(by_method.rows) == comparable(by_function.rows)
    assert by_method.settings == by_function.settings and len(by_method.rows) > 0
    assert [b.kb_path for b in by_method.builds] == [str(tmp_path / "kb")]


def test_normalisation_and_matching_rules() -> None:
    assert normalise_answer("3 天") == normalise_answer("3天") == "3天"
    assert normalise_answer("４\u200bMiB") == "4mib"  # full width folded, zero-width dropped
    assert holds_answer("Timeout: 30 Seconds.", ["30 seconds"])
    assert not holds_answer("Timeout: 3 seconds", ["30 seconds"])
    assert not holds_answer("anything", ["", "  "])
    assert path_matches("corpus/x/docs/a.md", "docs/a.md") and path_matches("docs\\a.md",
                                                                           "./docs/a.md")
    assert not path_matches("corpus/x/mydocs/a.md", "docs/a.md")
    span = Span("docs/a.md", 10, 12)
    assert overlaps("docs/a.md", 12, 20, span) and overlaps("docs/a.md", None, 11, span)
    assert not overlaps("docs/a.md", 13, 20, span) and not overlaps("docs/a.md", None, None,
                                                                   span)
    assert percentile([5, 1, 4, 2, 3], 0.9) == 5 and percentile([], 0.9) is None


@pytest.mark.parametrize(("record", "problem"), [
    ({"question": "q?", "answerable": True}, r"line 1: field 'id': required"),
    ({"id": "a", "question": "q?"}, r"field 'answerable': required, true or false"),
    ({"id": "a", "question": "q?", "answerable": True, "answers": ["x"]},
     r"field 'evidence': an answerable question needs"),
    ({"id": "a", "question": "q?", "answerable": True,
      "evidence": [{"path": "a.md", "line_start": 1}]}, r"field 'answers': an answerable"),
    ({"id": "a", "question": "q?", "answerable": True, "answers": ["x"],
      "evidence": [{"path": "a.md", "line_start": 0}]}, r"field 'evidence\[1\]': line_start"),
    ({"id": "a", "question": "q?", "answerable": True, "answers": ["x"],
      "evidence": [{"path": "a.md", "line_start": 5, "line_end": 2}]}, r"before line_start"),
    ({"id": "a", "question": "q?", "answerable": False, "answers": ["x"]},
     r"field 'answers': an unanswerable question has no answers"),
    ({"id": "a", "question": "q?", "answerable": False, "colour": "red"},
     r"field 'colour': unknown field"),
])
def test_question_file_errors_name_line_and_field(tmp_path: Path, record: dict,
                                                  problem: str) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", [record])
    with pytest.raises(InvalidInput, match=problem):
        load_questions(path)


def test_question_file_shape_errors(tmp_path: Path) -> None:
    ok = {"id": "a", "question": "q?", "answerable": False}
    path = write_jsonl(tmp_path / "q.jsonl", [ok, ok])
    duplicate = r"line 2: field 'id': duplicate id 'a' \(first on line 1\)"
    with pytest.raises(InvalidInput, match=duplicate):
        load_questions(path)
    path.write_text('{"id": "a", "question": "q?", "answerable": false}\n{oops\n')
    with pytest.raises(InvalidInput, match="line 2: invalid JSON"):
        load_questions(path)
    path.write_text("\n")
    with pytest.raises(InvalidInput, match="holds no questions"):
        load_questions(path)
    assert is_question_file(QUESTIONS)
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"name": "x", "question": "q?", "roles": [],
                                                    "expected_status": "answered"}])
    assert not is_question_file(cases) and not is_question_file(tmp_path / "none.jsonl")


def test_yaml_question_files(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text("questions:\n  - id: a\n    question: Which port?\n    answerable: false\n"
                    "  - id: b\n    question: Which port?\n    answerable: true\n",
                    encoding="utf-8")
    assert is_question_file(path)
    with pytest.raises(InvalidInput, match=r"q.yaml: line 5: field 'answers': an answerable"):
        load_questions(path)
    path.write_text("- id: a\n  question: q?\n  answerable: false\n", encoding="utf-8")
    assert [q.kind for q in load_questions(path)] == ["unanswerable"]
    path.write_text("questions: {id: a}\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="field 'questions': expected a list of questions"):
        load_questions(path)
    cases = tmp_path / "cases.yaml"
    cases.write_text("- name: x\n  question: q?\n  roles: []\n  expected_status: answered\n")
    assert not is_question_file(cases)
    with pytest.raises(InvalidInput, match="question files are .jsonl, .json, .yaml"):
        load_questions(tmp_path / "q.txt")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "glassrag", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def test_cli_table_json_and_exit_code(tmp_path: Path) -> None:
    done = _cli("eval", str(QUESTIONS), "--docs", str(DOCS), cwd=tmp_path)
    # One question could not be asked: the figures are printed and the exit code says so.
    assert done.returncode == 1, done.stderr
    assert "overall" in done.stdout and "0.57" in done.stdout and "failures: 5" in done.stdout
    as_json = _cli("eval", str(QUESTIONS), "--docs", str(DOCS), "--json", cwd=tmp_path)
    data = json.loads(as_json.stdout)
    assert data["groups"]["overall"]["all"]["no_evidence"] == pytest.approx(0.6667, abs=1e-4)
    assert not (tmp_path / ".glassrag").exists()  # no --kb: nothing kept, nothing implicit


def test_cli_without_docs_asks_the_current_knowledge_base(tmp_path: Path) -> None:
    good = [q for q in QUESTIONS.read_text(encoding="utf-8").splitlines()
            if '"greenhouse"' in q and '"???"' not in q]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(good) + "\n", encoding="utf-8")
    assert _cli("--kb", "kb", "ingest", str(DOCS / "greenhouse"), cwd=tmp_path).returncode == 0
    done = _cli("--kb", "kb", "eval", str(path), "--min-coverage", "0.99", "--json",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["settings"]["min_coverage"] == 0.99
    missing = _cli("--kb", "nowhere", "eval", str(path), cwd=tmp_path)
    assert missing.returncode == 3 and "no knowledge base" in missing.stderr
    alone = _cli("eval", "--qa", str(tmp_path), "--docs", str(DOCS), cwd=tmp_path)
    assert alone.returncode == 2 and "need a question file" in alone.stderr


def test_bundled_example_set_runs() -> None:
    questions = load_questions(EXAMPLES / "cases" / "tidepool-questions.yaml")
    report = run_docs_eval(questions, EXAMPLES / "tidepool")
    o = report.overall
    assert o["errors"] == 0 and report.builds[0].documents >= 2
    assert o["both_correct"] >= 0.5 and o["no_evidence"] >= 0.5


@pytest.mark.parametrize("policy", ["disclose", "conceal"])
def test_eval_and_calibrate_show_nothing_the_asker_may_not_read(tmp_path: Path,
                                                                policy: str) -> None:
    from conftest import init_kb_with
    from glassrag import Principal
    from glassrag.eval.refusal_calibration import calibrate

    kb_dir = init_kb_with(tmp_path / "kb", 'disclosure = "disclose"',
                          f'disclosure = "{policy}"')
    records = write_jsonl(tmp_path / "r.jsonl", [
        {"doc_id": "pub", "title": "Relay", "source": "relay.md", "roles": ["public"],
         "text": "The relay listens on port 7781."},
        {"doc_id": "vaultsecretdoc", "title": "Vault canarytitle", "source": "vaultsource.md",
         "roles": ["ops"], "text": "The vault opens with code zebracanary 4411."}])
    questions = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "v", "question": "Which code opens the vault?", "answerable": True,
         "answers": ["4411"], "evidence": [{"path": "vaultsource.md", "line_start": 1,
                                            "line_end": 1}]},
        {"id": "r", "question": "Which port does the relay listen on?", "answerable": True,
         "answers": ["7781"], "evidence": [{"path": "relay.md", "line_start": 1,
                                            "line_end": 1}]}])
    with KnowledgeBase.open(kb_dir) as kb:
        assert kb.ingest([records]).ok
        report = run_docs_eval(load_questions(questions), kb=kb, principal=Principal("p"))
        calibration = calibrate(load_questions(questions), kb=kb, principal=Principal("p"))
    rows = {r["id"]: r for r in report.rows}
    expected = "blocked_by_permission" if policy == "disclose" else "no_evidence"
    assert rows["v"]["status"] == expected and rows["r"]["both_correct"]
    shown = json.dumps([report.rows, report.groups, calibration.signals,
                        calibration.coverage_curve, "\n".join(report.lines(failures=None)),
                        "\n".join(calibration.lines())])
    # The gold string and evidence path come from the question file itself; nothing else of
    # the hidden document may show.
    for secret in ("zebracanary", "vaultsecretdoc", "canarytitle", "opens with code"):
        assert secret not in shown, secret
    assert all(item["source"] == "relay.md" for r in report.rows
               for item in (*r["citations"], *r["top_hits"]))


def test_answer_text_drops_the_source_but_keeps_a_heading_path_the_label_shows() -> None:
    cite = Citation(chunk_id="CHANGES.md#7", doc_id="CHANGES.md", source="CHANGES.md",
                    title="Changes", line_start=3, line_end=3, quote="- Folding.")
    labelled = Answer(status="answered", citations=(cite,), evidence=(), trace_id=None,
                      answer="Based on CHANGES.md (Changelog › 2.4.0 › Added): - Folding.")
    assert answer_text(labelled) == " (Changelog › 2.4.0 › Added): - Folding."
    plain = Answer(status="answered", citations=(cite,), evidence=(), trace_id=None,
                   answer="Based on CHANGES.md: - Folding.\nBased on CHANGES.mdx: no")
    assert answer_text(plain) == "- Folding.\nBased on CHANGES.mdx: no"
