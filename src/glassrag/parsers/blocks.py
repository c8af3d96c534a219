"""The block structure of a documentation file, as the documentation chunker reads it.

The Markdown and reStructuredText readers (:mod:`.markdown`, :mod:`.rst`) both turn a file's
text into a flat list of :class:`Block` s in line order: headings, prose, code, tables, lists,
containers (admonitions, ``::: tip``), markers (lines that only wrap or label others). Line
numbers are 0-based indexes into ``text.split("\\n")``, so every block is an exact range of
the file's own lines.
"""

from __future__ import annotations

import html
import re
import string
from dataclasses import dataclass

from glassrag.text.links import IMAGE, LINK, link_text
from glassrag.text.sentences import PYMDOWN_MARKER, indent_of

__all__ = ["STRUCTURED", "Block", "body_end", "clean_heading", "is_marker_line", "trim"]

#: Kinds that stay whole with the sentence that introduces them.
STRUCTURED = frozenset({"code", "table", "list", "container", "directive", "quote"})


@dataclass(frozen=True)
class Block:
    """One block: ``kind``, first and last line (inclusive), and where it may be cut.

    ``cuts`` are the lines at which a block too long for one chunk may be split (a code
    line, a table row, a list item); a block without cuts splits at sentence ends.
    ``children`` are the blocks inside a container, whose first and last lines are its
    markers. ``level``/``title`` describe a heading.
    """

    kind: str
    start: int
    end: int
    level: int = 0
    title: str = ""
    cuts: tuple[int, ...] = ()
    children: tuple[Block, ...] = ()


# Lines that carry no text of their own: code fences, container markers (``::: tip``,
# ``/// note | Title``, ``!!! note``), HTML wrapper tags.
_MARKER_LINE = re.compile(
    rf"[ \t]*(?:(?:`{{3,}}|~{{3,}})[^`]*|:{{3,}}.*|{PYMDOWN_MARKER}.*"
    r"|</?[A-Za-z][\w-]*(?:\s[^>]*)?/?>|(?:!!!|\?\?\?\+?)[ \t]+\S.*)[ \t]*"
)
# A heading's trailing anchor or attributes, which no reader says: "{#custom-id}", Python-
# Markdown's "{: #id .class }", docsify's ":id=custom-id" and "{docsify-ignore}".
_ANCHOR = re.compile(r"(?:\s*\{:?[ \t]*[#.][^}]*\}|\s+:id=[\w.-]+|\s*\{docsify-[\w-]+\})+\s*#*\s*$")
_TAG = re.compile(r"<[^>]+>")
# A reST role (":mod:`apscheduler.jobstores`", ":py:class:`~pytest.Item`", ":ref:`pdb
# <python:library/pdb>`"): the reader sees its text, without the "~" or "!" that shortens or
# unlinks it, or the target after an explicit title.
_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`[~!]?([^`<]*?)\s*(?:<[^`>]*>)?`")
# What markup cannot touch: a code span's text ("`__init__`", "`Map<K, V>`") and a
# backslash-escaped character ("\_\_init\_\_"), which CommonMark shows as written.
_LITERAL_TEXT = re.compile(r"`+([^`]+)`+|\\([!-/:-@\[-`{-~])")
_HIDDEN = 0xF0000  # private-use plane: stands in for a protected character meanwhile
_HIDDEN_RE = re.compile(f"[{chr(_HIDDEN + 0x21)}-{chr(_HIDDEN + 0x7E)}]")
_MARKUP = re.compile(r"\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")


def body_end(lines: list[str], i: int, indent: int) -> int:
    """The last line of the body indented deeper than ``indent`` that follows line ``i``
    (blank lines inside it included), or ``i`` if none: a reST directive's or comment's
    body, a literal block, an autodoc line's options."""
    last = i
    for n in range(i + 1, len(lines)):
        if lines[n].strip():
            if indent_of(lines[n]) <= indent:
                break
            last = n
    return last


def is_marker_line(line: str) -> bool:
    """Whether a line only opens or closes something (a fence, ``:::``, ``<div>``)."""
    return _MARKER_LINE.fullmatch(line) is not None


def clean_heading(text: str) -> str:
    """A heading as a reader would say it: no anchor, tags, images, link targets, emphasis or
    closing hashes."""
    if "](" in text or "][" in text or ">`_" in text:
        text = LINK.sub(link_text, IMAGE.sub("", text))
    text = _ANCHOR.sub("", text)
    if "`" in text or "\\" in text:
        text = _LITERAL_TEXT.sub(_hidden, _ROLE.sub(r"`\1`", text))
    text = _MARKUP.sub("", _TAG.sub("", text))
    if "&" in text:
        text = html.unescape(text)  # "Contributing &amp; Support"
    if _HIDDEN_RE.search(text):
        text = _HIDDEN_RE.sub(lambda m: chr(ord(m.group()) - _HIDDEN), text)
    return " ".join(text.split()).strip("# ").strip()


def _hidden(match: re.Match[str]) -> str:
    """A code span's text or an escaped character out of reach of emphasis, tags and
    entities: each of its ASCII punctuation characters moved to the private-use plane."""
    if match.group(2) is not None:
        return chr(_HIDDEN + ord(match.group(2)))
    return "".join(chr(_HIDDEN + ord(ch)) if ch in string.punctuation else ch
                   for ch in match.group(1))


def trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """Shrink an inclusive line range so it neither starts nor ends with a blank line."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end].strip():
        end -= 1
    return start, end
