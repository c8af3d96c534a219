"""Word (.docx) via python-docx: headings become ``#`` lines, tables rows of ``a | b``.

Word files carry no page numbers (pagination happens when a program lays the text out), so
positions are lines of the extracted text only. Runs formatted as hidden text (``w:vanish``,
which Word neither shows nor prints by default) are dropped unless
``ParseOptions.keep_hidden``; each paragraph that lost some counts once.
"""

from __future__ import annotations

import io
import re
from typing import Any

from glassrag.errors import needs_extra
from glassrag.parsers.base import Limits, Parsed, ParseOptions, TextBuilder
from glassrag.parsers.office import WORD_MAIN, sniff_ooxml
from glassrag.parsers.word_tables import table_rows

LABEL = "Word document (.docx)"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_OFF = frozenset({"false", "0", "off"})
_HEADING_STYLE = re.compile(r"heading (\d)$", re.IGNORECASE)


def sniff(raw: bytes, limits: Limits) -> None:
    sniff_ooxml(raw, WORD_MAIN, LABEL, limits)


def _heading_level(paragraph: Any) -> int:
    name = (paragraph.style.name or "") if paragraph.style is not None else ""
    if name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(name.strip())
    return min(int(match.group(1)), 6) if match else 0


def _drop_hidden_runs(body: Any) -> int:
    """Remove hidden runs from the document body; return the paragraphs that held one."""
    paragraphs: set[Any] = set()
    for run in body.xpath(".//w:r[w:rPr/w:vanish]"):
        vanish = run.find(f"{_W}rPr/{_W}vanish")
        if (vanish.get(f"{_W}val") or "true").lower() in _OFF:
            continue
        if "".join(run.itertext()).strip():
            paragraphs.add(next(run.iterancestors(f"{_W}p"), run))
        run.getparent().remove(run)
    return len(paragraphs)


def _table(table: Any, out: TextBuilder) -> None:
    out.blank()
    for cells in table_rows(table._tbl):
        if any(cells):
            out.add(" | ".join(cells))
    out.blank()


def parse(raw: bytes, stem: str, options: ParseOptions) -> Parsed:
    with needs_extra("parsers", "python-docx"):
        import docx
        from docx.table import Table
    document = docx.Document(io.BytesIO(raw))
    hidden = 0 if options.keep_hidden else _drop_hidden_runs(document.element.body)
    out = TextBuilder(options.limits)
    first_heading = None
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            _table(block, out)
            continue
        text = " ".join(block.text.split())
        if not text:
            continue
        level = _heading_level(block)
        if level:
            first_heading = first_heading or text
            out.blank()
            out.add(f"{'#' * level} {text}")
        else:
            out.add(text)
        out.blank()
    text, positions = out.build()
    props = document.core_properties
    metadata: dict[str, Any] = {}
    for key in ("author", "created", "modified", "subject"):
        value = getattr(props, key, None)
        if value:
            metadata[key] = value.isoformat() if hasattr(value, "isoformat") else str(value)
    title = (props.title or "").strip() or first_heading or stem
    return Parsed(text=text, title=title, metadata=metadata, positions=positions,
                  hidden_dropped=hidden)
