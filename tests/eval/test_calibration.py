"""``glassrag eval --calibrate``: thresholds for ``no_evidence`` from questions with and
without answers, swept offline from one retrieval per question. The sweep's figures must be
what ``glassrag eval`` measures at the same thresholds (exactly, in bm25 and dense mode)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TEST_DATA
from glassrag.errors import InvalidInput
from glassrag.eval.docs import run_docs_eval
from glassrag.eval.docs_questions import load_questions
from glassrag.eval.refusal_calibration import SCORED, calibrate

DATA = TEST_DATA / "docs_eval"
QUESTIONS = DATA / "questions.jsonl"
DOCS = DATA / "docs"


def _scored(figures: dict) -> dict:
    return {key: figures[key] for key in SCORED}


@pytest.fixture(scope="module")
def questions():
    return load_questions(QUESTIONS)


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    return tmp_path_factory.mktemp("calibration-kb")


def test_current_thresholds_score_what_eval_measures(questions, kept) -> None:
    report = calibrate(questions, DOCS, kb_path=kept)
    measured = run_docs_eval(questions, DOCS, kb_path=kept).overall
    assert report.current["min_coverage"] == 0.28 and report.current["min_score"] is None
    assert _scored(report.current) == _scored(measured)
    assert report.mode == "bm25" and report.exact and report.cosine_curve == []


def test_the_recommendation_is_what_eval_then_measures(questions, kept) -> None:
    report = calibrate(questions, DOCS, kb_path=kept, false_refusal_rate=0.5)
    assert report.reachable and report.recommended["false_refusal"] <= 0.5
    chosen = report.recommended["min_coverage"]
    measured = run_docs_eval(questions, DOCS, kb_path=kept,
                             overrides={"answer": {"min_coverage": chosen}}).overall
    assert _scored(report.recommended) == _scored(measured)
    # No threshold within the target refuses more unanswerable questions.
    within = [r for r in report.coverage_curve if r["false_refusal"] <= 0.5]
    assert report.recommended["no_evidence"] == max(r["no_evidence"] for r in within)
    curve = {r["min_coverage"]: r for r in report.coverage_curve}
    assert curve[0.0]["no_evidence"] <= curve[1.0]["no_evidence"] == 1.0
    # At 1.0 only a quote holding every term of its question still answers.
    answerable = [s for s in report.signals if s["answerable"]]
    whole = sum(s["coverage"] == 1.0 for s in answerable)
    assert curve[1.0]["false_refusal"] == round(1 - whole / len(answerable), 4) < 1.0


def test_an_unreachable_target_says_so(questions, kept) -> None:
    # Two answerable questions of seven can never be answered (no matching words; only
    # punctuation), so no threshold refuses fewer than 2/7.
    report = calibrate(questions, DOCS, kb_path=kept, false_refusal_rate=0.1)
    assert not report.reachable
    assert report.recommended["false_refusal"] == pytest.approx(2 / 7, abs=1e-4)
    text = "\n".join(report.lines())
    assert "the target cannot be met" in text and "recommended: [answer] min_coverage" in text
    assert "questions that failed (1" in text and "gh-006" in text


def test_signals_are_recorded_per_question(questions, kept) -> None:
    report = calibrate(questions, DOCS, kb_path=kept)
    signals = {s["id"]: s for s in report.signals}
    assert set(signals) == {q.qid for q in questions}
    assert signals["gh-001"]["coverage"] >= 0.3  # answered at today's threshold
    assert signals["gh-005"]["coverage"] is None  # nothing to quote at any threshold
    assert signals["gh-006"]["error"] and signals["gh-001"]["dense_top"] is None
    json.dumps(report.to_dict())


def test_dense_mode_sweep_is_exact(questions, tmp_path: Path) -> None:
    report = calibrate(questions, DOCS, kb_path=tmp_path / "kb", mode="dense",
                       embedder="hash:64", false_refusal_rate=0.6)
    assert report.embedder == "hash:64" and report.exact and report.cosine_curve
    assert report.current["min_score"] == 0.3  # "auto" for a hash embedder
    assert all(s["dense_top"] is not None for s in report.signals if not s["error"])
    for row in (report.recommended, report.current, report.cosine_curve[-1]):
        measured = run_docs_eval(
            questions, DOCS, kb_path=tmp_path / "kb", mode="dense", embedder="hash:64",
            overrides={"answer": {"min_coverage": row["min_coverage"]},
                       "dense": {"min_score": row["min_score"]}}).overall
        assert _scored(row) == _scored(measured), row


def test_hybrid_mode_is_an_estimate_and_says_so(questions, tmp_path: Path) -> None:
    report = calibrate(questions, DOCS, kb_path=tmp_path / "kb", mode="hybrid",
                       embedder="hash:64")
    assert report.mode == "hybrid" and not report.exact
    assert report.recommended["min_score"] is not None
    text = "\n".join(report.lines())
    assert "hybrid figures are estimates" in text and "min_score sweep" in text


def test_bad_target(questions) -> None:
    with pytest.raises(InvalidInput, match="between 0 and 1"):
        calibrate(questions, DOCS, false_refusal_rate=1.5)


def test_cli_calibrate(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "glassrag", "eval", str(QUESTIONS), "--docs", str(DOCS)]
    done = subprocess.run([*base, "--calibrate", "--false-refusal-rate", "0.5", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # gh-006 cannot be asked: reported, exit 1
    data = json.loads(done.stdout)
    assert data["reachable"] and data["recommended"]["false_refusal"] <= 0.5
    both = subprocess.run([*base, "--calibrate", "--min-coverage", "0.4"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert both.returncode == 2 and "drop --min-coverage" in both.stderr


def test_dense_gate_sweep_is_exact(questions, tmp_path: Path) -> None:
    """The dense gate's pairs (``min_margin``, ``min_quote_cosine``) score what eval then
    measures with them: the margin and every quote's cosine are recorded with the gate open."""
    report = calibrate(questions, DOCS, kb_path=tmp_path / "kb", mode="dense",
                       embedder="hash:64", false_refusal_rate=0.6)
    assert report.gate_current is not None and report.gate_recommended is not None
    # "auto" for a hash embedder: no margin, no rescue.
    assert (report.gate_current["min_margin"], report.gate_current["min_quote_cosine"]) \
        == (0.0, 1.0)
    assert any(s["dense_margin"] is not None for s in report.signals)
    at = {"min_coverage": report.current["min_coverage"],
          "min_score": report.current["min_score"]}
    curve = report.gate_curve
    assert len({r["false_refusal"] for r in curve}) > 1, "the sweep must change an outcome"
    for row in (report.gate_recommended, report.gate_current, curve[0], curve[len(curve) // 2]):
        measured = run_docs_eval(
            questions, DOCS, kb_path=tmp_path / "kb", mode="dense", embedder="hash:64",
            overrides={"answer": {"min_coverage": at["min_coverage"]},
                       "dense": {"min_score": at["min_score"], "min_margin": row["min_margin"],
                                 "min_quote_cosine": row["min_quote_cosine"]}}).overall
        assert _scored(row) == _scored(measured), row
    text = "\n".join(report.lines())
    assert "dense gate" in text and "min_quote_cosine sweep" in text


def test_a_no_evidence_target_prefers_correct_answers() -> None:
    from glassrag.eval.refusal_calibration import choose

    def figures(answered: float, false_refusal: float, no_evidence: float) -> dict:
        return {"answered_correct": answered, "false_refusal": false_refusal,
                "no_evidence": no_evidence}

    table = {(0.1, 0.8): figures(0.60, 0.05, 0.78), (0.2, 0.8): figures(0.55, 0.09, 0.86),
             (0.3, 0.8): figures(0.62, 0.04, 0.50)}
    # Without it: the most refusals of unanswerable questions within the budget.
    assert choose(table, 0.1) == ((0.2, 0.8), True)
    # With it: the most correct answers among the pairs reaching both targets.
    assert choose(table, 0.1, 0.75) == ((0.1, 0.8), True)
    # Out of reach: as without it.
    assert choose(table, 0.1, 0.95) == ((0.2, 0.8), True)


def test_cli_dense_gate_options(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "glassrag", "--kb", str(tmp_path / "kb"), "eval",
            str(QUESTIONS), "--docs", str(DOCS), "--mode", "dense", "--embedder", "hash:64",
            "--min-margin", "2.0", "--json"]

    def answered(*extra: str) -> float:
        done = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr  # in dense mode every question is asked
        return json.loads(done.stdout)["groups"]["overall"]["all"]["answered_correct"]

    # No evidence stands out by 2.0: only a quote close enough answers (a question with
    # fewer than two dense candidates has no margin, so no gate).
    assert answered("--min-quote-cosine", "1.0") < answered("--min-quote-cosine", "-1.0")
    both = subprocess.run([*base, "--calibrate"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert both.returncode == 2 and "--min-margin" in both.stdout  # --json: the error as JSON
