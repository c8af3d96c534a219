"""The ``docs`` chunker: documentation cut along its own structure.

* A chunk never crosses a section boundary and carries its heading path
  (``"Timeouts › Setting a default"``) in ``heading``; a heading with no text of its own goes
  with its first subsection.
* Code blocks, tables, lists and containers (admonitions, ``::: tip``, reST directives) stay
  whole together with the sentence that introduces them when that fits in ``max_chars``;
  otherwise they split between lines, rows or items, never inside a line that fits. The
  paragraph holding that sentence stays whole with them too, unless the chunk before has
  room for its leading sentences and not for all of it: then those finish that chunk.
* Prose too long for one chunk splits at sentence ends; a single sentence longer than
  ``max_chars`` (CJK written as one line) at line ends, then spaces, then after
  ``max_chars`` characters. Nothing is an error and nothing is dropped.
* Lines that only open or close something (a code fence, ``:::``, ``<div>``) and headings
  never make a chunk of their own: they join the neighbouring chunk even when that passes
  ``max_chars`` by their length (never past twice ``max_chars``).

Every chunk is an exact, whitespace-trimmed slice of the text; together they cover every
non-blank line. ``index_text`` (what search analyses) is the heading path followed by the
chunk's text, with reST markup reduced to what a reader sees; a chunk that does not hold its
section's heading line gets the section's own heading before its text, so every chunk of a
section weighs that heading alike; one that starts inside a table gets the table's header row
too, so its rows are found by the header's words ("Default") as the first chunk's are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import accumulate

from glassrag.parsers.blocks import STRUCTURED, Block, is_marker_line
from glassrag.records import ChunkSpan
from glassrag.text.sentences import split_sentences

__all__ = ["HEADING_SEPARATOR", "chunk_docs", "document_blocks"]

HEADING_SEPARATOR = " \u203a "


@dataclass
class _Piece:
    start: int
    end: int
    glue: bool = False  # must stay in the same chunk as the next piece
    # A heading, or the marker line opening it ("<details>"): it may push its chunk past the
    # cap rather than be alone.
    free: bool = False
    # A paragraph kept whole with the block it introduces: its leading sentences may still
    # fill the chunk before when the whole does not fit there (split only then: it costs).
    intro: bool = False


@dataclass
class _Section:
    path: str | None
    level: int
    blocks: list[Block]


class _Text:
    """The text with its line offsets, for turning line ranges into trimmed char ranges."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.offsets = [0, *accumulate(len(line) + 1 for line in self.lines)]

    def span(self, first: int, last: int) -> tuple[int, int]:
        while first < last and not self.lines[first].strip():
            first += 1
        while last > first and not self.lines[last].strip():
            last -= 1
        line = self.lines[first]
        start = self.offsets[first] + len(line) - len(line.lstrip())
        return start, self.offsets[last] + len(self.lines[last].rstrip())

    def line_of(self, pos: int) -> int:
        from bisect import bisect_right

        return bisect_right(self.offsets, pos) - 1


def document_blocks(text: str, syntax: str) -> list[Block]:
    """The blocks of ``text`` read as ``syntax`` (``"rst"``, else Markdown)."""
    if syntax == "rst":
        from glassrag.parsers.rst import rst_blocks

        return rst_blocks(text)
    from glassrag.parsers.markdown import markdown_blocks

    return markdown_blocks(text)


def chunk_docs(text: str, syntax: str, max_chars: int, line_offset: int = 0) -> list[ChunkSpan]:
    """Cut documentation ``text`` into chunks of at most ``max_chars`` (see the module doc)."""
    doc = _Text(text)
    spans: list[ChunkSpan] = []
    reduce: Callable[[str], str] | None = None
    if syntax == "rst":
        from glassrag.parsers.rst import index_text, substitutions

        reduce = partial(index_text, replacements=substitutions(text))
    for section in _sections(document_blocks(text, syntax), doc.lines):
        pieces = _section_pieces(doc, section.blocks, max_chars)
        headings = [doc.span(b.start, b.start)[0]
                    for b in section.blocks if b.kind == "heading"]
        own = section.path.rsplit(HEADING_SEPARATOR, 1)[-1] if section.path else ""
        tables = _table_headers(doc, section.blocks)
        for start, end in _absorb_markers(doc, _pack(pieces, max_chars, text), max_chars):
            body = text[start:end]
            if not body.strip():  # a block of control characters Markdown does not count as space
                continue
            # The rows of a table cut between chunks are about what its header names
            # ("Option | Default"), the later chunks' as much as the first's.
            line = doc.line_of(start)
            header = next((h for first, last, h in tables if first < line <= last), "")
            raw = f"{header}\n{body}" if header else body
            shown = reduce(raw) if reduce else raw
            if own and not any(start <= h < end for h in headings):
                # The section's own heading, as the chunk that opens the section has it in
                # its text: every chunk of a section is about what the heading names, the
                # later ones as much as the first (they hold its options, its caveats).
                shown = f"{own}\n{shown}"
            index = f"{section.path}\n{shown}" if section.path else shown
            spans.append(ChunkSpan(
                body, doc.line_of(start) + 1 + line_offset, doc.line_of(end - 1) + 1 + line_offset,
                start, end, section.path, index_text=index,
            ))
    return spans


def _table_headers(doc: _Text, blocks: list[Block]) -> list[tuple[int, int, str]]:
    """The tables among ``blocks`` as (header line, last line, header text): a chunk starting
    after the header line and by the last is cut from that table. The header is the table's
    first line holding a word, not a border."""
    out = []
    for table in blocks:
        if table.kind != "table":
            continue
        row = next((i for i in range(table.start, table.end + 1)
                    if any(ch.isalnum() for ch in doc.lines[i])), None)
        if row is not None:
            out.append((row, table.end, doc.lines[row].strip()))
    return out


# -- sections --------------------------------------------------------------------------------

def _opens(doc_lines: list[str], block: Block) -> bool:
    """A marker that opens what follows (a label, ``<div>``), not one that closes."""
    line = doc_lines[block.start].strip()
    return block.kind == "marker" and not (line.startswith("</") or set(line) <= {":"})


def _sections(blocks: list[Block], lines: list[str]) -> list[_Section]:
    sections: list[_Section] = []
    current = _Section(None, 0, [])
    stack: list[tuple[int, str]] = []
    for block in blocks:
        if block.kind != "heading":
            current.blocks.append(block)
            continue
        carry: list[Block] = []
        # A label or wrapper opening right before a heading belongs to that heading's
        # section; one closing ("</details>", ":::") stays with what it closes.
        while current.blocks and _opens(lines, current.blocks[-1]) \
                and current.blocks[-1].end + 1 >= block.start - 1:
            carry.insert(0, current.blocks.pop())
        if current.blocks:
            sections.append(current)
        while stack and stack[-1][0] >= block.level:
            stack.pop()
        stack.append((block.level, block.title))
        path = HEADING_SEPARATOR.join(title for _, title in stack if title) or None
        current = _Section(path, block.level, [*carry, block])
    if current.blocks:
        sections.append(current)
    return _merge_empty_parents(sections)


def _merge_empty_parents(sections: list[_Section]) -> list[_Section]:
    """A section that is only its heading goes with its first subsection."""
    out: list[_Section] = []
    for section in reversed(sections):
        empty = all(b.kind in ("heading", "marker") for b in section.blocks)
        if empty and out and out[-1].level > section.level:
            out[-1].blocks[:0] = section.blocks
        else:
            out.append(section)
    return out[::-1]


# -- pieces ----------------------------------------------------------------------------------

def _section_pieces(doc: _Text, blocks: list[Block], cap: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    for index, block in enumerate(blocks):
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        own = _block_pieces(doc, block, cap)
        introduces = block.kind == "text" and following is not None \
            and following.kind in STRUCTURED
        if introduces and len(own) == 1 and following is not None:
            # Keep the introducing sentence, not the whole paragraph, with what it introduces
            # when the two do not fit together.
            head = doc.span(following.start, following.start)
            if head[1] - own[0].start > cap:
                own = _sentence_pieces(doc.text, own[0].start, own[0].end, cap)
            else:
                own[0].intro = True
        if block.kind == "heading" or introduces or _opens(doc.lines, block):
            own[-1].glue = True
        if len(own) == 1 and (block.kind == "heading" or (
                _opens(doc.lines, block) and following is not None
                and following.kind == "heading")):
            own[0].free = True  # a heading, or the "<details>" line opening one
        elif block.kind == "marker" and pieces:
            pieces[-1].glue = True  # a closing marker stays with what it closes
        pieces.extend(own)
    return pieces


def _block_pieces(doc: _Text, block: Block, cap: int) -> list[_Piece]:
    start, end = doc.span(block.start, block.end)
    if end - start <= cap:
        return [_Piece(start, end)]
    if block.children:
        return _section_pieces(doc, list(block.children), cap)
    if block.cuts:
        pieces: list[_Piece] = []
        bounds = [block.start, *block.cuts, block.end + 1]
        for first, stop in zip(bounds, bounds[1:], strict=False):
            if stop <= first:
                continue
            s, e = doc.span(first, stop - 1)
            if s >= e:
                continue
            pieces.extend([_Piece(s, e)] if e - s <= cap else _sentence_pieces(doc.text, s, e, cap))
        # A fence line stays with the code line next to it.
        if block.kind == "code" and pieces:
            first_text = doc.text[pieces[0].start : pieces[0].end]
            pieces[0].glue = pieces[0].glue or is_marker_line(first_text)
        return pieces
    return _sentence_pieces(doc.text, start, end, cap)


def _sentence_pieces(text: str, start: int, end: int, cap: int) -> list[_Piece]:
    """Sentences of ``text[start:end]``; a sentence over ``cap`` cut at lines, then spaces."""
    pieces: list[_Piece] = []
    for s, e in split_sentences(text[start:end]):
        s, e = s + start, e + start
        if e - s <= cap:
            pieces.append(_Piece(s, e))
            continue
        for ls, le in _line_ranges(text, s, e):
            pieces.extend(_Piece(a, b) for a, b in _cut(text, ls, le, cap))
    return pieces


def _line_ranges(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        stop = text.find("\n", pos, end)
        stop = end if stop < 0 else stop
        s, e = pos, stop
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
        pos = stop + 1
    return out


def _cut(text: str, start: int, end: int, cap: int) -> list[tuple[int, int]]:
    """Cut one over-long line at a space in the second half of each piece, else at ``cap``."""
    out: list[tuple[int, int]] = []
    while end - start > cap:
        space = text.rfind(" ", start + cap // 2, start + cap + 1)
        stop = space if space > start else start + cap
        e = stop
        while e > start and text[e - 1].isspace():
            e -= 1
        out.append((start, e))
        start = stop
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        out.append((start, end))
    return out


# -- packing ---------------------------------------------------------------------------------

def _pack(pieces: list[_Piece], cap: int, text: str) -> list[tuple[int, int]]:
    """Greedy: each unit of glued pieces (shortened from its end until it fits) joins the
    open chunk if the chunk stays within ``cap``, else starts the next one. A unit led by a
    paragraph that introduces a block, too long for the open chunk, first gives that chunk
    the paragraph's leading sentences that fit: only the sentence that introduces the block
    must stay with it, and the sentences before it say more about the chunk they finish."""
    pieces = list(pieces)
    chunks: list[tuple[int, int]] = []
    open_start = open_end = -1
    i = 0
    while i < len(pieces):
        j = i
        while pieces[j].glue and j + 1 < len(pieces):
            j += 1
        # A heading does not count against the cap of the unit it leads: better a chunk a
        # heading line too long than a heading alone or an introduction torn from its code.
        first = i
        while first < j and pieces[first].free:
            first += 1
        while j > first and pieces[j].end - pieces[first].start > cap:
            j -= 1
        start, end = pieces[i].start, pieces[j].end
        if pieces[i].intro and open_start >= 0 and end - open_start > cap:
            pieces[i].intro = False
            sentences = _sentence_pieces(text, pieces[i].start, pieces[i].end, cap)
            if len(sentences) > 1 and sentences[0].end - open_start <= cap:
                sentences[-1].glue = True
                pieces[i:i + 1] = sentences
                continue  # the leading sentences join the open chunk one by one
        if open_start >= 0 and end - open_start <= cap:
            open_end = end
        else:
            if open_start >= 0:
                chunks.append((open_start, open_end))
            open_start, open_end = start, end
        i = j + 1
    if open_start >= 0:
        chunks.append((open_start, open_end))
    return chunks


def _absorb_markers(doc: _Text, chunks: list[tuple[int, int]],
                    cap: int) -> list[tuple[int, int]]:
    """Merge a chunk made only of marker lines (fences, ``:::``, tags) into the chunk before
    it, or else the one after it. Only into a chunk with real text, at most one marker chunk
    on each side and never past twice ``cap``: a run of nothing but markers (a file of
    fences) stays as the packer cut it."""
    markers = [_markers_only(doc, chunk) for chunk in chunks]
    out: list[tuple[int, int]] = []
    # Per chunk of out: "text" (text of its own, may still take a closing marker), "marker"
    # (only markers: may still take the text that follows) or "done".
    state: list[str] = []
    for (start, end), marker in zip(chunks, markers, strict=True):
        fits = bool(out) and end - out[-1][0] <= 2 * cap
        if fits and marker and state[-1] == "text":
            out[-1], state[-1] = (out[-1][0], end), "done"  # a closing fence joins its code
        elif fits and not marker and state[-1] == "marker":
            out[-1], state[-1] = (out[-1][0], end), "text"  # an opening one joins what follows
        else:
            out.append((start, end))
            state.append("marker" if marker else "text")
    return out


def _markers_only(doc: _Text, chunk: tuple[int, int]) -> bool:
    """Whether a chunk holds nothing but marker lines."""
    text = doc.text[chunk[0] : chunk[1]]
    return all(is_marker_line(line) for line in text.split("\n") if line.strip())
