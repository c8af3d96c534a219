"""Asking a question file of an open knowledge base and judging every answer: the rows,
the rates and the report of a docs eval (see :mod:`glassrag.eval.docs` for the rates).

Everything here takes the knowledge base as a parameter; building knowledge bases from a
documentation folder is :mod:`glassrag.eval.docs`' part. So :meth:`KnowledgeBase.evaluate`
uses this module without the knowledge base and the evaluation importing each other.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glassrag.errors import GlassragError, InvalidInput
from glassrag.eval.docs_questions import DocsQuestion, answer_text, holds_answer, matches_any
from glassrag.records import ANSWERED, DENSE_MODES, NO_EVIDENCE, Answer, Principal

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

Progress = Callable[[int, int], None]
#: How many of the best hits ``gold_in_top5`` looks at.
TOP_HITS = 5
RATES = ("answered_correct", "cited_correct", "both_correct", "false_refusal", "no_evidence",
         "gold_in_top5")
GROUPS = ("corpus", "lang", "kind")
EVAL_PRINCIPAL = Principal("eval")


@dataclass
class CorpusBuild:
    """One knowledge base the questions were asked of."""

    name: str
    folder: str | None
    kb_path: str
    documents: int = 0
    chunks: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    ingest_seconds: float = 0.0


@dataclass
class DocsEvalReport:
    """Per-question ``rows`` and the rates of every group (see the module docstring)."""

    mode: str
    top_k: int | None
    settings: dict[str, Any]
    rows: list[dict[str, Any]]
    builds: list[CorpusBuild]
    groups: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.groups:
            self.groups = group_rates(self.rows)

    @property
    def overall(self) -> dict[str, Any]:
        return self.groups["overall"]["all"]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["error"]]

    def failures(self) -> list[dict[str, Any]]:
        """Answerable questions not both answered and cited correctly, and unanswerable
        questions not answered ``no_evidence``."""
        return [r for r in self.rows
                if (r["answerable"] and not r["both_correct"])
                or (not r["answerable"] and not r["no_evidence"])]

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"mode": self.mode, "top_k": self.top_k, "settings": self.settings,
                "groups": self.groups, "builds": [asdict(b) for b in self.builds],
                "errors": len(self.errors), "questions": self.rows}

    def lines(self, failures: int | None = 20) -> list[str]:
        """The rates as a table, then up to ``failures`` failures (None: all)."""
        from glassrag.eval.docs_report import report_lines

        return report_lines(self, failures)


#: The knowledge bases of a run: each with its build and the questions asked of it.
Plan = Sequence[tuple[CorpusBuild, "KnowledgeBase", Sequence[DocsQuestion]]]


# -- asking --------------------------------------------------------------------------------


def evaluate_kb(
    kb: KnowledgeBase,
    questions: Sequence[DocsQuestion],
    *,
    mode: str | None = None,
    embedder: str | None = None,
    top_k: int | None = None,
    principal: Principal | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
) -> DocsEvalReport:
    """Ask every question of ``kb`` as it is and judge the answers (the arguments are
    :func:`glassrag.eval.docs.run_docs_eval`'s)."""
    return ask_plan([(current_build(kb), kb, questions)], questions, mode=mode,
                    embedder=embedder, top_k=top_k, principal=principal, overrides=overrides,
                    progress=progress)


def current_build(kb: KnowledgeBase) -> CorpusBuild:
    """The build record of a knowledge base used as it is (nothing ingested)."""
    counts = kb.status()
    return CorpusBuild("", None, str(kb.path), int(counts.get("documents", 0)),
                       int(counts.get("chunks", 0)))


def ask_plan(plan: Plan, questions: Sequence[DocsQuestion], *, mode: str | None,
             embedder: str | None, top_k: int | None, principal: Principal | None,
             overrides: Mapping[str, Mapping[str, Any]] | None,
             progress: Progress | None) -> DocsEvalReport:
    """Ask each knowledge base of ``plan`` its questions; rows come in ``questions`` order."""
    principal = principal or EVAL_PRINCIPAL
    rows: list[dict[str, Any]] = []
    builds: list[CorpusBuild] = []
    settings: dict[str, Any] = {}
    total = len(questions)
    for build, base, asked in plan:
        apply_overrides(base, overrides or {})
        settings = _settings_of(base, mode, embedder)
        builds.append(build)
        for question in asked:
            rows.append(ask_one(base, question, principal=principal, mode=mode,
                                embedder=embedder, top_k=top_k))
            if progress is not None:
                progress(len(rows), total)
    order = {q.qid: n for n, q in enumerate(questions)}
    rows.sort(key=lambda r: order[r["id"]])
    return DocsEvalReport(mode=mode or settings.get("mode", "bm25"), top_k=top_k,
                          settings=settings, rows=rows, builds=builds)


def ask_one(kb: KnowledgeBase, question: DocsQuestion, *, principal: Principal,
            mode: str | None = None, embedder: str | None = None,
            top_k: int | None = None) -> dict[str, Any]:
    """One question asked and judged: a row of the report."""
    started = time.perf_counter()
    try:
        answer: Answer | None = kb.ask(question.question, principal=principal, top_k=top_k,
                                       mode=mode, embedder=embedder)
        error = None
    except GlassragError as exc:  # one bad question must not end the run
        answer, error = None, exc.message
    return judge(question, answer, error, (time.perf_counter() - started) * 1000)


def judge(question: DocsQuestion, answer: Answer | None, error: str | None = None,
          ask_ms: float | None = None) -> dict[str, Any]:
    """The row for one question: what came back and each check on it."""
    status = answer.status if answer is not None else "error"
    answered = status == ANSWERED
    text = answer_text(answer) if answer is not None and answered else ""
    cited = answer.citations if answer is not None and answered else ()
    top = answer.evidence[:TOP_HITS] if answer is not None else ()
    citations = [{"source": c.source, "line_start": c.line_start, "line_end": c.line_end}
                 for c in cited]
    hits = [{"source": h.chunk.source, "line_start": h.chunk.line_start,
             "line_end": h.chunk.line_end, "score": round(h.score, 6)} for h in top]
    row: dict[str, Any] = {
        "id": question.qid, "corpus": question.corpus, "lang": question.lang,
        "kind": question.kind, "answerable": question.answerable,
        "question": question.question, "status": status, "answer": text,
        "answer_chars": len(text) if answered else None, "citations": citations,
        "top_hits": hits, "expected": list(question.answers),
        "evidence": [{"path": s.path, "line_start": s.line_start, "line_end": s.line_end}
                     for s in question.evidence],
        "error": error, "ask_ms": round(ask_ms, 3) if ask_ms is not None else None,
        "trace_id": answer.trace_id if answer is not None else None,
    }
    if question.answerable:
        correct = answered and holds_answer(text, question.answers)
        cited_ok = answered and any(matches_any(c.source, c.line_start, c.line_end,
                                                question.evidence) for c in cited)
        row.update(answered_correct=correct, cited_correct=cited_ok,
                   both_correct=correct and cited_ok, false_refusal=not answered,
                   gold_in_top5=any(matches_any(h.chunk.source, h.chunk.line_start,
                                                h.chunk.line_end, question.evidence)
                                    for h in top))
    else:
        row["no_evidence"] = status == NO_EVIDENCE
    return row


# -- settings ------------------------------------------------------------------------------


def apply_overrides(kb: KnowledgeBase, overrides: Mapping[str, Mapping[str, Any]]) -> None:
    """Replace settings sections of ``kb`` in memory (never on disk), validated."""
    from pydantic import ValidationError

    for section, values in overrides.items():
        current = getattr(kb.settings, section, None)
        if current is None or not hasattr(current, "model_dump"):
            raise InvalidInput(f"unknown settings section {section!r}", field=section)
        try:
            setattr(kb.settings, section,
                    type(current).model_validate({**current.model_dump(), **values}))
        except ValidationError as exc:
            problems = "; ".join(f"{section}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                                 for e in exc.errors())
            raise InvalidInput(f"bad settings: {problems}", field=section) from None


def _settings_of(kb: KnowledgeBase, mode: str | None, embedder: str | None) -> dict[str, Any]:
    """The settings that decide the answers; ``min_score`` resolved for the embedder used."""
    s = kb.settings
    side = kb.dense(embedder) if (mode or s.search.mode) in DENSE_MODES else None
    spec = side.spec if side is not None else None
    return {"mode": mode or s.search.mode, "answer_top_k": s.answer.top_k,
            "min_coverage": s.answer.coverage(mode or s.search.mode, spec),
            "max_sentences": s.answer.max_sentences,
            "embedder": spec, "min_score": s.dense.min_cosine(spec) if spec else None}


# -- figures -------------------------------------------------------------------------------


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` 0.9: the value 90 % of ``values`` do not exceed)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def rates(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The rates of one group of rows; a rate without questions to count is None."""
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]

    def share(group: Sequence[Mapping[str, Any]], key: str) -> float | None:
        return round(sum(bool(r[key]) for r in group) / len(group), 4) if group else None

    lengths = [r["answer_chars"] for r in rows if r["answer_chars"] is not None]
    latencies = [r["ask_ms"] for r in rows if r["ask_ms"] is not None and not r["error"]]
    out: dict[str, Any] = {"n_answerable": len(answerable), "n_unanswerable": len(unanswerable)}
    for key in RATES:
        out[key] = share(unanswerable if key == "no_evidence" else answerable, key)
    out["answer_chars_p50"] = statistics.median(lengths) if lengths else None
    out["answer_chars_p90"] = percentile(lengths, 0.9)
    out["ask_ms_p50"] = round(statistics.median(latencies), 3) if latencies else None
    out["errors"] = sum(bool(r["error"]) for r in rows)
    return out


def group_rates(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"overall": {"all": …}, "corpus": {name: …}, "lang": {…}, "kind": {…}}``; a
    grouping is left out when no question names it."""
    out: dict[str, dict[str, dict[str, Any]]] = {"overall": {"all": rates(rows)}}
    for key in GROUPS:
        names = list(dict.fromkeys(r[key] for r in rows if r[key]))
        if names:
            out[key] = {n: rates([r for r in rows if r[key] == n]) for n in names}
    return out
