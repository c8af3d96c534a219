"""The offline extractive answerer: quote the evidence sentences that best cover the question.

No model is involved, so every answer is verifiable by construction: each sentence shown is
a verbatim slice of a permitted chunk and is cited as such. Sentences are scored by the
weighted share of the question's terms they contain, where rare terms weigh more (IDF), so
the sentence that carries the specific facts wins over one that merely repeats the topic.
"""

from __future__ import annotations

from collections.abc import Sequence

from glassrag.answer.blocks import markup_only
from glassrag.answer.neighbours import sentence_after
from glassrag.answer.passages import heading_terms, units
from glassrag.answer.scoring import (
    Scored,
    coverage,
    dated_heading,
    question_terms,
    ranked,
    weights_for,
)
from glassrag.answer.value_choice import value_for
from glassrag.answer.values import (
    asks_version,
    asks_when,
    missing_value,
    seeks_literal,
    states_number,
)
from glassrag.records import ANSWERED, NO_EVIDENCE, Draft, DraftCitation, Hit
from glassrag.settings import AnswerSettings
from glassrag.text.analysis import has_cjk, unique_terms, writes_pairs
from glassrag.text.sentences import split_sentences as _split


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences the answerer quotes: :func:`glassrag.text.sentences.split_sentences`, with
    the full-width semicolon as a terminator too.

    >>> split_sentences("Refunds take 3.5 days. Ask us!\\n退票。改签；")
    [(0, 22), (23, 30), (31, 34), (34, 37)]
    """
    return _split(text, semicolons=True)


# A further sentence must add at least this share of the question's total term weight;
# below it the sentence only repeats what the first one already answered. One more of the
# question's words is often where the answer is (the list item after the one that matched
# the setting's name says that setting it "does not switch the language by itself").
MIN_ADDED_COVERAGE = 0.05
# A further sentence adding less than this share is context: it does not count as stating
# the number a how-many question asks for (an idle socket's "30 seconds" is no retry count).
ADDED_COVERAGE_TO_STATE = 0.15
# A quote past ``max_sentences`` (one of ``max_short_quotes``) is at most this long: a list
# item, a table row, a "Default: 10" line adds one more of the question's words at little
# length. On real documentation one such quote answered 11 more of 717 held-out questions
# (bm25) and 10 more (hybrid); 100 or 120 characters gained at most one more and made the
# answers longer (benchmarks/RESULTS.md, "Docs QA: a short third quote").
SHORT_QUOTE_CHARS = 80
# The note of a refusal by the short-question share alone (AnswerSettings.required_coverage):
# its best sentence reaches min_coverage. In dense and hybrid modes such a question is not
# handed to the semantic fallback, whose sentence closest in meaning to a question of a few
# words is one about those same words.
SHORT_QUESTION = "short_question"
# The note listing the quotes (their indexes) the dense gate does not measure: the short
# ones (max_short_quotes) and the sentence after the first quote (context_chars).
ASIDES = "asides"
# Candidates listed in the draft's notes (the trace); the rest only cost space.
NOTED_CANDIDATES = 10


def render(choices: list[tuple[str, str]]) -> str:
    """Render ``(source, sentence)`` pairs as ``Based on <source>: <sentences>`` lines.

    Sentences are grouped by source in the order each source was first chosen.
    """
    grouped: dict[str, list[str]] = {}
    for source, sentence in choices:
        grouped.setdefault(source, []).append(sentence)
    return "\n".join(f"Based on {source}: {' '.join(s)}" for source, s in grouped.items())


def extractive_answer(
    question: str,
    evidence: Sequence[Hit],
    settings: AnswerSettings = AnswerSettings(),  # noqa: B008 - frozen, so sharing is safe
    *,
    term_weights: dict[str, float] | None = None,
    unknown_names: Sequence[str] = (),
) -> Draft:
    """Answer ``question`` with verbatim sentences from the permitted, ranked ``evidence``.

    ``term_weights`` (e.g. IDF from the index) replaces the IDF computed over the evidence
    sentences. The draft is ``no_evidence`` when no unit covers ``min_coverage`` (more for a
    question of few terms: :meth:`~glassrag.settings.AnswerSettings.required_coverage`), or when the
    question names something no readable document mentions (``unknown_names``, from
    :attr:`~glassrag.retrieval.search.Retrieval.unknown`: its names and uncommon words):
    documents that never name Kubernetes cannot say how to deploy on it, however well they cover
    the other words.
    A ``min_coverage`` of "auto" is the lexical default; callers in dense and hybrid modes
    pass :meth:`~glassrag.settings.AnswerSettings.resolved` settings.
    """
    terms = question_terms(question)
    # A Chinese, Japanese or Korean question's terms are segments, bigrams and single
    # characters, whose count says little of how many words it asks with, and its answer is
    # often in other words ("收到货 8 天" answered by "签收后 10 天内"): none is "short". A
    # long one is counted in words, English or Chinese, never in Japanese or Korean pairs.
    threshold = settings.required_coverage(None if has_cjk(question) else len(terms),
                                           None if writes_pairs(question) else len(terms))
    if unknown_names:
        return Draft(status=NO_EVIDENCE, text="", citations=(), answerer="extractive",
                     notes={"threshold": threshold,
                            "unknown_names": list(unknown_names),
                            "reason": "the question names "
                            f"{', '.join(repr(n) for n in unknown_names)}, which no readable "
                            "document mentions"})
    candidates = units(evidence, settings.max_hits)
    weights = weights_for(terms, candidates, term_weights, question)
    notes: dict[str, object] = {
        "question_terms": terms,
        "term_weights": {t: round(w, 4) for t, w in weights.items()},
        "weights_from": "evidence" if term_weights is None else "caller",
        "threshold": threshold,
    }
    literal = seeks_literal(question)
    scored = ranked(question, terms, weights, candidates)
    best = max((s.coverage for s in scored), default=0.0)
    notes["best_coverage"] = round(best, 4)
    notes["seeks_literal"] = literal
    if not terms or not scored or best < threshold:
        reason = _no_evidence_reason(terms, bool(scored), best, threshold)
        if terms and scored and best >= settings.coverage():
            # The question's words are there, too few of them for a question this short:
            # a near miss, which no sentence closer in meaning mends (see SHORT_QUESTION).
            notes[SHORT_QUESTION] = True
            reason += f", raised for a question of {len(terms)} words"
        notes["reason"] = reason
        return Draft(status=NO_EVIDENCE, text="", citations=(), answerer="extractive", notes=notes)

    first = next(s for s in scored if s.coverage >= threshold)
    if not first.own and (first.unit.code or markup_only(first.unit.text)):
        # Every unit reaching the threshold covers it through its heading path only (they
        # sort after any unit holding a question word), and this one is code or reST markup
        # (":members:", ".. versionadded:: 2.1"): it says nothing about what was asked. A
        # prose sentence may leave its subject to the heading ("Sets the cache time.").
        notes["reason"] = ("no quote covering the question holds any of the question's words "
                           "itself, only its section heading does, and the best is markup or "
                           "code")
        return Draft(status=NO_EVIDENCE, text="", citations=(), answerer="extractive",
                     notes=notes)
    chosen = [first]
    # A table row's header words are the row's: a further row repeats "Default" only.
    covered = set(first.covered) | first.unit.context
    subject = heading_terms(first.unit.chunk)
    value = value_for(question, first, scored) if settings.max_sentences > 1 else None
    if value is not None:
        # A section title goes before the description under it, as the page reads; a value
        # line goes after the sentence it completes.
        chosen.insert(0 if value.title else 1, value)
        covered |= value.covered
    stating = list(chosen)  # the quotes that may state the quantity asked for
    for extra, states in further_quotes(terms, weights, covered, scored, chosen, subject,
                                        settings.max_sentences, settings.max_short_quotes):
        chosen.append(extra)
        covered |= extra.covered
        if states:
            stating.append(extra)
    short = {id(s) for s in chosen[settings.max_sentences:]}
    chosen, after = _with_sentence_after(first, chosen, scored, settings.context_chars)
    if after is not None and asks_when(question):
        # The date goes with what it dates, often in the sentence after the one naming it
        # ("Deprecated commands:" … "* Removed on 2027-04-01.").
        stating.append(after)
    missing = missing_value(question, [s.unit.quote for s in stating])  # with what ":" introduces
    if missing is not None:
        notes["reason"] = (f"the question asks for {missing} and no quote covering its words "
                           "states one")
        return Draft(status=NO_EVIDENCE, text="", citations=(), answerer="extractive",
                     notes=notes)
    notes["coverage"] = round(coverage(terms, covered, weights), 4)
    # Those past max_sentences, the short ones, and the sentence after the first quote: the
    # dense gate judges the answer by the others (a short line or a sentence quoted for
    # context says too little of what the answer is about for its cosine to count).
    notes[ASIDES] = [i for i, s in enumerate(chosen) if s is after or id(s) in short]
    notes["sentences"] = [
        {
            "chunk_id": s.unit.chunk.chunk_id, "sentence": s.unit.sentence_index,
            "start": s.unit.start, "end": s.unit.end, "coverage": round(s.coverage, 4),
            "preference": round(s.preference, 4), "chosen": s in chosen,
            "matched_terms": [t for t in terms if t in s.unit.terms],
        }
        for s in scored[:NOTED_CANDIDATES]
    ]
    quotes = [s.unit.quote for s in chosen]
    dated = _dated_section(question, chosen, quotes)
    return Draft(
        status=ANSWERED,
        text=render([(_label(s, s is dated), q) for s, q in zip(chosen, quotes, strict=True)]),
        citations=tuple(DraftCitation(s.unit.chunk.chunk_id, q)
                        for s, q in zip(chosen, quotes, strict=True)),
        answerer="extractive",
        notes=notes,
    )


def _with_sentence_after(first: Scored, chosen: list[Scored], scored: list[Scored],
                         budget: int) -> tuple[list[Scored], Scored | None]:
    """``chosen`` with the sentence after ``first`` placed right after it when it fits the
    answer within ``budget`` characters (:mod:`~glassrag.answer.neighbours`), and that
    sentence."""
    if budget <= 0:
        return chosen, None
    after = sentence_after(first.unit, [s.unit for s in scored], [s.unit for s in chosen],
                           budget)
    if after is None:
        return chosen, None
    added = next(s for s in scored if s.unit is after)
    at = chosen.index(first) + 1
    return [*chosen[:at], added, *chosen[at:]], added


def _dated_section(question: str, chosen: list[Scored], quotes: list[str]) -> Scored | None:
    """For a question asking which version, when no quote states a number: the first chosen
    unit whose heading path does ("Changelog › 1.6.0 (2026-10-03) › New"). A changelog gives
    the release once, in a title that may lie in another chunk; its label names it."""
    if not asks_version(question):
        return None
    asked = question.casefold()
    if any(states_number(q, asked) for q in quotes):
        return None
    return next((s for s in chosen if dated_heading(s.unit, asked)), None)


def _label(scored: Scored, with_heading: bool) -> str:
    """Where a quote is from: its source, and with ``with_heading`` its heading path."""
    chunk = scored.unit.chunk
    source = chunk.source or chunk.doc_id
    return f"{source} ({chunk.heading})" if with_heading else source


def further_quotes(terms: list[str], weights: dict[str, float], covered: set[str],
                   scored: list[Scored], chosen: list[Scored], subject: frozenset[str],
                   limit: int, short: int = 0) -> list[tuple[Scored, bool]]:
    """The quotes to add after ``chosen`` (``limit`` quotes in all, then up to ``short``
    more while the best is at most :data:`SHORT_QUOTE_CHARS` characters), best gain first:
    each covers at least :data:`MIN_ADDED_COVERAGE` more of the question's term weight than
    the quotes before it, and comes with whether it may state the value asked for (it adds
    :data:`ADDED_COVERAGE_TO_STATE` or more and is prose: the numbers of a code example
    quoted for the names it shares, ``progressbar([1, 2, 3])``, are its data)."""
    covered, taken = set(covered), list(chosen)
    added: list[tuple[Scored, bool]] = []
    while len(taken) < limit + short:
        gain, extra = _best_addition(terms, weights, covered, scored, taken, subject)
        if extra is None or gain < MIN_ADDED_COVERAGE:
            break
        if len(taken) >= limit and len(extra.unit.quote) > SHORT_QUOTE_CHARS:
            break  # past the limit, only the quote that would come next anyway, if short
        taken.append(extra)
        covered |= extra.covered
        added.append((extra, gain >= ADDED_COVERAGE_TO_STATE and not extra.unit.code))
    return added


def _best_addition(
    terms: list[str],
    weights: dict[str, float],
    covered: set[str],
    scored: list[Scored],
    chosen: list[Scored],
    subject: frozenset[str],
) -> tuple[float, Scored | None]:
    """The unit adding the most of the question's term weight to ``covered``, and that gain.
    A line of code gains nothing by the words of ``subject``, the first quote's heading
    path and title: a config line naming the tool whose page it is (``"kettle-lint": {``)
    repeats what the page is about, while a sentence may still say it as part of the answer."""
    best_gain, best = 0.0, None
    base = coverage(terms, covered, weights)
    taken = {(c.unit.chunk.chunk_id, c.unit.start) for c in chosen}
    # A quote ending in ":" runs on over the block it introduces: a line of that block is
    # already quoted.
    spans = [(c.unit.chunk.chunk_id, c.unit.start, c.unit.quote_end) for c in chosen]
    # coverage() of covered plus each candidate's terms, summed in the same order (so to
    # the same float) without building the union; a candidate adding none of the missing
    # terms gains exactly nothing and is passed over.
    weighed = [(t, max(weights.get(t, 1.0), 0.0)) for t in unique_terms(terms)]
    total = sum(w for _, w in weighed)
    missing = [t for t, _ in weighed if t not in covered]
    for candidate in scored:  # already in preference order, so ">" keeps the tie-break
        unit = candidate.unit
        adds = candidate.covered - subject if unit.code and subject else candidate.covered
        if not any(t in adds for t in missing):
            continue
        if (unit.chunk.chunk_id, unit.start) in taken or any(
                cid == unit.chunk.chunk_id and unit.start < e and s < unit.end
                for cid, s, e in spans):
            continue  # overlapping what is already quoted
        held = sum(w for t, w in weighed if t in covered or t in adds)
        gain = (held / total if total > 0.0 else 0.0) - base
        if gain > best_gain + 1e-9:
            best_gain, best = gain, candidate
    return best_gain, best


def _no_evidence_reason(terms: list[str], any_unit: bool, best: float, threshold: float) -> str:
    if not terms:
        return "the question has no searchable terms"
    if not any_unit:
        return "there is no permitted evidence to quote"
    return (
        f"the best sentence covers {best:.2f} of the question's terms; "
        f"the threshold is {threshold:.2f}"
    )
