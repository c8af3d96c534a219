"""Word table rows as cell texts, read from the XML directly.

python-docx answers the same questions (``row.cells``, ``cell.text``) with one XPath query
per cell property, about 100 us a cell: a legitimate 300 x 300 table took 10 to 30 s, close to
the parse budget. This walks the ``w:tbl`` element once and gives the same texts as
python-docx (whitespace collapsed): a cell's text is that of its own paragraphs (the ``w:r``
and ``w:hyperlink`` children of each ``w:p``; ``w:t``, tabs and line breaks, non-breaking
hyphens), a cell spanning columns is one cell, and a cell continuing a vertical merge
(``w:vMerge`` without ``restart``) repeats the text of the cell it continues. Where
python-docx would raise for a malformed merge (a continuation in the first row, or under no
cell), the cell is empty instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["table_rows"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_TR, _TC, _P, _R, _LINK, _T, _BR = (f"{_W}{n}" for n in ("tr", "tc", "p", "r", "hyperlink",
                                                         "t", "br"))
_TCPR, _SPAN, _VMERGE, _VAL = (f"{_W}{n}" for n in ("tcPr", "gridSpan", "vMerge", "val"))
_SPACES = {f"{_W}tab": " ", f"{_W}ptab": " ", f"{_W}cr": " ", f"{_W}noBreakHyphen": "-"}


def _run_text(run: Any) -> str:
    parts = []
    for element in run:
        tag = element.tag
        if tag == _T:
            parts.append(element.text or "")
        elif tag == _BR:  # a line break; page and column breaks are no text
            kind = element.get(f"{_W}type") or "textWrapping"
            parts.append(" " if kind == "textWrapping" else "")
        else:
            parts.append(_SPACES.get(tag, ""))
    return "".join(parts)


def _paragraph_text(paragraph: Any) -> str:
    parts = []
    for child in paragraph:
        if child.tag == _R:
            parts.append(_run_text(child))
        elif child.tag == _LINK:
            parts.extend(_run_text(run) for run in child if run.tag == _R)
    return "".join(parts)


def _cell_text(tc: Any) -> str:
    return " ".join(" ".join(_paragraph_text(p) for p in tc if p.tag == _P).split())


def _int(element: Any, default: int) -> int:
    try:
        return int(element.get(_VAL))
    except (TypeError, ValueError):
        return default


def _layout(tc: Any) -> tuple[int, bool]:
    """``(columns spanned, continues a vertical merge)`` from the cell's ``w:tcPr``."""
    span, continues = 1, False
    properties = tc.find(_TCPR)
    if properties is not None:
        for element in properties:
            if element.tag == _SPAN:
                span = max(1, _int(element, 1))
            elif element.tag == _VMERGE:
                continues = (element.get(_VAL) or "continue") == "continue"
    return span, continues


def table_rows(tbl: Any) -> Iterator[list[str]]:
    """The cell texts of each row of a ``w:tbl`` element, merged cells once."""
    above: dict[int, tuple[Any, str]] = {}  # grid column -> (source cell, text)
    for tr in tbl.iterchildren(_TR):
        before = tr.find(f"{_W}trPr/{_W}gridBefore")
        offset = _int(before, 0) if before is not None else 0
        covered: dict[int, tuple[Any, str]] = {}
        cells: list[str] = []
        previous = None
        for tc in tr.iterchildren(_TC):
            span, continues = _layout(tc)
            source = above.get(offset, (None, "")) if continues else (tc, _cell_text(tc))
            for column in range(offset, offset + span):
                covered[column] = source
            offset += span
            if source[0] is not None and source[0] is previous:
                continue  # one cell seen through two continuations: python-docx lists it once
            previous = source[0]
            cells.append(source[1])
        above = covered
        yield cells
