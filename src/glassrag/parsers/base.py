"""What every parser shares: its result record, the limits, and a text builder.

A parser turns the bytes of one file into normalised text (``\\n`` newlines, no control
characters, lines short enough for the ``structure`` chunker) plus a position map that says
which page, slide or row each line came from. Parsers raise :class:`InputFileError` for bad
input; the registry turns anything else a third-party library raises into one as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from glassrag.errors import InputFileError
from glassrag.text.sentences import split_sentences

__all__ = [
    "Budget", "Limits", "ParseOptions", "Parsed", "TextBuilder", "clean_text", "failure_reason",
    "wrap",
]


@dataclass(frozen=True)
class Limits:
    """Bounds on what one file may cost; each is checked before the expensive step.

    ``max_unzipped_bytes`` and ``max_zip_entries`` are read from the zip central directory
    before a DOCX/PPTX is opened (a zip bomb never gets inflated); ``max_html_depth`` is the
    nesting browsers themselves cap at (Blink and WebKit: 512). ``max_html_attributes`` per
    element keeps lexbor's attribute handling (quadratic in their number) cheap;
    ``max_email_header_bytes`` (per header field, Postfix's default ``header_size_limit``)
    and ``max_email_headers_bytes`` (all fields of all parts) do the same for the standard
    library's header parser, whose cost grows faster than the length of a header.
    ``max_front_matter_chars`` and ``max_metadata_depth`` bound YAML front matter and JSONL
    metadata.
    """

    max_text_chars: int = 20_000_000
    max_unzipped_bytes: int = 200_000_000
    max_zip_entries: int = 10_000
    max_html_depth: int = 512
    max_html_attributes: int = 256
    max_email_header_bytes: int = 102_400
    max_email_headers_bytes: int = 1_000_000
    max_pages: int = 10_000
    max_front_matter_chars: int = 100_000
    max_metadata_depth: int = 64


@dataclass(frozen=True)
class Budget:
    """What parsing one file may take: wall-clock seconds and megabytes of memory beyond
    what the parser helper process holds when idle (``[ingest] parse_timeout`` and
    ``parse_memory_mb``)."""

    seconds: float = 30.0
    memory_mb: int = 2048


@dataclass(frozen=True)
class ParseOptions:
    """Knobs of the parsers. ``csv_template`` renders one CSV/TSV row; ``html_extractor``
    picks how web pages become text: ``builtin`` (selectolax) or ``trafilatura`` (see
    docs/formats.md); ``keep_hidden`` keeps content a reader never sees."""

    csv_template: str | None = None
    html_extractor: Literal["builtin", "trafilatura"] = "builtin"
    limits: Limits = field(default_factory=Limits)
    # Hidden content (HTML hidden by attribute or inline style, invisible or white PDF text,
    # hidden Word runs) is dropped and counted unless this is set.
    keep_hidden: bool = False
    # With a budget, parsing runs in the helper process of .worker (POSIX only); without
    # one, in the calling process with no bound beyond ``limits``.
    budget: Budget | None = None


@dataclass(frozen=True)
class Parsed:
    """One parsed file: normalised text, title, metadata and the position map."""

    text: str
    title: str
    metadata: dict[str, Any] = field(default_factory=dict)
    positions: dict[str, tuple[int, ...]] = field(default_factory=dict)
    line_offset: int = 0
    encoding: str | None = None
    # Hidden pieces left out of ``text``: HTML elements, PDF text runs, Word paragraphs.
    hidden_dropped: int = 0


def failure_reason(exc: BaseException) -> str:
    """One line saying why a library failed on a file: no traceback, at most 200 characters."""
    if isinstance(exc, RecursionError):
        return "structure nested too deeply"
    if isinstance(exc, MemoryError):
        return "out of memory"
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return detail if len(detail) <= 200 else detail[:197] + "..."


# C0/C1 controls other than tab and newline: artefacts of PDF fonts and legacy encodings.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\ufffe\uffff]")
_NEWLINES = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
# Prose lines are wrapped to this width: short enough for any sensible ``max_chars`` and to
# make a cited line range point at a sentence or two.
WRAP_WIDTH = 100


def clean_text(text: str) -> str:
    """Newlines to ``\\n``, form feeds and line separators to newlines, other controls out."""
    return _CONTROLS.sub("", _NEWLINES.sub("\n", text))


def _cut(text: str, width: int) -> list[str]:
    """Cut one over-long piece at spaces (in the second half of a line) or hard at ``width``.

    Linear in the length of ``text``: a 10 MB "word" costs one pass, not one copy per line.
    """
    pieces: list[str] = []
    start, end = 0, len(text)
    while end - start > width:
        stop = text.rfind(" ", start + width // 2, start + width + 1)
        stop = stop if stop > start else start + width
        pieces.append(text[start:stop].rstrip())
        start = stop
        while start < end and text[start] == " ":
            start += 1
    if start < end:
        pieces.append(text[start:])
    return pieces


def _sentences(line: str) -> list[str]:
    """Slices of ``line`` that each end a sentence (their leading spaces kept)."""
    ends = [end for _, end in split_sentences(line)][:-1]
    bounds = [0, *ends, len(line)]
    return [p for p in (line[a:b] for a, b in zip(bounds, bounds[1:], strict=False)) if p.strip()]


def wrap(line: str, width: int = WRAP_WIDTH) -> list[str]:
    """Break a line longer than ``width`` into lines of whole sentences where it can.

    Only whitespace at the breaks is lost; a sentence longer than ``width`` is cut at spaces
    (or, in text without spaces, after ``width`` characters).
    """
    if len(line) <= width:
        return [line]
    out: list[str] = []
    current = ""
    for piece in _sentences(line):
        if current and len(current) + len(piece.rstrip()) <= width:
            current += piece
            continue
        if current:
            out.append(current.rstrip())
        piece = piece.strip()
        if len(piece) > width:
            *full, current = _cut(piece, width)
            out.extend(full)
        else:
            current = piece
    if current.strip():
        out.append(current.rstrip())
    return out


class TextBuilder:
    """Collects lines and, per line, the positions (page, slide, row) they came from."""

    def __init__(self, limits: Limits, width: int = WRAP_WIDTH) -> None:
        self.lines: list[str] = []
        self.marks: dict[str, list[int]] = {}
        self.width = width
        self.limit = limits.max_text_chars
        self.size = 0

    def _push(self, line: str, where: dict[str, int]) -> None:
        self.size += len(line) + 1
        if self.size > self.limit:
            raise InputFileError(
                f"extracted text is over the {self.limit:,}-character cap; split the file"
            )
        self.lines.append(line)
        for key, value in where.items():
            self.marks.setdefault(key, []).append(value)

    def add(self, text: str, keep_spaces: bool = False, **where: int) -> None:
        """Add text as lines (wrapped); blank lines become single paragraph breaks.

        Runs of spaces collapse to one unless ``keep_spaces`` (preformatted text).
        """
        for raw in clean_text(text).split("\n"):
            line = raw.rstrip() if keep_spaces else " ".join(raw.split())
            if not line:
                self.blank(**where)
                continue
            for piece in wrap(line, self.width):
                self._push(piece, where)

    def blank(self, **where: int) -> None:
        """A paragraph break: at most one blank line in a row, none at the start."""
        if self.lines and self.lines[-1]:
            self._push("", where)

    def build(self) -> tuple[str, dict[str, tuple[int, ...]]]:
        while self.lines and not self.lines[-1]:
            self.lines.pop()
            for values in self.marks.values():
                values.pop()
        return "\n".join(self.lines), {k: tuple(v) for k, v in self.marks.items()}
