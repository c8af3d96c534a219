"""The sentences of a chunk as the answerer reads them: in blocks, with the headings and code
lines marked, and the block that a sentence ending in ":" introduces.

A block is a paragraph, a list item, a table, a code block or a heading; two sentences of one
block may be quoted together, two of different blocks never. Everything here is a pure
function of the chunk text, so quotes stay verbatim slices of it.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from glassrag.answer.structure import directive_argument, line_contexts, line_starts
from glassrag.answer.values import signature_default
from glassrag.text.analysis import analyze
from glassrag.text.links import ADDRESS, IMAGE, LINK
from glassrag.text.sentences import (
    FIELD,
    OPTION_ITEM,
    PYMDOWN_MARKER,
    TITLE_TAG_LINE,
    indent_of,
    is_markup,
    sentences_code_rows,
)

# The most characters of a block a sentence ending in ":" brings into its quote; a longer
# block is cut at a line end (the quote stays a verbatim slice).
MAX_INTRODUCED_CHARS = 480
# Lines that open a block of their own: the next line after a sentence ending in ":".
# A reST field (":param name: ...", ":returns:") is an item too.
_LIST_ITEM = re.compile(rf"[ \t]*(?:[-*+\u2022][ \t]|\d{{1,9}}[.)][ \t]|\||{FIELD}|{OPTION_ITEM})")
_FENCE = re.compile(rf"[ \t]*(`{{3,}}|~{{3,}}|:{{3,}}|{PYMDOWN_MARKER})")
# A line that is only a reST field marker: a directive option (":members:") or a field whose
# body is on the lines below (":param name:").
_BARE_FIELD = re.compile(rf"[ \t]*{FIELD}[ \t]*$")
# Lines of reST markup only: directives (".. versionadded:: 2.1", ".. autoclass:: Result")
# and bare field markers (":members:").
_MARKUP_LINES = re.compile(rf"(?:[ \t]*(?:\.\.[ \t]+[\w:.-]+::[^\n]*|{FIELD}[ \t]*)?\n)+",
                           re.MULTILINE)
_ATX_HEADING = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_ATX_CLOSING = re.compile(r"(?:[ \t]+#+)?[ \t]*$")  # an ATX heading's optional closing #s
_TITLE_TAG = re.compile(TITLE_TAG_LINE, re.IGNORECASE)  # <h2>Install</h2>, <summary>…
_ADORNMENT = re.compile(r"[ \t]*([=\-~^*#\"'`:.+_<>])\1{2,}[ \t]*$")
_FENCE_CHARACTERS = "`~:"
_ASKS = re.compile(r"[?\uff1f][*_\"'\u201d\u300d)\uff09]*\Z")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a chunk: its span, analysed terms and block, and what kind of line."""

    start: int
    end: int
    terms: frozenset[str]
    block: int
    code: bool
    heading: bool
    asks: bool  # a question (a FAQ entry): what follows it answers it
    tokens: tuple[str, ...] = ()  # its analysed terms in order
    # The terms of what it is read with: its table's header, the name its directive documents.
    context: frozenset[str] = frozenset()
    titled_by: int = -1  # the sentence of the object directive whose body holds it
    title: str = ""  # that directive's argument: the name of what the body describes


# As many texts as passages.shapes remembers: a chunk's title line is read from its
# sentences (passages.title_unit) when its units are remembered. 3-7 KB a chunk beyond what
# its units hold (the sets of terms are shared).
SENTENCES_CACHED = 512


@functools.lru_cache(maxsize=SENTENCES_CACHED)
def sentences(text: str) -> tuple[Sentence, ...]:
    """Sentences with their block number: consecutive sentences share a block unless a
    blank line, a line that starts a block (list item, table row, heading, fence) or a
    change between code and prose lies between them. Remembered per text: a chunk's units
    and its title line (:func:`~glassrag.answer.passages.title_unit`) read the same
    sentences, and the best chunks come back question after question."""
    spans, code, rows = sentences_code_rows(text, semicolons=True)
    row_starts = {start for start, _ in rows}
    contexts = line_contexts(text)
    starts = line_starts(text) if contexts else []
    sentence_at: dict[int, int] = {}  # line index -> the sentence starting on it
    out: list[Sentence] = []
    block = 0
    previous_end = 0
    previous_code: bool | None = None
    for start, end in spans:
        piece = text[start:end]
        line_start = text.rfind("\n", 0, start) + 1
        is_code = any(a <= start < b for a, b in code)
        # An object directive's line names what its body describes: a title, not a quote,
        # unless its signature gives parameters their defaults: autodoc fills the body from
        # docstrings the documentation does not hold, so the signature is where they are
        # stated (".. autoclass:: RedisStore(db=0, key='jobs')" over ":members:").
        heading = not is_code and (is_heading(text, start, end, line_start)
                                   or (start == line_start and directive_argument(piece)
                                       is not None and not signature_default(piece)))
        context, titled_by, title = frozenset[str](), -1, ""
        if contexts:
            line = bisect_right(starts, start) - 1
            sentence_at.setdefault(line, len(out))
            found = contexts.get(line)
            if found is not None:
                context = frozenset(t for a, b in found.about for t in analyze(text[a:b]))
                titled_by = sentence_at.get(found.title, -1)
                if found.name is not None:
                    title = text[found.name[0] : found.name[1]]
        gap = text[previous_end:start]
        new_line = "\n" in gap
        if out and (
            "\n\n" in gap.replace(" ", "").replace("\t", "")
            or is_code or previous_code or heading or out[-1].heading
            or (new_line and (_LIST_ITEM.match(text, line_start) or start in row_starts))
            or _FENCE.match(piece)
        ):
            block += 1
        tokens = () if _FENCE.match(piece) or is_markup(piece) else tuple(analyze(piece))
        asks = not is_code and _ASKS.search(piece) is not None
        out.append(Sentence(start, end, frozenset(tokens), block, is_code, heading, asks,
                             tokens, context, titled_by, title))
        previous_end, previous_code = end, is_code
    return tuple(out)


def is_heading(text: str, start: int, end: int, line_start: int) -> bool:
    """An ATX heading line, or a whole line underlined with a reST adornment, after a blank
    line or an overline. (A sentence that shares its line with another, or the first line of a
    ``::: tip`` container, stands above a closing ``:::`` without being a title.)"""
    if start == line_start and (_ATX_HEADING.match(text, start)
                                or _TITLE_TAG.fullmatch(text, start, end)):
        return True
    line_end = text.find("\n", end)
    if line_end < 0 or text.find("\n", start, end) >= 0 or start != line_start:
        return False
    above = text[text.rfind("\n", 0, line_start - 1) + 1 : line_start - 1] if line_start else ""
    if text[end:line_end].strip() or (above.strip() and not _ADORNMENT.match(above)):
        return False
    next_end = text.find("\n", line_end + 1)
    return _underlines(text, text[start:end],
                       (line_end + 1, next_end if next_end >= 0 else len(text)))


def title_span(text: str, heading: Sentence) -> tuple[int, int] | None:
    """The title of a ``heading`` sentence of ``text``, without a Markdown heading's ``#``
    marks (opening and closing), or None when nothing is left."""
    argument = directive_argument(text[heading.start : heading.end])
    if argument is not None:  # ".. envvar:: BUILD_NUMBER" is titled BUILD_NUMBER
        return heading.start + argument[0], heading.start + argument[1]
    tagged = _TITLE_TAG.fullmatch(text, heading.start, heading.end)
    if tagged is not None:  # "<summary><b>Title</b></summary>": its text between the tags
        return tagged.span(2) if tagged.end(2) > tagged.start(2) else None
    marks = _ATX_HEADING.match(text, heading.start)
    start = heading.start
    if marks is not None:
        start = marks.end()
        while start < heading.end and text[start] in " \t":
            start += 1
    closing = _ATX_CLOSING.search(text, start, heading.end)
    end = closing.start() if closing is not None else heading.end
    return (start, end) if end > start else None


def lone_code(text: str, parts: Sequence[Sentence], index: int) -> bool:
    """Whether sentence ``index`` is the only line of a fenced code block: a command or a
    call to type, which says nothing true on its own (``redirect(url, status_code=301)``
    beside the prose that gives the rule)."""
    before = parts[index - 1] if index else None
    after = parts[index + 1] if index + 1 < len(parts) else None
    return (before is not None and after is not None
            and bool(_FENCE.match(text, before.start)) and bool(_FENCE.match(text, after.start)))


# A short label before the links ("**Related:**", "See also:", "関連："), and the list, quote
# and emphasis marks around them.
_LINK_LABEL = re.compile(r"^[\s>*+\-]*(?:\*\*|__)?[^\n:\uff1a\[\]`]{0,16}[:\uff1a](?:\*\*|__)?")
_WORD = re.compile(r"\w")


def links_only(text: str) -> bool:
    """Whether ``text`` is only links, images or addresses, maybe after a short label ("- [Proposal:
    detect only sentence ends](https://…)", "**Related:** [CSP](/guide/features)", a README's
    badges "[![npm version][npm-image]][npm-url]"): a pointer to another page, which says
    nothing itself however many of a question's words its link text holds."""
    if "](" not in text and "][" not in text and "://" not in text and ">`_" not in text:
        return False
    rest = ADDRESS.sub(" ", LINK.sub(" ", IMAGE.sub(" ", text)))
    if rest == text:
        return False
    rest = _LINK_LABEL.sub(" ", rest.strip(), count=1)
    return _WORD.search(rest) is None


def markup_only(text: str) -> bool:
    """Whether ``text`` is only reST directive lines and bare field markers: markup that
    says nothing about the section it stands in."""
    return bool(text.strip()) and _MARKUP_LINES.fullmatch(text.strip() + "\n") is not None


def introduced_end(text: str, end: int) -> int:
    """Where the block that the sentence ending at ``end`` introduces ends, or ``end``.

    A sentence ending in ":" (or "：") introduces what follows it: a code block (to its
    closing fence), a list or table (to the first blank line after which neither an item nor
    a line indented deeper than the sentence follows), or an indented block such as a reST
    directive's body; a sentence naming what follows ("the following command.", 以下, 如下)
    introduces a code block only (fenced, or a reST code directive with its body). The block
    ends before the next section's title. Cut at a line end once
    :data:`MAX_INTRODUCED_CHARS` is reached.
    """
    colon = _introduces(text, end)
    if not colon and not (_FENCE_NEXT.match(text, end) and _points_ahead(text, end)):
        return end  # "run the following command." introduces a code block, nothing else
    lines = _lines_after(text, end)
    if not lines:
        return end
    first = text[lines[0][0] : lines[0][1]]
    fence = _FENCE.match(first)
    line_start = text.rfind("\n", 0, end) + 1
    base = _indent_at(text, line_start)
    if _BARE_FIELD.match(text, line_start, end) and _indent_at(text, lines[0][0]) <= base:
        return end  # a field marker's body is indented under it; what is not, it does not own
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
        if index and (_ATX_HEADING.match(line)
                      or index + 1 < len(lines) and _underlines(text, line, lines[index + 1])):
            break  # the next section's title
        stop = b
    return stop


# A sentence pointing at what follows it ("run the following command.", "以下のコマンドを実行
# します。", "执行如下命令。"): it introduces a code block as a sentence ending in ":" does.
_POINTS_AHEAD = re.compile(r"\b(?:following|below|as follows)\b|\u4ee5\u4e0b|\u6b21\u306e|"
                           r"\u4e0b\u8a18|\u5982\u4e0b|\u4e0b\u9762|\u4e0b\u5217", re.IGNORECASE)
# A fenced code block on the first non-blank line after the one holding a sentence's end.
# A fenced code block, or a reST code directive, after the rest of the line and blank lines.
_FENCE_NEXT = re.compile(r"[^\n]*\n(?:[^\S\n]*\n)*[ \t]*"
                         r"(?:`{3,}|~{3,}|\.\.[ \t]+(?:code-block|code|sourcecode)::)")
_SENTENCE_STOP = re.compile(r"[.!?](?=\s)|[\u3002\uff01\uff1f]|\n[ \t]*\n")


def _points_ahead(text: str, end: int) -> bool:
    """Whether the sentence ending at ``end`` names what follows it (:data:`_POINTS_AHEAD`)."""
    stop = end
    while stop > 0 and text[stop - 1] in " \t\u3002.":
        stop -= 1
    begin = max((m.end() for m in _SENTENCE_STOP.finditer(text, max(0, stop - 400), stop)),
                default=max(0, stop - 400))
    return _POINTS_AHEAD.search(text, begin, stop) is not None


def _underlines(text: str, line: str, below: tuple[int, int]) -> bool:
    """Whether the line at ``below`` (its start and end in ``text``) underlines ``line`` as a
    section title. A run of backticks, tildes or colons shorter than the line above closes a
    Markdown fence or container around it; a reST underline is as long as its title."""
    adornment = _ADORNMENT.match(text, below[0], below[1])
    return bool(line.strip()) and adornment is not None and (
        adornment.group(1) not in _FENCE_CHARACTERS
        or len(text[below[0]:below[1]].strip()) >= len(line.strip()))


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
    return indent_of(line) if line.strip() else 0


def _lines_after(text: str, end: int) -> list[tuple[int, int]]:
    """(start, end) of the lines after the one holding ``end``, leading blank lines
    skipped (the introduced block may follow one blank line), up to the first line after
    the first that starts more than :data:`MAX_INTRODUCED_CHARS` after ``end``: the last one
    :func:`introduced_end` reads (a chunk's remaining lines can be many, the block is not)."""
    line_end = text.find("\n", end)
    if line_end < 0:
        return []
    out: list[tuple[int, int]] = []
    pos = line_end + 1
    while pos <= len(text):
        nxt = text.find("\n", pos)
        nxt = len(text) if nxt < 0 else nxt
        if out or text[pos:nxt].strip():
            out.append((pos, nxt))
            if len(out) > 1 and pos - end > MAX_INTRODUCED_CHARS:
                break
        pos = nxt + 1
    return out
