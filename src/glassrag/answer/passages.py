"""What the extractive answerer can quote: the sentences of the evidence, as units that know
their block, whether they are code, a heading or carry a literal value.

Documentation states facts in a few recurring shapes, and these units are cut to fit them:

* a list item or paragraph whose first sentence names the thing and whose next sentence gives
  the value ("``max_age`` - Sets the cache time. Defaults to ``600``."): a quote may be two
  consecutive sentences of one block;
* a sentence ending in ":" that introduces a code block or list: the quote carries that block
  (:func:`introduced_end`);
* a heading, which says what its section is about but answers nothing itself: it is never a
  quote, but its words count for the sentences under it (the chunk's heading path).

Everything here is a pure function of the chunk text; quotes stay verbatim slices of it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from glassrag.records import Chunk, Fusion, Hit, Mode
from glassrag.text.analysis import analyze
from glassrag.text.sentences import code_spans, split_sentences

# The most characters of a block a sentence ending in ":" brings into its quote; a longer
# block is cut at a line end (the quote stays a verbatim slice).
MAX_INTRODUCED_CHARS = 480
# A two-sentence unit is only made when both together stay this short.
MAX_PAIR_CHARS = 420

# A literal value: inline code, a number (not a list marker), a quoted string, a flag.
_LITERAL = re.compile(
    # reST's inline literal is ``double``: read as one value, not as the text between two.
    r"``[^`\n]+``|`[^`\n]+`"
    r"|(?<![A-Za-z0-9_.])(?<![A-Za-z0-9]-)\d+(?:[.,]\d+)*(?![.)]\s)"
    r"|\"[^\"\n]{1,60}\"|'[^'\n]{1,60}'|\u201c[^\u201d\n]{1,60}\u201d|\u300c[^\u300d\n]{1,60}\u300d"
    r"|(?<![A-Za-z0-9_-])--?[A-Za-z][A-Za-z0-9_-]*"
    r"|(?<![A-Za-z0-9_])[A-Za-z]+(?:_[A-Za-z0-9]+)+|(?<![A-Za-z0-9_])[a-z]{2,}[A-Z][A-Za-z0-9]*"
)
# Lines that open a block of their own: the next line after a sentence ending in ":".
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+\u2022][ \t]|\d{1,9}[.)][ \t]|\|)")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,}|:{3,})")
_ATX_HEADING = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_ATX_CLOSING = re.compile(r"(?:[ \t]+#+)?[ \t]*$")  # an ATX heading's optional closing #s
_ADORNMENT = re.compile(r"[ \t]*([=\-~^*#\"'`:.+_<>])\1{2,}[ \t]*$")
_ASKS = re.compile(r"[?\uff1f][*_\"'\u201d\u300d)\uff09]*\Z")
# Questions that ask for a value, a name or a way (what/which/how/where, how many, the
# default), as opposed to yes/no questions: the answer to these is usually a literal.
_SEEKS_LITERAL = re.compile(
    r"\b(?:what|which|how|where|when|default|defaults)\b"
    r"|\u9ed8\u8ba4|\u591a\u5c11|\u51e0|\u591a\u957f|\u591a\u5927|\u591a\u4e45|\u54ea|\u4ec0\u4e48|\u600e|\u5982\u4f55"
    r"|\u30c7\u30d5\u30a9\u30eb\u30c8|\u3044\u304f\u3064|\u4f55|\u3069\u306e|\u3069\u308c|\u3069\u3046|\u3069\u3053|\u3069\u3093\u306a|\u65b9\u6cd5",
    re.IGNORECASE,
)


# Where a link points and a bare URL: an address, not a value the text states (the numbers
# of "[CVE-2018-12121](https://...)" name an advisory, they answer no "what value").
_ADDRESS = re.compile(r"\]\([^)\s]*\)|https?://[^\s<>)\]]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A metavariable of a synopsis (``<name>``, ``<dir>``): it stands for a value the reader
# supplies, so it is no value the documentation gives.
_PLACEHOLDER = re.compile(r"<[^<>\s][^<>]*>")
# Questions that ask for a way to do something (how do I, what should I set): the answer
# names what to set or run, so a number alone in a sentence does not answer them.
_ASKS_WAY = re.compile(
    r"\bhow (?:do|does|can|could|should|would|to)\b|\bwhat (?:should|must|do) (?:i|we|you)\b"
    r"|\u600e\u4e48|\u600e\u6837|\u600e\u9ebc|\u5982\u4f55|\u3069\u3046(?!\u304b)|\u65b9\u6cd5",
    re.IGNORECASE,
)
# Questions that ask for a quantity (how many, how long, how large) or a version (since
# which release): the answer is a number.
_ASKS_QUANTITY = re.compile(
    r"\bhow (?:many|much|long|big|large|small|often|wide|old)\b"
    r"|\b(?:which|what)\s+(?:[\w.-]+\s+){0,2}(?:version|release)s?\b"
    r"|\u54ea(?:\u4e2a|\u4e00\u4e2a|\u4e00)?\u7248\u672c|\u4ec0\u4e48\u7248\u672c"
    r"|\u3069\u306e\u30d0\u30fc\u30b8\u30e7\u30f3|\u4f55\u30d0\u30fc\u30b8\u30e7\u30f3"
    r"|\u591a\u5c11|\u51e0|\u591a\u957f|\u591a\u4e45|\u591a\u5927|\u3044\u304f\u3064|\u3069\u306e\u304f\u3089\u3044|\u3069\u308c\u304f\u3089\u3044"
    r"|\u4f55\s?(?:[A-Za-z]|\u79d2|\u5206|\u56de|\u500b|\u4ef6|\u65e5|\u6642\u9593|\u30df\u30ea|\u30d0\u30a4\u30c8|\u6587\u5b57|\u884c|\u500d|\u3064)",
    re.IGNORECASE,
)

# The word "default" (a question asking for one, a sentence stating one).
_DEFAULT = re.compile(
    r"\bdefault(?:s|ed)?\b"
    r"|\u9ed8\u8ba4|\u9ed8\u8a8d|\u7f3a\u7701|\u30c7\u30d5\u30a9\u30eb\u30c8|\u65e2\u5b9a",
    re.IGNORECASE,
)
# A question about the default that does not say the word: what happens when nothing is set
# ("if I don't set minimum_size", "unless I specify one", "out of the box", "不设置的话",
# "特に設定しない場合", "何も指定しなかった場合").
_ASKS_UNSET = re.compile(
    r"\b(?:if|when) (?:i|we|you) (?:do not|don't|never) (?:set|specify|pass|configure|change)\b"
    r"|\bunless (?:i|we|you) (?:set|specify|pass|configure|change)\b|\bout of the box\b"
    r"|\bwithout (?:setting|specifying|passing|configuring)\b"
    r"|\u4e0d(?:\u505a\u4efb\u4f55)?(?:\u8bbe\u7f6e|\u914d\u7f6e|\u6307\u5b9a|\u4fee\u6539)"
    r"|\u6ca1\u6709(?:\u8bbe\u7f6e|\u914d\u7f6e|\u6307\u5b9a)"
    r"|(?:\u6307\u5b9a|\u8a2d\u5b9a)\u3057(?:\u306a\u3044|\u306a\u304b\u3063\u305f)",
    re.IGNORECASE,
)
# How far after that word the value may start ("Defaults to `600`", "**Default:** `500`",
# "默认为15000", "デフォルトは Vite の特別な値 `'x'`"), without crossing a sentence end.
DEFAULT_REACH = 24
_SENTENCE_END = re.compile(r"[.!?]\s|[\u3002\uff01\uff1f\uff1b]")

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

    @property
    def text(self) -> str:
        return self.chunk.text[self.start : self.end]


@dataclass(frozen=True)
class _Sentence:
    start: int
    end: int
    terms: frozenset[str]
    block: int
    code: bool
    heading: bool
    asks: bool  # a question (a FAQ entry): what follows it answers it
    tokens: tuple[str, ...] = ()  # its analysed terms in order


def literals(text: str) -> tuple[str, ...]:
    """The literal values in ``text`` (see :func:`has_literal`), casefolded, without the
    backticks and quotes around them."""
    if "](" in text or "://" in text:
        text = _ADDRESS.sub(" ", text)
    found = (m.group().strip("`\"'\u201c\u201d\u300c\u300d").casefold()
             for m in _LITERAL.finditer(text))
    return tuple(dict.fromkeys(v for v in found if not _PLACEHOLDER.fullmatch(v)))


def value_kind(question: str) -> str:
    """The kind of literal that answers ``question``: ``"number"`` for a quantity (how
    many, how long, 多少, いくつ), ``"name"`` for a way to do something (how do I, 怎么,
    どうすれば: the option, flag or call to use), else ``"any"``."""
    if _ASKS_QUANTITY.search(question):
        return "number"
    if _ASKS_WAY.search(question):
        return "name"
    return "any"


def of_kind(values: Sequence[str], kind: str) -> list[str]:
    """The ``values`` (from :func:`literals`) that are of ``kind`` (see :func:`value_kind`)."""
    if kind == "number":
        return [v for v in values if any(ch.isdigit() for ch in v)]
    if kind == "name":
        return [v for v in values if not _NUMBER.fullmatch(v)]
    return list(values)


def asks_default(question: str) -> bool:
    """Whether ``question`` asks for the default: names it (default, 默认, デフォルト, 既定)
    or asks what holds when nothing is set ("if I don't set", "不设置", "指定しない場合")."""
    return _DEFAULT.search(question) is not None or _ASKS_UNSET.search(question) is not None


def states_default(text: str) -> bool:
    """Whether ``text`` gives a default value: the word "default" followed, within
    :data:`DEFAULT_REACH` characters of the same sentence, by a literal value."""
    for word in _DEFAULT.finditer(text):
        window = text[word.end() : word.end() + DEFAULT_REACH + 40]
        stop = _SENTENCE_END.search(window)
        value = _LITERAL.search(window, 0, stop.start() if stop else len(window))
        if value is not None and value.start() <= DEFAULT_REACH:
            return True
    return False


def has_literal(text: str) -> bool:
    """Whether ``text`` holds a literal value: inline code, a number, a quoted string, a
    ``--flag`` or an identifier (``snake_case``, ``camelCase``)."""
    return _LITERAL.search(text) is not None


def seeks_literal(question: str) -> bool:
    """Whether ``question`` asks what, which, how, where or the default (in English, Chinese
    or Japanese), whose answers are usually a literal value, rather than yes or no."""
    return _SEEKS_LITERAL.search(question) is not None


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
        sentences = _sentences(chunk.text)
        for index, sentence in enumerate(sentences):
            if sentence.heading or not sentence.terms:
                continue
            if sentence.code and _lone_code(chunk.text, sentences, index):
                continue  # quoted with the sentence that introduces it, never alone
            following = sentences[index + 1] if index + 1 < len(sentences) else None
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
    sentences = _sentences(chunk.text)
    above = [i for i, s in enumerate(sentences) if s.heading and s.end <= unit.start]
    if not above:
        return None
    index = above[-1]
    heading = sentences[index]
    marks = _ATX_HEADING.match(chunk.text, heading.start)
    start = heading.start
    if marks is not None:
        start = marks.end()
        while start < heading.end and chunk.text[start] in " \t":
            start += 1
    closing = _ATX_CLOSING.search(chunk.text, start, heading.end)
    end = closing.start() if closing is not None else heading.end
    if end <= start:
        return None
    part = replace(heading, start=start, end=end, asks=False)
    return _unit(unit.hit_index, index, chunk, [part], unit.standing)


def _lone_code(text: str, sentences: Sequence[_Sentence], index: int) -> bool:
    """Whether sentence ``index`` is the only line of a fenced code block: a command or a
    call to type, which says nothing true on its own (``redirect(url, status_code=301)``
    beside the prose that gives the rule)."""
    before = sentences[index - 1] if index else None
    after = sentences[index + 1] if index + 1 < len(sentences) else None
    return (before is not None and after is not None
            and bool(_FENCE.match(text, before.start)) and bool(_FENCE.match(text, after.start)))


def _unit(hit_index: int, index: int, chunk: Chunk, parts: list[_Sentence],
          standing: float) -> Unit:
    start, end = parts[0].start, parts[-1].end
    terms = frozenset().union(*(p.terms for p in parts))
    # A sentence ending in ":" is quoted with the block it introduces (``_quote``), so the
    # block's words are words the quote holds: "print to standard error by passing
    # ``err=True``::" answers "make click.echo write to stderr" through its code line.
    stop = introduced_end(chunk.text, end)
    if stop > end:
        terms |= frozenset(analyze(chunk.text[end:stop]))
    tokens = [t for p in parts for t in p.tokens]
    return Unit(hit_index, index, chunk, start, end, terms, parts[0].block,
                all(p.code for p in parts), literals(chunk.text[start:end]), len(parts),
                standing, term_pairs(tokens))


def term_pairs(tokens: Sequence[str]) -> frozenset[tuple[str, str]]:
    """The adjacent pairs of a sequence of analysed terms: word order, which a set of terms
    forgets ("current directory and below" holds ("current", "directori"))."""
    return frozenset(zip(tokens, tokens[1:], strict=False))


@functools.lru_cache(maxsize=256)
def _sentences(text: str) -> tuple[_Sentence, ...]:
    """Sentences with their block number: consecutive sentences share a block unless a
    blank line, a line that starts a block (list item, table row, heading, fence) or a
    change between code and prose lies between them. Remembered per text: a chunk's units
    and its title line (:func:`title_unit`) read the same sentences, and the best chunks
    come back question after question."""
    code = code_spans(text)
    out: list[_Sentence] = []
    block = 0
    previous_end = 0
    previous_code: bool | None = None
    for start, end in split_sentences(text, semicolons=True):
        piece = text[start:end]
        line_start = text.rfind("\n", 0, start) + 1
        is_code = any(a <= start < b for a, b in code)
        is_heading = not is_code and _is_heading(text, start, end, line_start)
        gap = text[previous_end:start]
        new_line = "\n" in gap
        if out and (
            "\n\n" in gap.replace(" ", "").replace("\t", "")
            or is_code or previous_code or is_heading or out[-1].heading
            or (new_line and _LIST_ITEM.match(text, line_start))
            or _FENCE.match(piece)
        ):
            block += 1
        tokens = () if _FENCE.match(piece) else tuple(analyze(piece))
        asks = not is_code and _ASKS.search(piece) is not None
        out.append(_Sentence(start, end, frozenset(tokens), block, is_code, is_heading, asks,
                             tokens))
        previous_end, previous_code = end, is_code
    return tuple(out)


def _is_heading(text: str, start: int, end: int, line_start: int) -> bool:
    """An ATX heading line, or a whole line underlined with a reST adornment, after a blank
    line or an overline. (A sentence that shares its line with another, or the first line of a
    ``::: tip`` container, stands above a closing ``:::`` without being a title.)"""
    if start == line_start and _ATX_HEADING.match(text, start):
        return True
    line_end = text.find("\n", end)
    if line_end < 0 or text.find("\n", start, end) >= 0 or start != line_start:
        return False
    above = text[text.rfind("\n", 0, line_start - 1) + 1 : line_start - 1] if line_start else ""
    if text[end:line_end].strip() or (above.strip() and not _ADORNMENT.match(above)):
        return False
    next_end = text.find("\n", line_end + 1)
    underline = text[line_end + 1 : next_end if next_end >= 0 else len(text)]
    return bool(_ADORNMENT.match(underline))


def introduced_end(text: str, end: int) -> int:
    """Where the block that the sentence ending at ``end`` introduces ends, or ``end``.

    A sentence ending in ":" (or "：") introduces what follows it: a code block (to its
    closing fence), a list or table (to the first blank line after which neither an item nor
    a line indented deeper than the sentence follows), or an indented block such as a reST
    directive's body. Cut at a line end once :data:`MAX_INTRODUCED_CHARS` is reached.
    """
    if not _introduces(text, end):
        return end
    lines = _lines_after(text, end)
    if not lines:
        return end
    first = text[lines[0][0] : lines[0][1]]
    fence = _FENCE.match(first)
    base = _indent_at(text, text.rfind("\n", 0, end) + 1)
    stop = end
    for index, (a, b) in enumerate(lines):
        line = text[a:b]
        if a - end > MAX_INTRODUCED_CHARS and index:
            break
        if fence is not None:
            stop = b
            if index and line.strip().startswith(fence.group(1)[:3]):
                break
            continue
        if not line.strip():
            following = lines[index + 1] if index + 1 < len(lines) else None
            # After a blank line the block goes on with another list item, or with a line
            # indented deeper than the introducing sentence: a list item's code block, the
            # body of a reST directive (".. code-block::" and its indented lines).
            if following is None or not (_LIST_ITEM.match(text, following[0])
                                         or _indent_at(text, following[0]) > base):
                break
            continue
        if index and _ATX_HEADING.match(line):
            break
        stop = b
    return stop


def _introduces(text: str, end: int) -> bool:
    """Whether the text before ``end`` ends in ":" or "：" (trailing spaces aside); looked at
    from the end, since every sentence of a chunk asks."""
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end > 0 and text[end - 1] in ":\uff1a"


def _indent_at(text: str, line_start: int) -> int:
    """The indentation of the line starting at ``line_start``."""
    line_end = text.find("\n", line_start)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    return len(line) - len(line.lstrip(" \t")) if line.strip() else 0


def _lines_after(text: str, end: int) -> list[tuple[int, int]]:
    """(start, end) of the lines after the one holding ``end``, leading blank lines
    skipped (the introduced block may follow one blank line)."""
    line_end = text.find("\n", end)
    if line_end < 0:
        return []
    out: list[tuple[int, int]] = []
    pos = line_end + 1
    while pos <= len(text):
        nxt = text.find("\n", pos)
        nxt = len(text) if nxt < 0 else nxt
        out.append((pos, nxt))
        pos = nxt + 1
    while out and not text[out[0][0] : out[0][1]].strip():
        out.pop(0)
    return out
