"""PDF via pypdf: the text layer page by page; every line remembers its page.

Pages are separated by a blank line, so the ``structure`` chunker never joins two pages in
one chunk and a chunk's ``page`` (the page of its first line) is the page of all its lines.
Invisible and white text is removed first (:mod:`.pdf_hidden`) unless
``ParseOptions.keep_hidden``.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from glassrag.errors import InputFileError, needs_extra
from glassrag.parsers.base import Limits, Parsed, ParseOptions, TextBuilder
from glassrag.parsers.office import describe
from glassrag.parsers.pdf_hidden import drop_invisible_text

LABEL = "PDF"
_TAIL = 4096  # %%EOF must be this close to the end; a truncated file has lost it


def sniff(raw: bytes, limits: Limits) -> None:
    if b"%PDF-" not in raw[:1024]:
        raise InputFileError(f"not a PDF: no %PDF- header ({describe(raw)})")
    if b"%%EOF" not in raw[-_TAIL:]:
        raise InputFileError("truncated PDF: no %%EOF marker at the end of the file")


def _open(raw: bytes) -> Any:
    with needs_extra("parsers", "pypdf"):
        import pypdf
        from pypdf.errors import DependencyError
    # pypdf warns on every oddity it repairs; those are not the user's problem.
    pypdf_log = logging.getLogger("pypdf")
    if pypdf_log.level == logging.NOTSET:
        pypdf_log.setLevel(logging.ERROR)
    reader = pypdf.PdfReader(io.BytesIO(raw))
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # owner-password-only files open with an empty one
        except DependencyError as exc:
            raise InputFileError(f"encrypted PDF: cannot decrypt it here ({exc})") from exc
        if not opened:
            raise InputFileError(
                "encrypted PDF: a password is needed to read it; save a decrypted copy"
            )
    return reader


def parse(raw: bytes, stem: str, options: ParseOptions) -> Parsed:
    reader = _open(raw)
    limits = options.limits
    count = len(reader.pages)
    if count == 0:
        raise InputFileError("PDF has no pages (its page tree is missing or broken)")
    if count > limits.max_pages:
        raise InputFileError(f"PDF has {count:,} pages, over the {limits.max_pages:,}-page cap")
    out = TextBuilder(limits)
    empty: list[int] = []
    last = hidden = 0
    for number, page in enumerate(reader.pages, start=1):
        if not options.keep_hidden:
            hidden += drop_invisible_text(page, reader)
        text = page.extract_text() or ""
        if not text.strip():
            empty.append(number)
            continue
        out.blank(page=last)  # the break between pages belongs to the page before it
        out.add(text, page=number)
        last = number
    text, positions = out.build()
    if not text.strip():
        raise InputFileError("no text layer; OCR is not supported (a scanned or image-only PDF)")
    metadata: dict[str, Any] = {"pages": count}
    if empty:
        metadata["pages_without_text"] = empty
    info = reader.metadata or {}
    for key, name in (("/Author", "author"), ("/Subject", "subject"),
                      ("/CreationDate", "created")):
        value = info.get(key)
        if value:
            metadata[name] = str(value)
    title = str(info.get("/Title") or "").strip() or stem
    return Parsed(text=text, title=title, metadata=metadata, positions=positions,
                  hidden_dropped=hidden)
