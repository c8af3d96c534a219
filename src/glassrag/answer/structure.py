"""What a line of documentation is about beyond its own words: the header of the table it
is a row of, the name that a reST object directive documents, for the lines of its body, and
the label of the content tab it is in.

A row ``8.4             3.9+`` says nothing until its header ``pytest version  min. Python
version`` is read with it, and the body of ``.. envvar:: BUILD_NUMBER`` ("When set to a
non-empty value, pytest acknowledges ...") never repeats the name it describes. The
answerer credits these words the way it credits a chunk's heading path, and may quote the
directive's name as the title of the description under it.

Everything here is a pure function of the chunk text (lines as written, so line ranges stay
exact); a table or directive cut by a chunk boundary loses what lies in the other chunk.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from glassrag.answer.tabs import may_hold_tabs, tab_bodies
from glassrag.text.sentences import (
    FIELD,
    LIST_TABLE,
    LIST_TABLE_ROW,
    SIMPLE_TABLE_BORDER,
    indent_of,
)

# A Markdown table's delimiter row: | --- | :---: | (the outer pipes optional). GFM needs one
# hyphen in a cell, not three: Chinese component docs write "| :-- | :-- |".
_DELIMITER = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$")
# reST: a simple table's border (two columns or more) and a grid table's borders.
_SIMPLE_BORDER = re.compile(rf"[ \t]*{SIMPLE_TABLE_BORDER}")
_GRID_BORDER = re.compile(r"[ \t]*\+(?:-+\+)+[ \t]*$")
_GRID_HEADER_END = re.compile(r"[ \t]*\+(?:=+\+)+[ \t]*$")
# reST list and CSV tables: the directive line, its options (the header rows' count, the
# CSV header) and the line opening a list table's row.
_LIST_TABLE = re.compile(LIST_TABLE)
_HEADER_ROWS = re.compile(r"[ \t]*:header-rows:[ \t]*(\d+)")
_CSV_HEADER = re.compile(r"[ \t]*:header:[ \t]*\S")
_OPTION = re.compile(rf"[ \t]*{FIELD}")
_ROW_START = re.compile(LIST_TABLE_ROW)
# ".. name:: argument": a directive with an argument on its first line.
_DIRECTIVE = re.compile(r"([ \t]*)\.\.[ \t]+([\w:.-]+)::[ \t]+(\S[^\n]*)$")
# Directives that hold text, code, media or structure rather than describe a named thing;
# any other directive with an argument (envvar, option, confval, function, class, a domain's
# py:method or CMake's variable) documents the thing its argument names. (Sphinx reads
# ``.. class::`` as the Python class it documents; docutils' class directive is its
# ``rst-class``.)
_NOT_OBJECTS = frozenset({
    "admonition", "attention", "caution", "danger", "error", "hint", "important", "note",
    "tip", "warning", "seealso", "todo", "versionadded", "versionchanged", "deprecated",
    "versionremoved", "code", "code-block", "sourcecode", "literalinclude", "highlight",
    "math", "image", "figure", "toctree", "include", "contents", "only", "ifconfig",
    "rubric", "topic", "sidebar", "tabs", "tab", "group-tab", "code-tab", "list-table",
    "csv-table", "table", "raw", "meta", "index", "default-role", "default-domain",
    "glossary", "productionlist", "centered", "hlist", "container", "compound", "epigraph",
    "highlights", "pull-quote", "line-block", "parsed-literal", "sectionauthor",
    "moduleauthor", "codeauthor", "currentmodule", "module", "py:module", "py:currentmodule",
    "program", "role", "rst-class", "title", "header", "footer", "sectnum", "unicode", "date",
    "replace", "plot", "doctest", "testcode", "testoutput", "testsetup", "testcleanup",
})


# The notes that say when something changed: their body ("Will be removed in 3.2.") is read
# with the note's line, as the page shows it ("Deprecated since version 3.1").
_VERSION_NOTES = frozenset({"versionadded", "versionchanged", "deprecated", "versionremoved"})


@dataclass(frozen=True)
class LineContext:
    """What one line is about beyond its words: ``about`` (offsets into the text of the
    header row or directive name it is read with); ``title``, the line index of the object
    directive whose body holds it (or -1), and ``name``, the offsets of the name that
    directive documents."""

    about: tuple[tuple[int, int], ...] = ()
    title: int = -1
    name: tuple[int, int] | None = None


def line_starts(text: str) -> list[int]:
    """The offset at which each line of ``text`` starts."""
    starts = [0]
    pos = text.find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def line_contexts(text: str) -> dict[int, LineContext]:
    """For each line (by index) that is a table row under a header, a line of an object
    directive's body or a line inside a content tab (:mod:`glassrag.answer.tabs`): its
    :class:`LineContext`. Lines with none are absent."""
    if ("|" not in text and "==" not in text and ".. " not in text and "+-" not in text
            and not may_hold_tabs(text)):
        # No table, directive or tab: the common case, decided without splitting lines.
        return {}
    lines = text.split("\n")
    starts = line_starts(text)
    spans = [(s, s + len(line)) for s, line in zip(starts, lines, strict=True)]
    out: dict[int, LineContext] = {}
    for index, header in _table_rows(lines):
        out[index] = LineContext(about=tuple(spans[h] for h in header))
    for index, directive, argument in _directive_bodies(lines, starts):
        previous = out.get(index, LineContext())
        if directive < 0:  # a version note: words to read with, no name
            out[index] = replace(previous, about=previous.about + (argument,))
        else:
            out[index] = LineContext(previous.about + (argument,), directive, argument)
    for index, label in tab_bodies(lines, starts):
        previous = out.get(index, LineContext())
        out[index] = replace(previous, about=previous.about + (label,))
    return out


def directive_argument(line: str) -> tuple[int, int] | None:
    """The span, within ``line``, of the name an object directive documents
    (``.. envvar:: BUILD_NUMBER`` gives the span of ``BUILD_NUMBER``), or None."""
    match = _DIRECTIVE.match(line)
    if match is None or match.group(2).lower() in _NOT_OBJECTS:
        return None
    return match.start(3), len(line.rstrip())


@functools.lru_cache(maxsize=256)
def table_row_starts(text: str) -> frozenset[int]:
    """The offsets at which the rows of ``text``'s tables with a header start."""
    if "|" not in text and "==" not in text and "-table::" not in text and "+-" not in text:
        return frozenset()
    starts = line_starts(text)
    return frozenset(starts[index] for index, _ in _table_rows(text.split("\n")))


def _table_rows(lines: Sequence[str]) -> list[tuple[int, list[int]]]:
    """(row line index, header line indices) for every row of a table with a header."""
    out: list[tuple[int, list[int]]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _DELIMITER.match(line) and index and "|" in lines[index - 1]:
            header = [index - 1]
            index += 1
            while index < len(lines) and "|" in lines[index] and lines[index].strip():
                out.append((index, header))
                index += 1
            continue
        if _SIMPLE_BORDER.match(line) and (not index or not lines[index - 1].strip()):
            index = _simple_table(lines, index, out)
            continue
        if _GRID_BORDER.match(line) and (not index or not lines[index - 1].strip()):
            index = _grid_table(lines, index, out)
            continue
        table = _LIST_TABLE.match(line) if "-table::" in line else None
        if table is not None:
            read = _list_table if table.group(1) == "list" else _csv_table
            index = read(lines, index, out)
            continue
        index += 1
    return out


def _csv_table(lines: Sequence[str], top: int,
               out: list[tuple[int, list[int]]]) -> int:
    """Read the reST CSV table whose directive is line ``top``; returns the line after it.
    Its ``:header:`` option is the header of every row (a line of its body)."""
    indent = indent_of(lines[top])
    header: list[int] = []
    index = top + 1
    while index < len(lines):
        line = lines[index]
        if line.strip() and indent_of(line) <= indent:
            break
        if _CSV_HEADER.match(line):
            header = [index]
        elif header and line.strip() and not _OPTION.match(line):
            out.append((index, header))
        index += 1
    return index


def _list_table(lines: Sequence[str], top: int,
                out: list[tuple[int, list[int]]]) -> int:
    """Read the reST list table whose directive is line ``top``; returns the line after it.
    Its first ``:header-rows:`` rows (``* - cell`` with the ``- cell`` lines under it) are
    the header of the others; a row is keyed by its first line."""
    indent = indent_of(lines[top])
    wanted, rows, index = 0, list[list[int]](), top + 1
    while index < len(lines):
        line = lines[index]
        if line.strip() and indent_of(line) <= indent:
            break
        option = _HEADER_ROWS.match(line)
        if option is not None and not rows:
            wanted = int(option.group(1))
        elif _ROW_START.match(line):
            rows.append([index])
        elif rows and line.strip():
            rows[-1].append(index)
        index += 1
    if 0 < wanted < len(rows):
        header = [i for row in rows[:wanted] for i in row]
        out.extend((row[0], header) for row in rows[wanted:])
    return index


def _simple_table(lines: Sequence[str], top: int,
                  out: list[tuple[int, list[int]]]) -> int:
    """Read the reST simple table whose top border is line ``top``; returns the line after
    it. With three borders, the rows between the first two are the header."""
    borders = [top]
    index = top + 1
    while index < len(lines):
        if _SIMPLE_BORDER.match(lines[index]):
            borders.append(index)
            if index + 1 >= len(lines) or not lines[index + 1].strip():
                break
        elif not lines[index].strip() and len(borders) >= 2:
            break
        index += 1
    if len(borders) >= 3:
        header = [i for i in range(borders[0] + 1, borders[1]) if lines[i].strip()]
        out.extend((i, header) for i in range(borders[1] + 1, borders[-1]) if lines[i].strip()
                   and not _SIMPLE_BORDER.match(lines[i]))
    return index + 1


def _grid_table(lines: Sequence[str], top: int,
                out: list[tuple[int, list[int]]]) -> int:
    """Read the reST grid table whose top border is line ``top``; returns the line after
    it. The rows above its ``+===+`` line are the header."""
    index = top + 1
    header: list[int] = []
    body = False
    while index < len(lines) and lines[index].strip().startswith(("|", "+")):
        line = lines[index]
        if _GRID_HEADER_END.match(line):
            body = True
        elif line.strip().startswith("|"):
            if body:
                out.append((index, header))
            else:
                header.append(index)
        index += 1
    return index


def _directive_bodies(lines: Sequence[str], starts: Sequence[int],
                      ) -> list[tuple[int, int, tuple[int, int]]]:
    """(line index, directive line index, argument span) for every line of the body of an
    object directive: the lines after it indented deeper than it, blank lines between. For
    the body of a version note the directive index is -1 and the span is the note's name and
    argument (``deprecated:: 3.1``)."""
    out: list[tuple[int, int, tuple[int, int]]] = []
    for index, line in enumerate(lines):
        argument = directive_argument(line) if ".. " in line else None
        note = _version_note(line) if argument is None and ".. " in line else None
        argument = argument or note
        if argument is None:
            continue
        indent = indent_of(line)
        span = (starts[index] + argument[0], starts[index] + argument[1])
        body = index + 1
        while body < len(lines):
            text = lines[body]
            if text.strip() and indent_of(text) <= indent:
                break
            if text.strip():
                out.append((body, -1 if note else index, span))
            body += 1
    return out


def _version_note(line: str) -> tuple[int, int] | None:
    """The span, within ``line``, of a version note's name and argument
    (``.. deprecated:: 3.1`` gives that of ``deprecated:: 3.1``), or None."""
    match = _DIRECTIVE.match(line)
    if match is None or match.group(2).lower() not in _VERSION_NOTES:
        return None
    return match.start(2), len(line.rstrip())
