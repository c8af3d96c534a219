"""PowerPoint (.pptx) via python-pptx: one section per slide, its title as the heading.

Every line carries its slide number (``positions["slide"]``); slides are separated by a
blank line and start with a ``#`` heading, so a chunk never spans two slides. Speaker notes
follow the slide's own text under a ``Notes:`` line.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from glassrag.errors import needs_extra
from glassrag.parsers.base import Limits, Parsed, ParseOptions, TextBuilder
from glassrag.parsers.office import SLIDES_MAIN, sniff_ooxml

LABEL = "PowerPoint presentation (.pptx)"


def sniff(raw: bytes, limits: Limits) -> None:
    sniff_ooxml(raw, SLIDES_MAIN, LABEL, limits)


def _shapes(shapes: Any) -> Iterator[Any]:
    """Every shape, group members included, in document order (no recursion)."""
    stack = list(reversed(list(shapes)))
    while stack:
        shape = stack.pop()
        members = getattr(shape, "shapes", None)  # a group shape
        if members is not None:
            stack.extend(reversed(list(members)))
        else:
            yield shape


def _shape_lines(shape: Any) -> Iterator[str]:
    if getattr(shape, "has_table", False):
        for row in shape.table.rows:
            cells = [" ".join(cell.text.split()) for cell in row.cells]
            if any(cells):
                yield " | ".join(cells)
    elif getattr(shape, "has_text_frame", False):
        for paragraph in shape.text_frame.paragraphs:
            yield paragraph.text


def parse(raw: bytes, stem: str, options: ParseOptions) -> Parsed:
    with needs_extra("parsers", "python-pptx"):
        import pptx
    deck = pptx.Presentation(io.BytesIO(raw))
    out = TextBuilder(options.limits)
    first_title = None
    previous = 0
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        first_title = first_title or title or None
        out.blank(slide=previous)
        out.add(f"# {title or f'Slide {number}'}", slide=number)
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            for line in _shape_lines(shape):
                out.add(line, slide=number)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                out.add("Notes:", slide=number)
                out.add(notes.text, slide=number)
        previous = number
    text, positions = out.build()
    props = deck.core_properties
    metadata: dict[str, Any] = {"slides": len(deck.slides)}
    if props.author:
        metadata["author"] = props.author
    title = (props.title or "").strip() or first_title or stem
    return Parsed(text=text, title=title, metadata=metadata, positions=positions)
