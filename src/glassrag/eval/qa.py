"""End-to-end QA benchmark: ask every question of a BEIR-layout QA set, check the answers.

A QA set is a folder with ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``), ``qrels/<split>.tsv`` (``query-id  corpus-id  score``, with a header) and
``answers.jsonl`` (``_id``, ``corpus-id``, gold ``answers``), read by
:mod:`glassrag.eval.beir_data`. :func:`run_qa` converts the corpus to glassrag JSONL records
(every paragraph public, as :func:`~glassrag.eval.beir_data.write_records` writes them for
the retrieval benchmark too), ingests it into a temporary
knowledge base, asks every question that has qrels in the split and reports:

* ``answer_contains_gold``: share of questions answered with text that contains a gold answer
  after normalisation (NFKC, casefold, whitespace collapsed; for gold answers with Han
  characters all whitespace removed). The ``Based on <source>:`` prefixes are cut first,
  so a paragraph id such as ``Super_Bowl_50_p0`` cannot match the gold answer ``50``.
* ``first_citation_gold``: share whose first citation is a gold paragraph (per qrels).
* the status mix, and why each miss happened (see :data:`OUTCOMES`).

Chunking: a QA paragraph is kept whole when it fits ``DEFAULT_CHUNKING["size"]`` characters
(punctuation chunker, cuts only at sentence ends); see ``benchmarks/RESULTS.md`` for the
measurements behind that choice.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from glassrag.errors import GlassragError, InvalidInput
from glassrag.eval.beir_data import (
    load_answers,
    load_corpus,
    load_qrels,
    load_queries,
    write_records,
)
from glassrag.eval.docs_questions import answer_text as answer_body
from glassrag.records import ANSWERED, STATUSES, Answer, Principal

Progress = Callable[[int, int], None]

#: ``[chunking]`` settings of the temporary knowledge base: one chunk per paragraph up to
#: 2,000 characters (all 848 CMRC and 237 of 240 XQuAD paragraphs), longer ones cut at
#: sentence ends with about one sentence of overlap.
DEFAULT_CHUNKING: dict[str, Any] = {"jsonl": "punctuation", "size": 2000, "overlap": 200}
#: Why a question did or did not get a gold answer, checked in this order.
OUTCOMES = ("correct", "retrieval_miss", "gold_not_in_evidence", "not_answered",
            "wrong_sentence", "error")

_WHITESPACE = re.compile(r"\s+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class QAQuestion:
    qid: str
    text: str
    gold_docs: frozenset[str]
    answers: tuple[str, ...]


@dataclass
class QAReport:
    """Metrics of one run; ``outcomes`` counts :data:`OUTCOMES`, ``rows`` holds details."""

    dataset: str
    n: int
    mode: str
    top_k: int
    answer_contains_gold: float
    first_citation_gold: float
    gold_in_evidence: float
    statuses: dict[str, int]
    outcomes: dict[str, int]
    ingest_seconds: float
    elapsed_seconds: float
    chunks: int
    chunking: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def questions_per_second(self) -> float:
        return self.n / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    def to_dict(self, *, rows: bool = False) -> dict[str, Any]:
        """Every metric (floats rounded to 4 places); per-question ``rows`` only on request."""
        out = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}
        out["questions_per_second"] = round(self.questions_per_second, 2)
        if not rows:
            del out["rows"]
        return out

    def lines(self) -> list[str]:
        statuses = ", ".join(f"{k} {v}" for k, v in self.statuses.items() if v)
        outcomes = ", ".join(f"{k} {v}" for k, v in self.outcomes.items())
        return [
            f"dataset: {self.dataset} ({self.n} questions, {self.chunks} chunks)",
            f"mode: {self.mode}, top_k: {self.top_k}",
            f"answer_contains_gold: {self.answer_contains_gold:.4f}",
            f"first_citation_gold: {self.first_citation_gold:.4f}",
            f"gold_in_evidence: {self.gold_in_evidence:.4f}",
            f"statuses: {statuses}",
            f"outcomes: {outcomes}",
            f"elapsed: {self.elapsed_seconds:.1f}s ({self.questions_per_second:.1f} questions/s;"
            f" ingest {self.ingest_seconds:.1f}s)",
        ]


def normalize_gold(text: str, *, drop_spaces: bool = False) -> str:
    """NFKC, casefold, whitespace runs collapsed (or removed, for Chinese)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _WHITESPACE.sub("", text) if drop_spaces else _WHITESPACE.sub(" ", text).strip()


def contains_gold(answer: str, golds: tuple[str, ...]) -> bool:
    """True if ``answer`` contains any of ``golds`` after :func:`normalize_gold`."""
    for gold in golds:
        drop = bool(_HAN.search(gold))
        needle = normalize_gold(gold, drop_spaces=drop)
        if needle and needle in normalize_gold(answer, drop_spaces=drop):
            return True
    return False


# -- loading -----------------------------------------------------------------------------


def load_questions(directory: Path, split: str = "test") -> list[QAQuestion]:
    """The questions with a relevant (score above 0) paragraph in ``split``, in
    ``queries.jsonl`` order, with their gold answers."""
    qrels = load_qrels(directory, split)
    gold = {qid: frozenset(d for d, grade in docs.items() if grade > 0)
            for qid, docs in qrels.items()}
    answers = load_answers(directory)
    return [QAQuestion(qid, text, gold[qid], answers.get(qid, ()))
            for qid, text in load_queries(directory, qrels, split).items() if gold[qid]]


@contextlib.contextmanager
def benchmark_kb_dir(kb_path: Path | None, prefix: str,
                     config: Mapping[str, Any]) -> Iterator[Path]:
    """The knowledge-base directory of a benchmark run: ``kb_path`` (kept, reused) or a
    temporary one, with ``config`` written as its settings unless it already has some."""
    if kb_path is not None:
        Path(kb_path).mkdir(parents=True, exist_ok=True)
    keep = nullcontext(str(kb_path)) if kb_path is not None else None
    with keep or tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        settings = root / "glassrag.toml"
        if not settings.exists():
            settings.write_text(_toml(config), encoding="utf-8")
        yield root


def _toml(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """A settings file from flat sections (JSON scalars are valid TOML scalars)."""
    return "".join(f"[{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
                   for name, values in sections.items())


# -- running -----------------------------------------------------------------------------


def run_qa(
    directory: str | Path,
    *,
    mode: str = "bm25",
    top_k: int | None = None,
    limit: int | None = None,
    split: str = "test",
    progress: Progress | None = None,
    kb_path: Path | None = None,
    chunking: Mapping[str, Any] | None = None,
    answer: Mapping[str, Any] | None = None,
) -> QAReport:
    """Build a knowledge base from the QA set in ``directory`` and ask its questions.

    ``limit`` asks only the first N questions; ``kb_path`` keeps the knowledge base (and its
    traces) there instead of in a temporary directory; ``chunking`` and ``answer`` override
    the ``[chunking]`` / ``[answer]`` settings (default :data:`DEFAULT_CHUNKING`).
    ``progress(done, total)`` is called after each question.
    """
    from glassrag.kb import KnowledgeBase

    directory = Path(directory)
    if not directory.is_dir():
        raise InvalidInput(f"{directory}: not a directory", path=str(directory))
    if limit is not None and limit < 1:
        raise InvalidInput("limit must be at least 1", field="limit")
    questions = load_questions(directory, split)[:limit]
    chunk_settings = dict(DEFAULT_CHUNKING if chunking is None else chunking)
    config = {"chunking": chunk_settings, "answer": dict(answer or {})}
    with benchmark_kb_dir(kb_path, "glassrag-qa-", config) as root:
        corpus = root / "qa-corpus.jsonl"
        write_records(load_corpus(directory), corpus)
        with KnowledgeBase.open(root) as kb:
            started = time.perf_counter()
            # A kept --kb may hold the same set written by eval --beir under another file
            # name: those documents are this corpus, so replacing them is intended.
            report = kb.ingest([corpus], replace=True)
            if report.failed:
                raise InvalidInput(f"{directory}: corpus not ingested: {report.failed[0].error}")
            ingest_seconds = time.perf_counter() - started
            chunks = int(kb.status().get("chunks", report.chunks))
            k = top_k or kb.settings.answer.top_k
            started = time.perf_counter()
            rows = []
            for done, question in enumerate(questions, start=1):
                try:
                    got = kb.ask(question.text, principal=Principal("qa-eval"), top_k=k,
                                 mode=mode)
                    rows.append(score_answer(question, got))
                except GlassragError as exc:  # reported with the question; the run goes on
                    rows.append(error_row(question, exc.message))
                if progress is not None:
                    progress(done, len(questions))
            elapsed = time.perf_counter() - started
    return summarize(directory.name, rows, mode=mode, top_k=k, chunks=chunks,
                     chunking=chunk_settings, ingest_seconds=ingest_seconds, elapsed=elapsed)


def score_answer(question: QAQuestion, answer: Answer) -> dict[str, Any]:
    """One row: the checks on one answer and the outcome that explains it."""
    body = answer_body(answer) if answer.status == ANSWERED else ""
    evidence_docs = [h.chunk.doc_id for h in answer.evidence]
    retrieved = any(d in question.gold_docs for d in evidence_docs)
    gold_text = any(contains_gold(h.chunk.text, question.answers) for h in answer.evidence
                    if h.chunk.doc_id in question.gold_docs)
    correct = bool(body) and contains_gold(body, question.answers)
    if correct:
        outcome = "correct"
    elif not retrieved:
        outcome = "retrieval_miss"
    elif not gold_text:
        outcome = "gold_not_in_evidence"
    elif answer.status != ANSWERED:
        outcome = "not_answered"
    else:
        outcome = "wrong_sentence"
    first = answer.citations[0].doc_id if answer.citations else None
    return {
        "qid": question.qid, "question": question.text, "gold": list(question.answers),
        "status": answer.status, "answer": body, "correct": correct, "outcome": outcome,
        "first_citation_gold": first in question.gold_docs, "gold_retrieved": retrieved,
        "gold_rank": next((i for i, d in enumerate(evidence_docs, 1)
                           if d in question.gold_docs), None),
        "trace_id": answer.trace_id,
    }


def error_row(question: QAQuestion, message: str) -> dict[str, Any]:
    """The row of a question the engine rejected: counted as not answered."""
    return {
        "qid": question.qid, "question": question.text, "gold": list(question.answers),
        "status": "error", "answer": "", "correct": False, "outcome": "error",
        "first_citation_gold": False, "gold_retrieved": False, "gold_rank": None,
        "trace_id": None, "error": message,
    }


def summarize(dataset: str, rows: list[dict[str, Any]], *, mode: str, top_k: int, chunks: int,
              chunking: dict[str, Any], ingest_seconds: float, elapsed: float) -> QAReport:
    """Aggregate :func:`score_answer` rows into a :class:`QAReport`."""
    n = len(rows)

    def share(key: str) -> float:
        return sum(bool(r[key]) for r in rows) / n if n else 0.0

    statuses = Counter(r["status"] for r in rows)
    outcomes = Counter(r["outcome"] for r in rows)
    return QAReport(
        dataset=dataset, n=n, mode=mode, top_k=top_k,
        answer_contains_gold=share("correct"), first_citation_gold=share("first_citation_gold"),
        gold_in_evidence=share("gold_retrieved"),
        # "error" (a question the engine rejected) is listed only when it happened.
        statuses={s: statuses.get(s, 0) for s in (*STATUSES, "error")
                  if s != "error" or statuses.get(s)},
        outcomes={o: outcomes.get(o, 0) for o in OUTCOMES if o != "error" or outcomes.get(o)},
        ingest_seconds=ingest_seconds, elapsed_seconds=elapsed, chunks=chunks,
        chunking=chunking, rows=rows,
    )
