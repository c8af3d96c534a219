"""What the extractive answerer can quote: the sentences of the evidence, as units that know
their block, whether they are code, a heading or carry a literal value.

Documentation states facts in a few recurring shapes, and these units are cut to fit them:

* a list item or paragraph whose first sentence names the thing and whose next sentence gives
  the value ("``max_age`` - Sets the cache time. Defaults to ``600``."): a quote may be two
  consecutive sentences of one block;
* a sentence ending in ":" that introduces a code block or list: the quote carries that block
  (:func:`~glassrag.answer.blocks.introduced_end`);
* a heading, which says what its section is about but answers nothing itself: it is never a
  quote, but its words count for the sentences under it (the chunk's heading path).

Everything here is a pure function of the chunk text; quotes stay verbatim slices of it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from glassrag.answer.blocks import (
    Sentence,
    introduced_end,
    links_only,
    lone_code,
    sentences,
    title_span,
)
from glassrag.answer.values import literals
from glassrag.records import Chunk, Fusion, Hit, Mode
from glassrag.text.analysis import analyze

# A two-sentence unit is only made when both together stay this short.
MAX_PAIR_CHARS = 420
# A sentence before of fewer terms is a label ("!!! info", "Note:"), not what is pointed at.
_MIN_SUBJECT_TERMS = 3
# Words opening a sentence whose subject is in the sentence before: demonstratives and
# pronouns in English, こ/そ demonstratives in Japanese, 该/这/此/它/其 in Chinese.
_POINTING_BACK = re.compile(
    r"(?:This|These|That|Those|It|They|Such|Its|Their)\b|この|その|これ|それ|该|这|此|它|其")
# Chunk texts whose units are remembered (:func:`shapes`): the chunks a server retrieves
# again and again. Measured on the docs-QA set at 16-21 KB a chunk of English
# documentation, 38 KB of Chinese and 61 KB of Japanese (sets of terms and word pairs), so
# at most about 11, 20 and 31 MB (benchmarks/RESULTS.md).
SHAPES_CACHED = 512
# Heading paths (with their page titles) whose terms are remembered (:func:`heading_terms`),
# 1-2 KB each.
HEADINGS_CACHED = 1024


@dataclass(frozen=True)
class Unit:
    """One quotable unit: one sentence, or two consecutive sentences of one block."""

    hit_index: int
    sentence_index: int
    chunk: Chunk
    start: int
    end: int
    terms: frozenset[str]
    block: int
    code: bool
    literals: tuple[str, ...]  # the literal values it holds, casefolded
    size: int  # sentences in the unit
    standing: float = 1.0  # its hit's retrieval score over the best hit's (0 to 1)
    pairs: frozenset[tuple[str, str]] = frozenset()  # its adjacent analysed terms
    # What it is read with (its table's header, the name its directive documents): counted
    # like the chunk's heading path.
    context: frozenset[str] = frozenset()
    title: str = ""  # the name the object directive around it documents (``BUILD_NUMBER``)
    # Its first sentence opens with a word pointing back ("This tool", "それは", "该参数") at the
    # sentence before it in its block, which a pair unit quotes with it.
    leans_back: bool = False

    @property
    def text(self) -> str:
        return self.chunk.text[self.start : self.end]

    @property
    def quote_end(self) -> int:
        """Where the unit's quote ends: past the code block or list it introduces when it
        ends in ":", else where its text does."""
        return introduced_end(self.chunk.text, self.end)

    @property
    def quote(self) -> str:
        """The unit's text, with the code block or list it introduces when it ends in ":"."""
        return self.chunk.text[self.start : self.quote_end]


def heading_terms(chunk: Chunk) -> frozenset[str]:
    """The analysed terms of the chunk's heading path and its document's title."""
    return _heading_terms(chunk.title, chunk.heading or "")


@functools.lru_cache(maxsize=HEADINGS_CACHED)
def _heading_terms(title: str, heading: str) -> frozenset[str]:
    # Remembered: a page's sections come back with every question about the page.
    return frozenset(analyze(f"{title}\n{heading}"))


_FUSIONS = frozenset(Fusion)
_HYBRID_SCORES = frozenset({Mode.BM25, Mode.DENSE, *Fusion})


def _ratio(score: float, best: float) -> float:
    return min(max(score / best, 0.0), 1.0) if best > 0 else 1.0


def hit_standing(hit: Hit, best: float, best_lexical: float) -> float:
    """How near the hit's retrieval score comes to the best evidence's, from 0 to 1.

    A fused hit takes the better of its fused and its BM25 standing. Fusion spreads scores
    out (each retriever counts from a floor of its own candidates, retrieval/fusion.py), so
    a chunk that BM25 scored nearly as high as the best, and the embedder did not, would
    otherwise stand as if it had barely been retrieved. Cosines are not used the same way:
    an embedder's cosines crowd into a narrow band, which would make every hit stand near 1.
    """
    fused = _ratio(hit.score, best)
    names = hit.scores.keys()
    if Mode.BM25 not in names or names.isdisjoint(_FUSIONS) or not names <= _HYBRID_SCORES:
        return fused  # not a hybrid hit, or one a reranker has scored since
    return max(fused, _ratio(hit.scores[Mode.BM25], best_lexical))


def units(evidence: Sequence[Hit], max_hits: int) -> list[Unit]:
    """The quotable units of the best ``max_hits`` hits, in hit and sentence order
    (a chunk repeated in a fused list is read once)."""
    out: list[Unit] = []
    seen: set[str] = set()
    best = max((h.score for h in evidence[:max_hits]), default=0.0)
    best_lexical = max((h.scores.get(Mode.BM25, 0.0) for h in evidence[:max_hits]), default=0.0)
    for hit_index, hit in enumerate(evidence[:max_hits]):
        chunk = hit.chunk
        if chunk.chunk_id in seen:
            continue
        seen.add(chunk.chunk_id)
        standing = hit_standing(hit, best, best_lexical)
        out.extend(_unit(hit_index, chunk, shape, standing) for shape in shapes(chunk.text))
    return out


class Shape(NamedTuple):
    """What a unit is in its chunk's text alone: everything but its hit and standing."""

    sentence_index: int
    start: int
    end: int
    terms: frozenset[str]
    block: int
    code: bool
    literals: tuple[str, ...]
    size: int
    pairs: frozenset[tuple[str, str]]
    context: frozenset[str]
    title: str
    leans_back: bool = False


@functools.lru_cache(maxsize=SHAPES_CACHED)
def shapes(text: str) -> tuple[Shape, ...]:
    """The quotable units of a chunk ``text``, in sentence order: each sentence that says
    something, and two consecutive sentences of one block that fit :data:`MAX_PAIR_CHARS`.

    Remembered per text (the whole text is the key, so a new version of a chunk is read
    afresh): the best chunks come back question after question, and their units (analysed
    sentences, introduced blocks, literals, word pairs) are most of an answer's work."""
    parts = sentences(text)
    # Each sentence's word pairs, shared by the units holding it (a pair unit adds the pair
    # that joins its two sentences).
    pairs = [term_pairs(p.tokens) for p in parts]
    # A sentence that is only links points to another page and says nothing itself.
    quotable = [not p.heading and bool(p.terms) and not links_only(text[p.start : p.end])
                for p in parts]
    out: list[Shape] = []
    for index, sentence in enumerate(parts):
        if not quotable[index]:
            continue
        if sentence.code and lone_code(text, parts, index) and not sentence.context:
            # Quoted with the sentence that introduces it, never alone; unless it is read with
            # a label, a content tab's ("Linux": ``~/.cache/pip``).
            continue
        following = parts[index + 1] if index + 1 < len(parts) else None
        if following is not None and not quotable[index + 1]:
            following = None
        if sentence.asks:
            # A question in the documents is quoted with its answer, never alone.
            if following is not None:
                out.append(_shape(index, text, [sentence, following], pairs[index : index + 2]))
            continue
        leans = _leans_back(text, parts, quotable, index)
        out.append(_shape(index, text, [sentence], pairs[index : index + 1], leans))
        if (following is not None and following.block == sentence.block
                and following.end - sentence.start <= MAX_PAIR_CHARS):
            out.append(_shape(index, text, [sentence, following], pairs[index : index + 2],
                              leans))
    return tuple(out)


def _leans_back(text: str, parts: Sequence[Sentence], quotable: list[bool], index: int) -> bool:
    """Whether sentence ``index`` opens with a word pointing back (:data:`_POINTING_BACK`)
    and the sentence before it is quotable prose of the same block, near enough to be quoted
    with it as a pair (:data:`MAX_PAIR_CHARS`)."""
    if index == 0 or not quotable[index - 1]:
        return False
    before, sentence = parts[index - 1], parts[index]
    return (before.block == sentence.block and not before.code and not before.asks
            and len(before.terms) >= _MIN_SUBJECT_TERMS
            and sentence.end - before.start <= MAX_PAIR_CHARS
            and _POINTING_BACK.match(text, sentence.start) is not None)


def title_unit(unit: Unit) -> Unit | None:
    """The unit of the nearest heading line above ``unit`` in its chunk (without a Markdown
    heading's ``#`` marks), or None when the chunk holds none. In reference documentation
    the section title is often the name a question asks for: the page titled
    ``enable_testing`` says "Enable testing for current directory and below"."""
    chunk = unit.chunk
    parts = sentences(chunk.text)
    index = parts[unit.sentence_index].titled_by
    if index < 0:
        above = [i for i, s in enumerate(parts) if s.heading and s.end <= unit.start]
        if not above:
            return None
        index = above[-1]
    span = title_span(chunk.text, parts[index])
    if span is None:
        return None
    part = replace(parts[index], start=span[0], end=span[1], asks=False)
    shape = _shape(index, chunk.text, [part], [term_pairs(part.tokens)])
    return _unit(unit.hit_index, chunk, shape, unit.standing)


def _unit(hit_index: int, chunk: Chunk, shape: Shape, standing: float) -> Unit:
    return Unit(hit_index, shape.sentence_index, chunk, shape.start, shape.end, shape.terms,
                shape.block, shape.code, shape.literals, shape.size, standing, shape.pairs,
                shape.context, shape.title, shape.leans_back)


def _shape(index: int, text: str, parts: list[Sentence],
           pairs: list[frozenset[tuple[str, str]]], leans_back: bool = False) -> Shape:
    """The unit of the sentences ``parts`` (one, or two in a row), ``pairs`` being each one's
    word pairs; ``leans_back``: the first of them points back (:func:`_leans_back`)."""
    start, end = parts[0].start, parts[-1].end
    terms = parts[0].terms if len(parts) == 1 else parts[0].terms | parts[1].terms
    # A sentence ending in ":" is quoted with the block it introduces (:attr:`Unit.quote`), so the
    # block's words are words the quote holds: "print to standard error by passing
    # ``err=True``::" answers "make click.echo write to stderr" through its code line.
    stop = introduced_end(text, end)
    if stop > end:
        terms |= frozenset(analyze(text[end:stop]))
    joined = pairs[0]
    if len(parts) == 2:  # the pairs of both sentences' terms in a row: each one's, and the join
        first, second = parts[0].tokens, parts[1].tokens
        joined = joined | pairs[1] | ({(first[-1], second[0])} if first and second else set())
    context = parts[0].context if len(parts) == 1 else parts[0].context | parts[1].context
    return Shape(index, start, end, terms, parts[0].block, all(p.code for p in parts),
                 literals(text[start:end]), len(parts), joined, context, parts[0].title,
                 leans_back)


def term_pairs(tokens: Sequence[str]) -> frozenset[tuple[str, str]]:
    """The adjacent pairs of a sequence of analysed terms: word order, which a set of terms
    forgets ("current directory and below" holds ("current", "directori"))."""
    return frozenset(zip(tokens, tokens[1:], strict=False))

