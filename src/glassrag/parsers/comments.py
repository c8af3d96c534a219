"""Comments in Markdown and reStructuredText: text a reader of the rendered page never sees.

An HTML comment in Markdown (``<!-- … -->`` opening a line) and a reST comment (``..``
followed by anything that is not a directive, target, footnote, citation or substitution,
with its indented lines) hold notes to maintainers, lint switches, licence headers, and
instructions meant for a model. Like hidden HTML (:mod:`.webpage`), they are blanked before
the text is stored, unless ``ParseOptions.keep_hidden``: the comment's characters go and its
line breaks stay, so every other line keeps its number and no comment is ever searched,
shown to a model or quoted. Comments inside code (a fence, a reST literal block or code
directive) are code a page shows, and stay.
"""

from __future__ import annotations

import re

from glassrag.parsers.blocks import body_end
from glassrag.text.sentences import FENCE_LINE, closes_fence, indent_of, opens_literal

__all__ = ["blank_markdown_comments", "blank_rst_comments"]

_HTML_COMMENT = re.compile(r"^ {0,3}<!--")
_COMMENT_END = "-->"
# ".." then what makes it something other than a comment: a directive ("name::"), a target
# ("_name:", "__"), a footnote or citation ("[1]", "[#note]"), a substitution ("|name|").
_EXPLICIT = re.compile(r"^([ \t]*)\.\.(?:[ \t]+(.*))?$")
# (".. note ::", with a space, is read as the directive its author meant.)
_NOT_COMMENT = re.compile(r"[\w:.+-]+[ \t]?::|_|\[[^\]\s]+\]|\|[^|\s][^|]*\|")


def blank_markdown_comments(text: str) -> tuple[str, int]:
    """``text`` with every HTML comment that opens a line (outside fenced code) blanked, and
    how many of them held text. What follows ``-->`` on its line stays."""
    if "<!--" not in text:  # most pages: nothing to read line by line
        return text, 0
    lines = text.split("\n")
    fence: str | None = None
    count = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        opened = FENCE_LINE.match(line)
        if fence is not None:
            if opened and closes_fence(opened.group(1), fence) and not line[opened.end():].strip():
                fence = None
        elif opened:
            fence = opened.group(1)
        elif _HTML_COMMENT.match(line):
            start = line.index("<!--")
            end_line, end = _comment_end(lines, i, start + 4)
            inside = [lines[i][start + 4:], *lines[i + 1 : end_line + 1]]
            if end >= 0:  # the closing line's text up to "-->" (from the opening, on one line)
                inside[-1] = inside[-1][: end - (start + 4 if end_line == i else 0)]
            count += bool("".join(inside).strip(" \t-"))
            for n in range(i, end_line):
                lines[n] = ""
            lines[end_line] = lines[end_line][end + len(_COMMENT_END):].lstrip(" \t") \
                if end >= 0 else ""
            i = end_line  # the rest of the closing line may open another comment
            continue
        i += 1
    return "\n".join(lines), count


def _comment_end(lines: list[str], i: int, start: int) -> tuple[int, int]:
    """The line and column of the ``-->`` that closes a comment opened on line ``i`` (column
    -1 on the last line when it is never closed: it runs to the end, as CommonMark reads it)."""
    for n in range(i, len(lines)):
        column = lines[n].find(_COMMENT_END, start if n == i else 0)
        if column >= 0:
            return n, column
    return len(lines) - 1, -1


def blank_rst_comments(text: str) -> tuple[str, int]:
    """``text`` with every reST comment (its ``..`` line and indented body) blanked outside
    literal blocks and code directives, and how many of them held text."""
    if ".." not in text:  # no explicit markup at all: nothing to read line by line
        return text, 0
    lines = text.split("\n")
    count = 0
    code_indent: int | None = None  # inside a literal block or code directive's body
    i = 0
    while i < len(lines):
        line = lines[i]
        indent = indent_of(line)
        if code_indent is not None and (not line.strip() or indent > code_indent):
            i += 1
            continue
        code_indent = None
        explicit = _EXPLICIT.match(line)
        if explicit is not None and not _NOT_COMMENT.match(explicit.group(2) or ""):
            end = body_end(lines, i, indent)
            held = (explicit.group(2) or "").strip() or any(
                lines[n].strip() for n in range(i + 1, end + 1))
            count += bool(held)
            for n in range(i, end + 1):
                lines[n] = ""
            i = end + 1
            continue
        if opens_literal(line):
            code_indent = indent
        i += 1
    return "\n".join(lines), count

