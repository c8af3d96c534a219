"""Chunking strategies: cut a document's normalised text into :class:`ChunkSpan` s.

Every strategy returns slices of the text it was given (``span.text ==
text[span.char_start:span.char_end]``), trimmed of surrounding whitespace, in document
order, together covering every non-whitespace character. That is what lets a citation
point back at exact lines of the original file.

* ``docs`` — documentation (the default for Markdown and reStructuredText): chunks follow
  the section structure and carry their heading path, code blocks, tables and lists stay
  whole with the sentence that introduces them, long lines split at sentence ends; at most
  ``docs_max_chars`` per chunk. See :mod:`glassrag.ingest.doc_chunking`.
* ``structure``: blank lines end a chunk, a Markdown heading starts one, at
  most ``max_chars`` per chunk, an over-long line is an error (never truncated).
* ``sentences``: ``sentences_per_chunk`` sentences per chunk.
* ``punctuation``: sentence units packed up to ``size``; the next chunk starts
  ``overlap`` characters before the previous chunk's end, snapped forward out of whitespace
  and out of a Latin word (Han text: exact), and late enough that its first new unit fits.
  A unit longer than ``size`` is cut into pieces of ``size - overlap``, at spaces if it can.
* ``window``: fixed character windows with ``overlap``.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from glassrag.errors import ChunkingError, InvalidInput
from glassrag.records import ChunkSpan
from glassrag.settings import DOCS_MAX_CHARS
from glassrag.text.sentences import split_sentences

CHUNKERS = ("docs", "structure", "sentences", "punctuation", "window")

# (size, overlap) when the caller gives none.
_DEFAULT_SIZES = {"punctuation": (300, 50), "window": (200, 40)}

_HEADING_RE = re.compile(r"#{1,6}\s+(.*)")


@dataclass(frozen=True)
class ChunkOptions:
    """Knobs of the strategies; ``size``/``overlap`` ``None`` means the strategy's default."""

    max_chars: int = 600
    docs_max_chars: int = DOCS_MAX_CHARS
    sentences_per_chunk: int = 2
    size: int | None = None
    overlap: int | None = None

    def __post_init__(self) -> None:
        _check_int("max_chars", self.max_chars, 1)
        _check_int("docs_max_chars", self.docs_max_chars, 1)
        _check_int("sentences_per_chunk", self.sentences_per_chunk, 1)
        if self.size is not None:
            _check_int("size", self.size, 1)
        if self.overlap is not None:
            _check_int("overlap", self.overlap, 0)
        if self.size is not None and self.overlap is not None:
            _check_overlap(self.size, self.overlap)

    def size_and_overlap(self, strategy: str) -> tuple[int, int]:
        """Resolve ``(size, overlap)`` for ``punctuation`` or ``window``.

        With only ``size`` given, the default overlap shrinks to at most a fifth of it, so
        ``size=30`` alone is valid instead of clashing with a default overlap of 50.
        """
        default_size, default_overlap = _DEFAULT_SIZES[strategy]
        size = default_size if self.size is None else self.size
        overlap = min(default_overlap, size // 5) if self.overlap is None else self.overlap
        _check_overlap(size, overlap)
        return size, overlap


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(f"{name} must be an integer >= {minimum}, got {value!r}", field=name)


def _check_overlap(size: int, overlap: int) -> None:
    if overlap >= size:
        raise InvalidInput(
            f"overlap ({overlap}) must be smaller than size ({size})", field="overlap"
        )


class _Lines:
    """Maps character offsets to 1-based file line numbers."""

    def __init__(self, text: str, line_offset: int) -> None:
        self.newlines = (
            [m.start() for m in re.finditer("\n", text)] if "\n" in text else []
        )
        self.base = 1 + line_offset

    def at(self, pos: int) -> int:
        return bisect_left(self.newlines, pos) + self.base

    def span(self, text: str, start: int, end: int, heading: str | None = None) -> ChunkSpan:
        return ChunkSpan(text[start:end], self.at(start), self.at(end - 1), start, end, heading)


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())


def _structure(text: str, lines: _Lines, max_chars: int) -> list[ChunkSpan]:
    spans: list[ChunkSpan] = []
    heading: str | None = None
    chunk_heading: str | None = None
    start = end = -1  # start < 0: no chunk open
    pos = 0
    for index, line in enumerate(text.split("\n")):
        line_start, pos = pos, pos + len(line) + 1
        body = line.rstrip()
        if not body:  # a blank line ends the chunk and belongs to none
            if start >= 0:
                spans.append(lines.span(text, start, end, chunk_heading))
                start = -1
            continue
        if len(body) > max_chars:
            number = index + lines.base
            raise ChunkingError(
                f"line {number} is {len(body)} characters long, over the {max_chars}-character"
                " chunk limit; split it into shorter lines (glassrag never truncates text)",
                line=number,
                limit=max_chars,
            )
        match = _HEADING_RE.match(line)
        if match or (start >= 0 and line_start + len(body) - start > max_chars):
            if start >= 0:
                spans.append(lines.span(text, start, end, chunk_heading))
                start = -1
            if match:
                heading = match.group(1).strip().rstrip("#").strip() or None
        if start < 0:
            start, chunk_heading = line_start, heading
        end = line_start + len(body)
    if start >= 0:
        spans.append(lines.span(text, start, end, chunk_heading))
    return spans


def _sentences(text: str, per_chunk: int) -> list[tuple[int, int]]:
    sentences = split_sentences(text)
    return [
        (sentences[i][0], sentences[min(i + per_chunk, len(sentences)) - 1][1])
        for i in range(0, len(sentences), per_chunk)
    ]


def _split_long(text: str, start: int, end: int, step: int) -> list[tuple[int, int]]:
    """Cut an over-long unit into pieces of at most ``step`` chars, at a space when one
    falls in the second half of the piece, so English words stay whole."""
    pieces: list[tuple[int, int]] = []
    while end - start > step:
        cut = start + step
        space = text.rfind(" ", start + step // 2, cut + 1)
        stop = space if space > start else cut
        pieces.append(_strip(text, start, stop))
        start = _strip(text, stop, end)[0]
    pieces.append((start, end))
    return pieces


def _snap(text: str, pos: int, limit: int) -> int:
    """Move an overlap start forward, at most to ``limit``, out of whitespace and out of
    the middle of a Latin word; between Han/kana characters any boundary is fine."""
    while pos < limit and (
        text[pos].isspace() or (_latin_word(text[pos - 1]) and _latin_word(text[pos]))
    ):
        pos += 1
    return pos


def _latin_word(char: str) -> bool:
    return char.isalnum() and char < "\u2e80"


def _punctuation(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    units: list[tuple[int, int]] = []
    # The units: sentences, with ；and every newline as ends too.
    for start, end in split_sentences(text, every_line=True, semicolons=True):
        if end - start > size:
            units.extend(_split_long(text, start, end, size - overlap))
        else:
            units.append((start, end))
    bounds: list[tuple[int, int]] = []
    if not units:
        return bounds
    start, j = units[0][0], 0
    while True:
        end, j = units[j][1], j + 1
        while j < len(units) and units[j][1] - start <= size:
            end, j = units[j][1], j + 1
        bounds.append((start, end))
        if j == len(units):
            return bounds
        # The next chunk re-reads about `overlap` chars of this one (it reuses
        # buffer[-overlap:]) but must still fit unit j whole and must start after `start`.
        lo = max(end - overlap, units[j][1] - size)
        start = _snap(text, lo, units[j][0]) if lo > start else units[j][0]


def _window(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    bounds: list[tuple[int, int]] = []
    start, last_end = 0, 0
    while start < len(text):
        end = min(len(text), start + size)
        s, e = _strip(text, start, end)
        # A trimmed window that ends inside the previous one adds nothing: skip it.
        if s < e and e > last_end:
            bounds.append((s, e))
            last_end = e
        if end == len(text):
            break
        start = end - overlap
    return bounds


def chunk_text(
    text: str,
    strategy: str = "structure",
    *,
    line_offset: int = 0,
    options: ChunkOptions | None = None,
    syntax: str = "markdown",
) -> list[ChunkSpan]:
    """Cut normalised ``text`` (``\\n`` newlines only) into chunks with ``strategy``.

    ``line_offset`` is added to every line number (lines of the file before ``text``);
    ``syntax`` (``"markdown"`` or ``"rst"``) is how the ``docs`` strategy reads the text.
    Raises :class:`~glassrag.errors.InvalidInput` for an unknown strategy or bad options and
    :class:`~glassrag.errors.ChunkingError` for a ``structure`` line over ``max_chars``.
    """
    if strategy not in CHUNKERS:
        raise InvalidInput(
            f"unknown chunker {strategy!r}; choose one of: {', '.join(CHUNKERS)}",
            field="chunker",
        )
    options = options or ChunkOptions()
    if strategy == "docs":
        from glassrag.ingest.doc_chunking import chunk_docs

        return chunk_docs(text, syntax, options.docs_max_chars, line_offset)
    lines = _Lines(text, line_offset)
    if strategy == "structure":
        return _structure(text, lines, options.max_chars)
    if strategy == "sentences":
        bounds = _sentences(text, options.sentences_per_chunk)
    elif strategy == "punctuation":
        bounds = _punctuation(text, *options.size_and_overlap(strategy))
    else:
        bounds = _window(text, *options.size_and_overlap(strategy))
    return [lines.span(text, start, end) for start, end in bounds]
