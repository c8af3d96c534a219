"""How the extractive answerer scores a quotable unit against the question.

Coverage is the weighted share of the question's terms a unit holds (rare terms weigh more,
by IDF over the evidence), counting its heading path's terms too: the refusal gate reads it.
Preference is coverage plus the shape of an answer (a literal value when one is asked for,
a stated default, prose over code, a hit that retrieval ranked near the best one, the
question's words in its order): the choice among units reads it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from glassrag.answer.passages import Unit, heading_terms, term_pairs, title_unit
from glassrag.answer.structure import line_contexts, line_starts
from glassrag.answer.values import (
    DEFAULT_SAYINGS,
    asks_default,
    asks_version,
    asks_yes_no,
    names_default,
    of_kind,
    seeks_literal,
    states_default,
    states_number,
    unset_phrases,
    value_kind,
)
from glassrag.text.analysis import (
    analyze,
    has_han,
    is_filler,
    is_particle,
    is_question_word,
    katakana_shares,
    unique_terms,
)

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
# A unit opening with a word pointing back at the sentence before it ("This tool runs the
# updates daily."), which a pair unit quotes with it: more than PAIR_PENALTY, so the pair
# naming the subject goes first when both cover the question alike.
LEANING_PENALTY = 0.05
# ... except, for a yes/no question, two sentences within this many characters, which go
# before either alone: the verdict is often the short sentence beside the one holding the
# question's words ("No, the category feature is optional. Each IO class decides.").
SHORT_PAIR_CHARS = 120
SHORT_PAIR_BONUS = 0.01
# Times the share of the question's adjacent term pairs that the unit holds adjacent: word
# order tells the sentence that says what was asked ("testing for the current directory and
# below") from one that only uses the same words. 0.1 gained answers on the docs QA sets and
# on xquad-en; 0.2 cost a refusal (benchmarks/RESULTS.md).
PHRASE_WEIGHT = 0.1
# Times the weight of a Chinese character the segmenter leaves alone (用, 设, 到, 开): mostly
# a verb or a particle the question speaks in, where documentation writes the two-character
# word (使用, 设置), so an answer seldom shares it. A quarter gained held-out answers and
# refused no fewer unanswerable questions; left out altogether it refused fewer
# (benchmarks/RESULTS.md, "Docs QA: question words no answer holds…").
LONE_HAN_WEIGHT = 0.25


# The terms of the words for "default" (values.DEFAULT_SAYINGS): a unit saying one covers a
# question asking with another.
DEFAULT_WORDS = frozenset(analyze(" ".join(DEFAULT_SAYINGS)))


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
    Japanese particle bigrams (:func:`~glassrag.text.analysis.is_particle`), the Chinese
    question words (:func:`~glassrag.text.analysis.is_question_word`) and the English filler
    words (:func:`~glassrag.text.analysis.is_filler`), unless that would leave none, and
    without letter abbreviations such as "e.g."."""
    terms = unique_terms(list(_question_tokens(question)))
    return [t for t in terms
            if not is_particle(t) and not is_question_word(t) and not is_filler(t)] or terms


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


@dataclass(frozen=True)
class Scored:
    """A unit as scored against the question (:func:`ranked`)."""

    unit: Unit
    coverage: float  # the refusal gate looks at this
    preference: float  # the choice among units: coverage and the shape of an answer
    covered: frozenset[str]
    own: float  # the share of the question's term weight in the unit itself
    title: bool = False  # a section's heading line (value_choice.value_for)


def _contexts(candidates: Sequence[Unit]) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per chunk: the terms of its heading path and title, and of all its sentences (only
    gathered while :data:`CONTEXT_CREDIT` counts them)."""
    out: dict[str, tuple[frozenset[str], set[str]]] = {}
    for unit in candidates:
        if unit.chunk.chunk_id not in out:
            out[unit.chunk.chunk_id] = (heading_terms(unit.chunk), set())
        if CONTEXT_CREDIT:
            out[unit.chunk.chunk_id][1].update(unit.terms)
    return {k: (h, frozenset(t)) for k, (h, t) in out.items()}


@dataclass(frozen=True)
class _Asked:
    """What scoring reads of the question, worked out once for all the candidates."""

    terms: list[str]
    weights: dict[str, float]
    total: float  # the question's whole term weight
    latin: list[str]  # the terms a unit may write short or long (written_short_or_long)
    alike: frozenset[str]  # the candidates' Latin words that start as one of latin does
    needed: int  # question terms a unit must share (_shares_words)
    pairs: frozenset[tuple[str, str]]
    yes_no: bool = False  # asks_yes_no: a short pair goes before its sentences alone
    default_words: frozenset[str] = frozenset()  # the question's terms that say "default"

    @classmethod
    def of(cls, terms: list[str], weights: dict[str, float], pairs: frozenset[tuple[str, str]],
           candidates: Sequence[Unit], yes_no: bool = False,
           default_words: frozenset[str] = frozenset()) -> _Asked:
        latin = [t for t in terms if len(t) >= 5 and t.isascii() and t.isalpha()]
        starts = {t[:5] for t in latin}
        alike = frozenset(w for w in set().union(*(c.terms for c in candidates))
                          if w[:5] in starts and len(w) >= 5 and w.isascii() and w.isalpha()
                          ) if starts else frozenset()
        return cls(terms, weights, sum(weights[t] for t in terms) or 1.0, latin, alike,
                   min(2, len(terms)), pairs, yes_no, default_words)

    def short_or_long(self, words: frozenset[str]) -> frozenset[str]:
        """:func:`~glassrag.text.vocabulary.written_short_or_long` of the question's terms in
        a candidate's ``words``. A word written short or long starts as the term does, so
        only the unit's words among :attr:`alike` are read: the same terms, without going
        through every word of every unit."""
        wanted = [t for t in self.latin if t not in words]
        long = self.alike & words if wanted and self.alike else None
        if not long:
            return frozenset()
        return frozenset(t for t in wanted if any(w.startswith(t) or t.startswith(w)
                                                  for w in long))


def _scored(asked: _Asked, unit: Unit, heading: frozenset[str], context: frozenset[str],
            valued: bool, stated_default: bool = False) -> Scored:
    """Coverage counts a question term found only in the unit's heading path or title at
    :data:`HEADING_CREDIT`: the section a sentence sits in says what it is about. The
    preference adds the shape of an answer: a literal value when the question asks for one,
    prose over code, a hit scored near the best one, the question's words in its order."""
    terms, weights, words = asked.terms, asked.weights, unit.terms
    if unit.context:  # a table row's header, the name its directive documents
        heading = heading | unit.context
    extra = asked.short_or_long(words)
    if asked.default_words and not asked.default_words <= words and names_default_of(unit):
        # "既定では" or "without setting it" asked, "デフォルトでは" written: one word in
        # other words.
        extra = extra | asked.default_words
    held = frozenset(t for t in terms if t in words) | extra
    found = sum(weights[t] for t in held)
    titled = sum(weights[t] for t in terms if t not in held and t in heading)
    near = sum(weights[t] for t in terms if t not in held and t not in heading
               and t in context) if CONTEXT_CREDIT else 0.0
    share = (found + HEADING_CREDIT * titled + CONTEXT_CREDIT * near) / asked.total
    if not _shares_words(terms, held, heading, words, asked.needed):
        # One shared word is no evidence for a question of several ("the capital of
        # France" against a page that happens to say "France").
        share = 0.0
    preference = share * (CODE_FACTOR if unit.code else 1.0)
    if valued:
        preference += LITERAL_BONUS
    if stated_default:
        preference += DEFAULT_BONUS
    pair_cost = PAIR_PENALTY
    if asked.yes_no and unit.size == 2 and unit.end - unit.start <= SHORT_PAIR_CHARS:
        pair_cost = -SHORT_PAIR_BONUS
    preference -= STANDING_WEIGHT * (1.0 - unit.standing) + pair_cost * (unit.size - 1)
    if asked.pairs:
        preference += PHRASE_WEIGHT * len(asked.pairs & unit.pairs) / len(asked.pairs)
    if unit.leans_back:
        preference -= LEANING_PENALTY
    # Covered: the unit's terms and the question's terms it writes short or long; a new set
    # only when there are such.
    return Scored(unit, share, preference, words | extra if extra else words,
                  found / asked.total)


def _shares_words(terms: list[str], held: frozenset[str], heading: frozenset[str],
                  words: frozenset[str], needed: int) -> bool:
    """Whether at least ``needed`` of the question's terms are held, in the heading, or are
    Chinese or Japanese terms sharing a character with a CJK word of the unit. Word
    segmentation cuts a question apart from the text ("查物流" gives "查", the text says
    "查看"), and words built on one character are usually about one thing ("核查", "核对":
    to check), so for the one-shared-word rule such a term is not a missing word."""
    count = 0
    cjk: str | None = None  # the unit's non-ASCII words run together, made when first needed
    for term in terms:
        if term not in held and term not in heading:
            if term.isascii():
                continue
            if cjk is None:
                cjk = "".join(word for word in words if not word.isascii())
            if not any(ch in cjk for ch in term):
                continue
        count += 1
        if count >= needed:
            return True
    return count >= needed


@functools.lru_cache(maxsize=256)
def _default_rows(text: str) -> frozenset[int]:
    """Where the table rows of ``text`` start whose header names a column of defaults
    ("| Option | Default |", "|属性|说明|默认值|"): each such row states its option's default
    in that column, whether or not its own words say "default"."""
    if "|" not in text:
        return frozenset()
    starts = line_starts(text)
    return frozenset(starts[line] for line, found in line_contexts(text).items()
                     if found.name is None
                     and any(names_default(text[a:b]) for a, b in found.about))


def _in_default_column(unit: Unit) -> bool:
    """Whether ``unit`` is a row of a table whose header names a column of defaults."""
    text = unit.chunk.text
    return bool(unit.context) and text.rfind("\n", 0, unit.start) + 1 in _default_rows(text)


def names_default_of(unit: Unit) -> bool:
    """Whether ``unit`` says "default" in any of its words (default, 默认, デフォルト, 既定),
    or is a row of a table whose header names a column of defaults."""
    return names_default(unit.chunk.text[unit.start : unit.end]) or _in_default_column(unit)


def states_default_of(unit: Unit) -> bool:
    """Whether ``unit`` states a default: in its words (:func:`~glassrag.answer.values.
    states_default`), or as a row of a table whose header names a column of defaults."""
    return states_default(unit.chunk.text[unit.start : unit.end]) or _in_default_column(unit)


def ranked(question: str, terms: list[str], weights: dict[str, float],
            candidates: Sequence[Unit]) -> list[Scored]:
    """The candidates scored (:func:`_scored`), in preference order. A question asking
    what, which or how is not answered by a unit that only repeats its words
    (:func:`echoes`)."""
    valued = seeks_literal(question)
    # The literal of the kind asked for: a number for how many or which version, a name for
    # how to (a version question's answer is "3.10", not the `pip install` line beside it).
    kind = value_kind(question)
    asked = question.casefold()
    tokens = _question_tokens(question)
    if valued and not asks_yes_no(question):
        words, version = frozenset(tokens), asks_version(question)
        candidates = [c for c in candidates if not echoes(c, words, asked, version)]
    # Asked for the default, a value stated as the default is the answer's shape more than
    # any other: "less than 64 KiB" in a tutorial is not the option's "Default: `64 * 1024`".
    default = valued and asks_default(question)
    contexts = _contexts(candidates)
    question_asked = _Asked.of(terms, weights, term_pairs(tokens),
                               candidates, asks_yes_no(question),
                               _default_words(question, terms))
    scored = []
    for c in candidates:
        holds = valued and new_literal(c, asked, kind)
        # Asked how long or how many by default, a default with no number ("autoplay is on by
        # default") is not the answer's shape, however plainly it says "default".
        stated = default and states_default_of(c) and (holds or kind != "number")
        scored.append(_scored(question_asked, c, *contexts[c.chunk.chunk_id], holds, stated))
    return sorted(
        scored,
        # A unit holding none of the question's words itself (its heading path does) comes
        # after every unit that holds some: in a section titled with the question's words, a
        # bare ".. versionadded:: 3.22" line covers the question as well as the sentence
        # that answers it. Equal preference goes to the better-ranked hit, then the earlier
        # sentence, then the shorter unit; rounding keeps float noise from overriding that.
        key=lambda s: (not s.own, -round(s.preference, 9), s.unit.hit_index,
                       s.unit.sentence_index, s.unit.size),
    )


def _default_words(question: str, terms: list[str]) -> frozenset[str]:
    """The question's terms that ask for the default: the word "default" in any language
    (:data:`DEFAULT_WORDS`) and the words of "without setting", "unless told otherwise" or
    不手动指定 (:func:`~glassrag.answer.values.unset_phrases`). A unit naming a default covers
    them; left as plain terms, "without" and "set" weigh as the question's rarest, since
    documentation seldom writes them."""
    words = DEFAULT_WORDS.intersection(terms) if names_default(question) else frozenset()
    phrases = unset_phrases(question)
    if phrases:
        words = words | frozenset(analyze(phrases)).intersection(terms)
    return words


def echoes(unit: Unit, words: frozenset[str], asked: str, version: bool = False) -> bool:
    """Whether ``unit`` says nothing the question does not: each of its terms is one of the
    question's ``words`` and it holds no literal value the question (``asked``, casefolded)
    lacks, nor does the title of its section (:func:`~glassrag.answer.passages.title_unit`).
    A list item "- pyproject.toml" tells no one which table to write in pyproject.toml; the
    description "Empties the cache." under the title ``flush_cache`` tells which command
    does, and, to a question asking which version (``version``), so does an entry under a
    heading path holding a number ("Changelog › 1.6.0"). (A yes/no question may be answered
    in its own words, and is not asked this.)"""
    if not unit.terms or not unit.terms <= words or new_literal(unit, asked):
        return False
    if version and dated_heading(unit, asked):
        return False  # a changelog entry under "1.6.0" says which release added what it names
    title = title_unit(unit)
    return title is None or not new_literal(title, asked, "name")


def dated_heading(unit: Unit, asked: str) -> bool:
    """Whether the unit's heading path holds a number the question (``asked``, casefolded)
    does not name: the release a changelog entry sits under ("Changelog › 1.6.0 › New")."""
    return states_number(unit.chunk.heading or "", asked)


def new_literal(unit: Unit, asked: str, kind: str = "any", titled: bool = True) -> bool:
    """Whether the unit holds a literal value of ``kind`` the question does not already name.
    With ``titled``, the name an object directive documents counts for the lines of its body:
    under ``.. envvar:: BUILD_NUMBER``, "When set, pytest runs as in CI" answers "which
    variable"."""
    if (titled and unit.title and kind != "number"
            and unit.title.strip("`").casefold() not in asked):
        return True
    return any(value not in asked for value in of_kind(unit.literals, kind))


def weights_for(
    terms: list[str], candidates: Sequence[Unit], given: dict[str, float] | None,
    question: str = "",
) -> dict[str, float]:
    """Each question term's weight: ``given`` (the caller's table), else BM25's IDF over the
    candidates' sentences; a lone Chinese character's times :data:`LONE_HAN_WEIGHT`, and a
    bigram of a katakana word of ``question`` times its
    :func:`~glassrag.text.analysis.katakana_shares`."""
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
    shares = katakana_shares(question) if question else {}
    return {t: known.get(t, fallback) * shares.get(t, 1.0)
            * (LONE_HAN_WEIGHT if len(t) == 1 and has_han(t) else 1.0) for t in terms}
