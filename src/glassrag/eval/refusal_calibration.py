"""Calibrated refusals: which ``no_evidence`` thresholds to use, measured on your questions.

The extractive answerer refuses (``no_evidence``) on these gates:

* ``[answer] min_coverage``: the weighted share of the question's terms the best sentence
  must cover (every mode);
* ``[dense] min_score`` (dense and hybrid): the cosine a hit needs to count as evidence, and
  a sentence needs for the semantic fallback (the sentence closest in meaning is quoted when
  no sentence covers the question's words). It also cuts the dense candidates retrieval uses.
* ``[dense] min_margin`` with ``[dense] min_quote_cosine`` (dense and hybrid): a quote is
  refused when the best dense hit does not stand out from the question's dense candidates
  by ``min_margin`` and the quote's own cosine to the question is under
  ``min_quote_cosine`` (:mod:`glassrag.answer.dense_gate`); a first quote stating the
  number the question asks for, and a quote from the section titled with an identifier the
  question names, pass at any of them.

:func:`calibrate` retrieves each question once with both gates open (dense cut-off -1),
records per question the signals the gates look at
(:func:`~glassrag.eval.refusal_signals.record`: the extractive draft at each coverage
threshold, each hit's cosine and its closest sentence's cosine) and then sweeps the
thresholds offline, judging each outcome with :func:`glassrag.eval.docs.judge`. It recommends
the pair that refuses the most unanswerable questions while refusing at most
``false_refusal_rate`` of the answerable ones (ties: more correct answers, then the stricter
thresholds); with ``no_evidence_rate`` too, the pair with the most correct answers among
those reaching both. The dense gate's pair is then swept the same way at the ``min_coverage``
and ``min_score`` in use (its margin and every quote's cosine are recorded with the gate
open): exact in every dense mode, since neither changes what is retrieved.

Exact for bm25 and dense mode (in dense mode a cut-off keeps a prefix of the dense ranking).
In hybrid mode the dense cut-off also changes which candidates are fused; the sweep keeps the
fused list retrieved with the gate open, so its hybrid figures are estimates: confirm the
chosen pair with ``glassrag eval QUESTIONS --docs DIR --min-coverage T --min-score M``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from glassrag.answer.dense_gate import NO_RESCUE
from glassrag.errors import InvalidInput
from glassrag.eval.docs import EVAL_PRINCIPAL, CorpusBuild, Progress, _knowledge_bases, rates
from glassrag.eval.docs_questions import DocsQuestion
from glassrag.eval.refusal_signals import Row, Signals, record
from glassrag.records import DENSE_MODES, Principal

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

#: Coverage thresholds tried: 0, 0.025, …, 1.
COVERAGE_GRID = tuple(round(i * 0.025, 3) for i in range(41))
#: Cosine thresholds tried are the recorded cosines rounded to this step.
COSINE_STEP = 0.005
#: Margins tried are the recorded dense margins rounded to this step.
MARGIN_STEP = 0.0025
#: At most this many values of each of the dense gate's two thresholds are tried.
GATE_GRID = 60
SCORED = ("answered_correct", "cited_correct", "both_correct", "false_refusal", "no_evidence")

@dataclass
class CalibrationReport:
    mode: str
    embedder: str | None
    false_refusal_rate: float
    current: dict[str, Any]
    recommended: dict[str, Any]
    reachable: bool
    coverage_curve: list[dict[str, Any]]
    cosine_curve: list[dict[str, Any]]
    signals: list[dict[str, Any]]
    builds: list[CorpusBuild]
    exact: bool
    no_evidence_rate: float | None = None
    # The dense gate (dense and hybrid): today's pair, the recommended one, and the sweep of
    # min_quote_cosine at the recommended min_margin, each with its figures.
    gate_current: dict[str, Any] | None = None
    gate_recommended: dict[str, Any] | None = None
    gate_curve: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def lines(self) -> list[str]:
        from glassrag.eval.docs_report import calibration_lines

        return calibration_lines(self)


def calibrate(
    questions: Sequence[DocsQuestion],
    docs: Any = None,
    *,
    kb: KnowledgeBase | None = None,
    kb_path: Any = None,
    mode: str | None = None,
    embedder: str | None = None,
    top_k: int | None = None,
    principal: Principal | None = None,
    false_refusal_rate: float = 0.1,
    no_evidence_rate: float | None = None,
    progress: Progress | None = None,
) -> CalibrationReport:
    """Recommend ``min_coverage`` (and, dense/hybrid, ``min_score``, then ``min_margin`` and
    ``min_quote_cosine``) for ``questions``.

    Folders and knowledge bases are handled as :func:`glassrag.eval.docs.run_docs_eval`
    does. The answerer is the extractive one, whatever the ``[llm]`` settings say.
    """
    if not 0.0 <= false_refusal_rate <= 1.0:
        raise InvalidInput("the false-refusal rate must be between 0 and 1",
                           field="false_refusal_rate")
    if no_evidence_rate is not None and not 0.0 <= no_evidence_rate <= 1.0:
        raise InvalidInput("the no_evidence rate must be between 0 and 1",
                           field="no_evidence_rate")
    principal = principal or EVAL_PRINCIPAL
    signals: list[Signals] = []
    builds: list[CorpusBuild] = []
    now_coverage, now_cosine = 0.3, None
    used_mode, spec = mode or "bm25", embedder
    coverages: list[float] = list(COVERAGE_GRID)
    gate: Gate = None
    with _knowledge_bases(questions, docs, kb, kb_path, embedder, mode) as plan:
        for build, base, asked in plan:
            builds.append(build)
            used_mode = mode or base.settings.search.mode
            side = base.dense(embedder) if used_mode in DENSE_MODES else None
            spec = side.spec if side is not None else None
            now_coverage = base.settings.answer.coverage(used_mode, spec)
            now_cosine = base.settings.dense.min_cosine(spec) if side else None
            gate = ((base.settings.dense.margin(spec), base.settings.dense.quote_cosine(spec))
                    if side else None)
            coverages = _with(COVERAGE_GRID, now_coverage)
            for question in asked:
                signals.append(record(base, question, principal, used_mode, embedder, top_k,
                                      coverages))
                if progress is not None:
                    progress(len(signals), len(questions))
    cosines = _cosine_grid(signals, now_cosine) if spec else [None]
    table = {(t, m): score(signals, t, m, used_mode, gate) for t in coverages for m in cosines}
    chosen, reachable = choose(table, false_refusal_rate, no_evidence_rate)
    now = table[(now_coverage, now_cosine)]
    # The gate is swept at the thresholds in use: exact in every mode (a hybrid min_score
    # recommendation is an estimate, and it would move the margin's candidates too).
    gates = _gate_sweep(signals, (now_coverage, now_cosine), used_mode, gate,
                        false_refusal_rate, no_evidence_rate) if gate is not None else None
    return CalibrationReport(
        mode=used_mode, embedder=spec, false_refusal_rate=false_refusal_rate,
        current={**_thresholds(now_coverage, now_cosine), **now},
        recommended={**_thresholds(*chosen), **table[chosen]}, reachable=reachable,
        coverage_curve=[{**_thresholds(t, chosen[1]), **table[(t, chosen[1])]}
                        for t in COVERAGE_GRID],
        cosine_curve=[{**_thresholds(chosen[0], m), **table[(chosen[0], m)]}
                      for m in cosines] if spec else [],
        signals=[s.summary() for s in signals], builds=builds,
        exact=used_mode != "hybrid", no_evidence_rate=no_evidence_rate,
        **(gates or {}))


Gate = tuple[float, float] | None  # (min_margin, min_quote_cosine), in dense modes


def _gate_sweep(signals: Sequence[Signals], at: tuple[float, float | None], mode: str,
                now: tuple[float, float], false_refusal_rate: float,
                no_evidence_rate: float | None) -> dict[str, Any]:
    """The dense gate's pairs swept at the thresholds ``at``: today's, the recommended one
    (chosen as :func:`choose` chooses) and the quote-cosine curve at its margin."""
    found = (s.margin_at(at[1]) for s in signals)
    recorded = [m for m in found if m is not None]
    # Above every recorded margin: the gate then looks at the quote cosine alone.
    margins = _grid(recorded, MARGIN_STEP, {0.0, now[0], max(recorded, default=0.0)
                                            + MARGIN_STEP})
    quotes = _grid([c for s in signals for c in s.quote_cosines.values() if c is not None],
                   COSINE_STEP, {now[1], NO_RESCUE})
    drafted = [(s, _drafted(s, *at, mode)) for s in signals]  # the gate comes last
    table: dict[tuple[float, float | None], dict[str, Any]] = {
        (m, q): _rates([_gated(s, row, (m, q), at[1]) for s, row in drafted])
        for m in margins for q in quotes}
    (margin, chosen), _ = choose(table, false_refusal_rate, no_evidence_rate)
    quote = NO_RESCUE if chosen is None else chosen  # every key has a quote cosine

    def pair(m: float, q: float) -> dict[str, Any]:
        return {"min_margin": m, "min_quote_cosine": q, **table[(m, q)]}

    return {"gate_current": pair(*now), "gate_recommended": pair(margin, quote),
            "gate_curve": [pair(margin, q) for q in quotes]}


def _thresholds(coverage: float, cosine: float | None) -> dict[str, Any]:
    return {"min_coverage": coverage, "min_score": cosine}


def _with(grid: Sequence[float], value: float) -> list[float]:
    return sorted({*grid, value})


def _grid(values: Sequence[float], step: float, keep: set[float]) -> list[float]:
    """``values`` rounded to ``step``, thinned to :data:`GATE_GRID` values, with ``keep``."""
    rounded = sorted({round(round(v / step) * step, 4) for v in values})
    stride = max(len(rounded) // GATE_GRID, 1)
    return sorted({*rounded[::stride], *(round(k, 4) for k in keep)})


def outcome(s: Signals, coverage: float, cosine: float | None, mode: str,
            gate: Gate = None) -> Row:
    """The judged row the decision would produce at these thresholds, in the order of
    :func:`glassrag.pipeline.status_and_draft`: the extractive draft first, then the
    semantic fallback among close hits, then the dense gate (``(min_margin,
    min_quote_cosine)``)."""
    return _gated(s, _drafted(s, coverage, cosine, mode), gate, cosine)


def _gated(s: Signals, row: Row, gate: Gate, cut: float | None) -> Row:
    """``row`` after the dense gate (the margin measured at min_score ``cut``): refused
    when the margin and the quote are both weak."""
    margin = s.margin_at(cut) if gate is not None else None
    if gate is None or margin is None or margin >= gate[0] or row is s.refused \
            or row.get("_passes"):
        return row
    quoted = s.quote_cosines.get(id(row))
    if gate[1] < NO_RESCUE and quoted is not None and quoted >= gate[1]:
        return row
    return s.refused


def _drafted(s: Signals, coverage: float, cosine: float | None, mode: str) -> Row:
    """The judged row before the dense gate."""
    if s.error is not None or not s.hits:
        return s.refused
    keep = list(range(len(s.hits)))
    cosines = [-1.0 if d is None else d for d in s.dense]
    if mode == "dense" and cosine is not None:  # the dense search itself cuts below it
        keep = [i for i in keep if cosines[i] >= cosine]
    subset = tuple(s.hits[i] for i in keep)
    row = s.extractive.get(subset, {}).get(coverage) if subset else None
    if row is not None:
        return row
    if cosine is None or not s.semantic or (subset, coverage) in s.near_misses:
        return s.refused
    close = [i for i in keep if cosines[i] >= cosine]
    if not close:
        return s.refused
    best = max(close, key=lambda i: (round(s.semantic[i][0], 6), -i))
    similarity, answered = s.semantic[best]
    return answered if similarity >= cosine and answered else s.refused


def score(signals: Sequence[Signals], coverage: float, cosine: float | None,
          mode: str, gate: Gate = None) -> dict[str, Any]:
    """The rates all questions would get at these thresholds."""
    return _rates([outcome(s, coverage, cosine, mode, gate) for s in signals])


def _rates(rows: Sequence[Row]) -> dict[str, Any]:
    figures = rates(rows)
    return {key: figures[key] for key in SCORED}


def choose(table: Mapping[tuple[float, float | None], Mapping[str, Any]],
           target: float, no_evidence: float | None = None,
           ) -> tuple[tuple[float, float | None], bool]:
    """The thresholds refusing the most unanswerable questions within the false-refusal
    target (ties: more correct answers, then stricter thresholds); when no pair meets the
    target, the pair with the fewest false refusals. With a ``no_evidence`` target too, the
    pair with the most correct answers among those meeting both (ties: more refusals of
    unanswerable questions, then stricter), if any does. Returns the pair and whether the
    false-refusal target was met."""
    def rate(key: tuple[float, float | None], name: str) -> float:
        value = table[key][name]
        return -1.0 if value is None else float(value)

    within = [k for k in table if rate(k, "false_refusal") <= target + 1e-9]
    reachable = bool(within)
    pool = within or list(table)
    both = [k for k in within if no_evidence is not None
            and rate(k, "no_evidence") >= no_evidence - 1e-9]
    if both:
        return max(both, key=lambda k: (rate(k, "answered_correct"), rate(k, "no_evidence"),
                                        k[0], k[1] if k[1] is not None else 0.0)), True

    def preference(key: tuple[float, float | None]) -> tuple[float, ...]:
        strict = (key[0], key[1] if key[1] is not None else 0.0)
        if not reachable:
            return (-rate(key, "false_refusal"), rate(key, "answered_correct"), *strict)
        return (rate(key, "no_evidence"), rate(key, "answered_correct"), *strict)

    return max(pool, key=preference), reachable


def _cosine_grid(signals: Sequence[Signals], current: float | None) -> list[float | None]:
    values: set[float | None] = {round(round(v / COSINE_STEP) * COSINE_STEP, 3)
              for s in signals for v in [*(d for d in s.dense if d is not None),
                                         *(sim for sim, _ in s.semantic)]}
    if current is not None:
        values.add(current)
    return sorted(values, key=lambda v: -2.0 if v is None else v) or [current]
