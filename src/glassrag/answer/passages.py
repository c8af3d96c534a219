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

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from glassrag.answer.blocks import Sentence, introduced_end, lone_code, sentences, title_span
from glassrag.answer.values import literals
from glassrag.records import Chunk, Fusion, Hit, Mode
from glassrag.text.analysis import analyze

# A two-sentence unit is only made when both together stay this short.
MAX_PAIR_CHARS = 420


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

    @property
    def text(self) -> str:
        return self.chunk.text[self.start : self.end]

    @property
    def quote(self) -> str:
        """The unit's text, with the code block or list it introduces when it ends in ":"."""
        return self.chunk.text[self.start : introduced_end(self.chunk.text, self.end)]


def written_short_or_long(terms: Sequence[str], words: Collection[str]) -> frozenset[str]:
    """The Latin ``terms`` of five letters or more that one of ``words`` writes short or long
    ("async" and "asynchronous", "config" and "configuration": one is the start of the
    other). Stemming joins inflections, not shortenings."""
    wanted = [t for t in terms if len(t) >= 5 and t not in words and t.isascii() and t.isalpha()]
    if not wanted:
        return frozenset()
    long = [w for w in words if len(w) >= 5 and w.isascii() and w.isalpha()]
    starts = {w[:5] for w in long}
    return frozenset(t for t in wanted if t[:5] in starts
                     and any(w.startswith(t) or t.startswith(w) for w in long))


def heading_terms(chunk: Chunk) -> frozenset[str]:
    """The analysed terms of the chunk's heading path and its document's title."""
    return frozenset(analyze(f"{chunk.title}\n{chunk.heading or ''}"))


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
        parts = sentences(chunk.text)
        for index, sentence in enumerate(parts):
            if sentence.heading or not sentence.terms:
                continue
            if sentence.code and lone_code(chunk.text, parts, index):
                continue  # quoted with the sentence that introduces it, never alone
            following = parts[index + 1] if index + 1 < len(parts) else None
            if following is not None and (following.heading or not following.terms):
                following = None
            if sentence.asks:
                # A question in the documents is quoted with its answer, never alone.
                if following is not None:
                    out.append(_unit(hit_index, index, chunk, [sentence, following], standing))
                continue
            out.append(_unit(hit_index, index, chunk, [sentence], standing))
            if (following is not None and following.block == sentence.block
                    and following.end - sentence.start <= MAX_PAIR_CHARS):
                out.append(_unit(hit_index, index, chunk, [sentence, following], standing))
    return out


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
    return _unit(unit.hit_index, index, chunk, [part], unit.standing)


def _unit(hit_index: int, index: int, chunk: Chunk, parts: list[Sentence],
          standing: float) -> Unit:
    start, end = parts[0].start, parts[-1].end
    terms = frozenset().union(*(p.terms for p in parts))
    # A sentence ending in ":" is quoted with the block it introduces (:attr:`Unit.quote`), so the
    # block's words are words the quote holds: "print to standard error by passing
    # ``err=True``::" answers "make click.echo write to stderr" through its code line.
    stop = introduced_end(chunk.text, end)
    if stop > end:
        terms |= frozenset(analyze(chunk.text[end:stop]))
    tokens = [t for p in parts for t in p.tokens]
    return Unit(hit_index, index, chunk, start, end, terms, parts[0].block,
                all(p.code for p in parts), literals(chunk.text[start:end]), len(parts),
                standing, term_pairs(tokens), frozenset().union(*(p.context for p in parts)),
                parts[0].title)


def term_pairs(tokens: Sequence[str]) -> frozenset[tuple[str, str]]:
    """The adjacent pairs of a sequence of analysed terms: word order, which a set of terms
    forgets ("current directory and below" holds ("current", "directori"))."""
    return frozenset(zip(tokens, tokens[1:], strict=False))

