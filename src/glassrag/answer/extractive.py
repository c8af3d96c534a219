"""The offline extractive answerer: quote the evidence sentences that best cover the question.

No model is involved, so every answer is verifiable by construction: each sentence shown is
a verbatim slice of a permitted chunk and is cited as such. Sentences are scored by the
weighted share of the question's terms they contain, where rare terms weigh more (IDF), so
the sentence that carries the specific facts wins over one that merely repeats the topic.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from glassrag.answer.passages import (
    Unit,
    asks_default,
    heading_terms,
    introduced_end,
    of_kind,
    seeks_literal,
    states_default,
    term_pairs,
    title_unit,
    units,
    value_kind,
    written_short_or_long,
)
from glassrag.records import ANSWERED, NO_EVIDENCE, Draft, DraftCitation, Hit
from glassrag.settings import AnswerSettings
from glassrag.text.analysis import analyze, is_particle, is_question_word, unique_terms
from glassrag.text.sentences import split_sentences as _split


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences the answerer quotes: :func:`glassrag.text.sentences.split_sentences`, with
    the full-width semicolon as a terminator too.

    >>> split_sentences("Refunds take 3.5 days. Ask us!\\n退票。改签；")
    [(0, 22), (23, 30), (31, 34), (34, 37)]
    """
    return _split(text, semicolons=True)

# A further sentence must add at least this share of the question's total term weight;
# below it the sentence only repeats what the first one already answered.
MIN_ADDED_COVERAGE = 0.15
# A question term found only in a unit's heading path or document title counts this much of
# its weight: the section says what the sentence is about, the sentence says what is true.
HEADING_CREDIT = 1.0
CONTEXT_CREDIT = 0.0
# Preference (not coverage) adjustments, so that among units covering the question alike the
# one shaped like an answer is quoted: a literal value when the question asks for one, prose
# over a line of code, a hit retrieval scored near the best one, one sentence over two.
LITERAL_BONUS = 0.1
# Added for a unit stating a default when the question asks for one, on top of the literal
# bonus: "Default: `64 * 1024`" is the answer's shape, a tutorial's "less than 64 KiB" with
# more of the question's words is not. 0.2 and 0.3 scored alike, 0.15 gained less
# (benchmarks/RESULTS.md).
DEFAULT_BONUS = 0.2
CODE_FACTOR = 0.8
# Times (1 - the hit's score over the best hit's): retrieval is the better judge of which
# passage is about the question, sentence coverage of which sentence in it answers.
STANDING_WEIGHT = 1.0
PAIR_PENALTY = 0.02
# Times the share of the question's adjacent term pairs that the unit holds adjacent: word
# order tells the sentence that says what was asked ("testing for the current directory and
# below") from one that only uses the same words. 0.1 gained answers on the docs QA sets and
# on xquad-en; 0.2 cost a refusal (benchmarks/RESULTS.md).
PHRASE_WEIGHT = 0.1
# Candidates listed in the draft's notes (the trace); the rest only cost space.
NOTED_CANDIDATES = 10

# Letters joined by periods ("e.g.", "i.e.", "a.m."): an abbreviation, not a word of the
# question. Left in, "e", "g" and "e.g" would weigh as its rarest terms, since no answer
# holds them.
_LETTER_ABBREVIATION = re.compile(r"(?<![\w.])(?:[A-Za-z]\.){2,}(?![\w.])")


@functools.lru_cache(maxsize=64)
def _question_tokens(question: str) -> tuple[str, ...]:
    """The question analysed, without letter abbreviations such as "e.g.", in order: its
    terms and its word pairs come from this one analysis."""
    return tuple(analyze(_LETTER_ABBREVIATION.sub(" ", question)))


def question_terms(question: str) -> list[str]:
    """The question's distinct terms the answerer weighs: its analysed terms without the
    Japanese particle bigrams (:func:`~glassrag.text.analysis.is_particle`) and the Chinese
    question words (:func:`~glassrag.text.analysis.is_question_word`), unless that would
    leave none, and without letter abbreviations such as "e.g."."""
    terms = unique_terms(list(_question_tokens(question)))
    return [t for t in terms if not is_particle(t) and not is_question_word(t)] or terms


def coverage(
    question_terms: list[str], sentence_terms: set[str], weights: dict[str, float]
) -> float:
    """Weighted share of ``question_terms`` found in ``sentence_terms`` (0.0 to 1.0).

    A term missing from ``weights`` weighs 1.0; negative weights count as 0.
    """
    terms = unique_terms(question_terms)
    total = sum(max(weights.get(t, 1.0), 0.0) for t in terms)
    if total <= 0.0:
        return 0.0
    return sum(max(weights.get(t, 1.0), 0.0) for t in terms if t in sentence_terms) / total


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
    sentences. The draft is ``no_evidence`` when no unit covers ``min_coverage``, or when
    the question names something no readable document mentions (``unknown_names``, from
    :attr:`~glassrag.retrieval.search.Retrieval.unknown_names`): documents that never name
    Kubernetes cannot say how to deploy on it, however well they cover the other words.
    A ``min_coverage`` of "auto" is the lexical default; callers in dense and hybrid modes
    pass :meth:`~glassrag.settings.AnswerSettings.resolved` settings.
    """
    threshold = settings.coverage()
    if unknown_names:
        return Draft(status=NO_EVIDENCE, text="", citations=(), answerer="extractive",
                     notes={"threshold": threshold,
                            "unknown_names": list(unknown_names),
                            "reason": "the question names "
                            f"{', '.join(repr(n) for n in unknown_names)}, which no readable "
                            "document mentions"})
    terms = question_terms(question)
    candidates = units(evidence, settings.max_hits)
    weights = _weights(terms, candidates, term_weights)
    notes: dict[str, object] = {
        "question_terms": terms,
        "term_weights": {t: round(w, 4) for t, w in weights.items()},
        "weights_from": "evidence" if term_weights is None else "caller",
        "threshold": threshold,
    }
    literal = seeks_literal(question)
    scored = _ranked(question, terms, weights, candidates)
    best = max((s.coverage for s in scored), default=0.0)
    notes["best_coverage"] = round(best, 4)
    notes["seeks_literal"] = literal
    if not terms or not scored or best < threshold:
        notes["reason"] = _no_evidence_reason(terms, bool(scored), best, threshold)
        return Draft(status=NO_EVIDENCE, text="", citations=(), answerer="extractive", notes=notes)

    first = next(s for s in scored if s.coverage >= threshold)
    chosen = [first]
    covered = set(first.covered)
    value = _value_for(question, first, scored) if settings.max_sentences > 1 else None
    if value is not None:
        # A section title goes before the description under it, as the page reads; a value
        # line goes after the sentence it completes.
        chosen.insert(0 if value.title else 1, value)
        covered |= value.covered
    while len(chosen) < settings.max_sentences:
        gain, extra = _best_addition(terms, weights, covered, scored, chosen)
        if extra is None or gain < MIN_ADDED_COVERAGE:
            break
        chosen.append(extra)
        covered |= extra.covered
    notes["coverage"] = round(coverage(terms, covered, weights), 4)
    notes["sentences"] = [
        {
            "chunk_id": s.unit.chunk.chunk_id, "sentence": s.unit.sentence_index,
            "start": s.unit.start, "end": s.unit.end, "coverage": round(s.coverage, 4),
            "preference": round(s.preference, 4), "chosen": s in chosen,
            "matched_terms": [t for t in terms if t in s.unit.terms],
        }
        for s in scored[:NOTED_CANDIDATES]
    ]
    quotes = [_quote(s.unit) for s in chosen]
    return Draft(
        status=ANSWERED,
        text=render([(s.unit.chunk.source or s.unit.chunk.doc_id, q)
                     for s, q in zip(chosen, quotes, strict=True)]),
        citations=tuple(DraftCitation(s.unit.chunk.chunk_id, q)
                        for s, q in zip(chosen, quotes, strict=True)),
        answerer="extractive",
        notes=notes,
    )


def _ranked(question: str, terms: list[str], weights: dict[str, float],
            candidates: Sequence[Unit]) -> list[_Scored]:
    """The candidates scored (:func:`_scored`), in preference order."""
    valued = seeks_literal(question)
    asked = question.casefold()
    # Asked for the default, a value stated as the default is the answer's shape more than
    # any other: "less than 64 KiB" in a tutorial is not the option's "Default: `64 * 1024`".
    default = valued and asks_default(question)
    contexts = _contexts(candidates)
    pairs = term_pairs(_question_tokens(question))
    return sorted(
        (_scored(terms, weights, c, *contexts[c.chunk.chunk_id],
                 valued and _new_literal(c, asked),
                 default and states_default(c.chunk.text[c.start:c.end]), pairs)
         for c in candidates),
        # A unit holding none of the question's words itself (its heading path does) comes
        # after every unit that holds some: in a section titled with the question's words, a
        # bare ".. versionadded:: 3.22" line covers the question as well as the sentence
        # that answers it. Equal preference goes to the better-ranked hit, then the earlier
        # sentence, then the shorter unit; rounding keeps float noise from overriding that.
        key=lambda s: (not s.own, -round(s.preference, 9), s.unit.hit_index,
                       s.unit.sentence_index, s.unit.size),
    )


def _value_for(question: str, first: _Scored, scored: list[_Scored]) -> _Scored | None:
    """The unit to quote beside ``first`` because it holds the value the question asks for
    and ``first`` lacks (:func:`_value_in_section`), or None."""
    if not seeks_literal(question):
        return None
    asked = question.casefold()
    kind = value_kind(question)
    # A question about the default is not answered by a sentence that gives some other value
    # (an option reference's description beside its "Default: `4096`" line).
    default = asks_default(question) and not states_default(first.unit.text)
    if default or not _new_literal(first.unit, asked, kind):
        titled = None if default or kind == "number" else _titled_name(first, asked, scored)
        return titled or _value_in_section(first, scored, asked, kind, default)
    return None


def _titled_name(first: _Scored, asked: str, scored: list[_Scored]) -> _Scored | None:
    """The heading line above ``first`` when it is the only name in sight: a question asking
    which command, option or call does something, answered by the description under a
    section titled with that name (:func:`~glassrag.answer.passages.title_unit`). When the
    section's own title names nothing ("Normal Executables"), the page's title line may: a
    reference page names what it documents once, at its top, which is then in the page's
    opening chunk among the evidence rather than in the chunk quoted."""
    title = title_unit(first.unit)
    if title is not None and _new_literal(title, asked, "name"):
        return _Scored(title, first.coverage, first.preference, title.terms, 0.0, title=True)
    page = first.unit.chunk
    for candidate in scored:
        chunk = candidate.unit.chunk
        if chunk.doc_id != page.doc_id or chunk.chunk_id == page.chunk_id:
            continue
        title = title_unit(candidate.unit)
        if (title is not None and _quote(title).strip().casefold() == page.title.casefold()
                and _new_literal(title, asked, "name")):
            return _Scored(title, first.coverage, first.preference, title.terms, 0.0,
                           title=True)
    return None


@dataclass(frozen=True)
class _Scored:
    unit: Unit
    coverage: float  # the refusal gate looks at this
    preference: float  # the choice among units: coverage and the shape of an answer
    covered: frozenset[str]
    own: float  # the share of the question's term weight in the unit itself
    title: bool = False  # the heading line of a section (:func:`_titled_name`)


def _contexts(candidates: Sequence[Unit]) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per chunk: the terms of its heading path and title, and of all its sentences."""
    out: dict[str, tuple[frozenset[str], set[str]]] = {}
    for unit in candidates:
        if unit.chunk.chunk_id not in out:
            out[unit.chunk.chunk_id] = (heading_terms(unit.chunk), set())
        out[unit.chunk.chunk_id][1].update(unit.terms)
    return {k: (h, frozenset(t)) for k, (h, t) in out.items()}


def _scored(terms: list[str], weights: dict[str, float], unit: Unit,
            heading: frozenset[str], context: frozenset[str], valued: bool,
            stated_default: bool = False,
            pairs: frozenset[tuple[str, str]] = frozenset()) -> _Scored:
    """Coverage counts a question term found only in the unit's heading path or title at
    :data:`HEADING_CREDIT`: the section a sentence sits in says what it is about. The
    preference adds the shape of an answer: a literal value when the question asks for one,
    prose over code, a hit scored near the best one, the question's words in its order."""
    total = sum(weights[t] for t in terms) or 1.0
    held = frozenset(t for t in terms if t in unit.terms) | written_short_or_long(terms,
                                                                                  unit.terms)
    found = sum(weights[t] for t in held)
    titled = sum(weights[t] for t in terms if t not in held and t in heading)
    near = sum(weights[t] for t in terms if t not in held and t not in heading and t in context)
    share = (found + HEADING_CREDIT * titled + CONTEXT_CREDIT * near) / total
    if not _shares_words(terms, held, heading, unit.terms, min(2, len(terms))):
        # One shared word is no evidence for a question of several ("the capital of
        # France" against a page that happens to say "France").
        share = 0.0
    preference = share * (CODE_FACTOR if unit.code else 1.0)
    if valued:
        preference += LITERAL_BONUS
    if stated_default:
        preference += DEFAULT_BONUS
    preference -= STANDING_WEIGHT * (1.0 - unit.standing) + PAIR_PENALTY * (unit.size - 1)
    if pairs:
        preference += PHRASE_WEIGHT * len(pairs & unit.pairs) / len(pairs)
    return _Scored(unit, share, preference, unit.terms | held, found / total)


def _shares_words(terms: list[str], held: frozenset[str], heading: frozenset[str],
                  words: frozenset[str], needed: int) -> bool:
    """Whether at least ``needed`` of the question's terms are held, in the heading, or share
    a character with a CJK word of the unit (:func:`_shares_a_character`)."""
    count = 0
    for term in terms:
        if term in held or term in heading or _shares_a_character(term, words):
            count += 1
            if count >= needed:
                return True
    return count >= needed


def _shares_a_character(term: str, words: frozenset[str]) -> bool:
    """Whether a Chinese or Japanese term shares a character with one of ``words``. Word
    segmentation cuts a question apart from the text ("查物流" gives "查", the text says
    "查看"), and words built on one character are usually about one thing ("核查", "核对":
    to check), so for the one-shared-word rule below such a term is not a missing word."""
    if term.isascii():
        return False
    return any(ch in word for word in words if not word.isascii() for ch in term)


def _new_literal(unit: Unit, asked: str, kind: str = "any") -> bool:
    """Whether the unit holds a literal value of ``kind`` the question does not already name."""
    return any(value not in asked for value in of_kind(unit.literals, kind))


def _value_in_section(first: _Scored, scored: list[_Scored], asked: str,
                      kind: str = "any", default: bool = False) -> _Scored | None:
    """For a question asking for a value whose best unit states none of the ``kind`` asked
    for (:func:`~glassrag.answer.passages.value_kind`): the preferred unit of the same chunk
    (section) that holds one, e.g. the "Default: 500" line of an option whose description
    answered the question's words, or the sentence naming the setting after the one that
    describes the problem in the question's words (and its numbers). With ``default`` (the
    question asks for the default, the best unit states none) the unit must state one
    (:func:`~glassrag.answer.passages.states_default`)."""
    for candidate in scored:
        unit = candidate.unit
        # A line stating the default needs none of the question's words: "- **Default:** `x`"
        # under the option's heading answers "what if I set nothing" in its own words.
        if (unit.chunk.chunk_id == first.unit.chunk.chunk_id and _new_literal(unit, asked, kind)
                and (candidate.own > 0.0 or default) and (not default or states_default(unit.text))
                and (unit.end <= first.unit.start or unit.start >= first.unit.end)):
            return candidate
    return None


def _quote(unit: Unit) -> str:
    """The unit's text, with the code block or list it introduces when it ends in ":"."""
    return unit.chunk.text[unit.start : introduced_end(unit.chunk.text, unit.end)]


def _weights(
    terms: list[str], candidates: Sequence[Unit], given: dict[str, float] | None
) -> dict[str, float]:
    if given is not None:
        known = {t: max(float(given[t]), 0.0) for t in terms if t in given}
    else:
        candidates = [c for c in candidates if c.size == 1]  # each sentence counted once
        n = len(candidates)
        known = {}
        for term in terms:
            df = sum(term in c.terms for c in candidates)
            if df:  # BM25's IDF: always positive, so a term in every sentence still counts
                known[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    # A term without a weight (absent from the evidence or the caller's table) counts like
    # the rarest known term: a handful of sentences says little about how rare it really
    # is, and leftover filler words ("many") must not sink an otherwise complete answer.
    fallback = max(known.values(), default=0.0) or 1.0
    return {t: known.get(t, fallback) for t in terms}


def _best_addition(
    terms: list[str],
    weights: dict[str, float],
    covered: set[str],
    scored: list[_Scored],
    chosen: list[_Scored],
) -> tuple[float, _Scored | None]:
    best_gain, best = 0.0, None
    base = coverage(terms, covered, weights)
    taken = {(c.unit.chunk.chunk_id, c.unit.start) for c in chosen}
    spans = [(c.unit.chunk.chunk_id, c.unit.start, c.unit.end) for c in chosen]
    for candidate in scored:  # already in preference order, so ">" keeps the tie-break
        unit = candidate.unit
        if (unit.chunk.chunk_id, unit.start) in taken or any(
                cid == unit.chunk.chunk_id and unit.start < e and s < unit.end
                for cid, s, e in spans):
            continue  # overlapping what is already quoted
        gain = coverage(terms, covered | candidate.covered, weights) - base
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


def semantic_answer(question: str, evidence: Sequence[Hit], embedder: Any, min_score: float,
                    settings: AnswerSettings = AnswerSettings(),  # noqa: B008 - frozen
                    ) -> Draft:
    """Quote the evidence sentence closest in meaning to ``question`` (cosine, same embedder
    as the dense index), for paraphrases that share no words with the answer, with the block
    it introduces and, when it lacks the value the question asks for, the unit of its section
    that holds it (as :func:`extractive_answer` does).

    Still verbatim and cited; ``no_evidence`` when no sentence reaches ``min_score``.
    """
    quotable = units(evidence, settings.max_hits)
    candidates = [u for u in quotable if u.size == 1]
    notes: dict[str, object] = {"method": "semantic", "threshold": min_score}
    if not candidates:
        return Draft(status=NO_EVIDENCE, text="", answerer="extractive", notes=notes)
    # The question is a query and the sentences are passage text: asymmetric models (E5)
    # embed the two sides differently.
    question_vector = embedder.embed_queries([question])[0]
    scores = embedder.embed([c.text for c in candidates]) @ question_vector
    order = sorted(range(len(candidates)),
                   key=lambda i: (-round(float(scores[i]), 6), candidates[i].hit_index))
    best = candidates[order[0]]
    notes["best_similarity"] = round(float(scores[order[0]]), 4)
    if float(scores[order[0]]) < min_score:
        notes["reason"] = "no sentence is close enough in meaning to the question"
        return Draft(status=NO_EVIDENCE, text="", answerer="extractive", notes=notes)
    chosen = [best]
    if settings.max_sentences > 1:
        value = _semantic_value(question, best, quotable)
        if value is not None:
            chosen.append(value)
    quotes = [_quote(u) for u in chosen]
    return Draft(
        status=ANSWERED,
        text=render([(u.chunk.source or u.chunk.doc_id, q)
                     for u, q in zip(chosen, quotes, strict=True)]),
        citations=tuple(DraftCitation(u.chunk.chunk_id, q)
                        for u, q in zip(chosen, quotes, strict=True)),
        answerer="extractive", notes=notes,
    )


def _semantic_value(question: str, best: Unit, candidates: Sequence[Unit]) -> Unit | None:
    """Beside the sentence closest in meaning, the unit of its section holding the value the
    question asks for, chosen as the lexical answerer chooses it (:func:`_value_for`)."""
    section = [u for u in candidates if u.chunk.chunk_id == best.chunk.chunk_id]
    terms = question_terms(question)
    scored = _ranked(question, terms, _weights(terms, section, None), section)
    first = next((s for s in scored if s.unit.start == best.start and s.unit.size == 1), None)
    value = _value_for(question, first, scored) if first is not None else None
    return value.unit if value is not None else None
