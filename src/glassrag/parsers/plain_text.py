"""Plain text (``.txt``): one document, or one per ``[doc:NAME]`` section.

A file whose first non-blank line is a ``[doc:NAME]`` header holds sections, each a document
with ``doc_id`` NAME and source ``FILE#NAME``, whose lines keep their numbers in the file.
Any other file holding reST explicit markup (:func:`looks_like_rst`) is read as reST.
"""

from __future__ import annotations

import re

from glassrag.parsers.reading import FileContext, ReadResult

__all__ = ["read"]

_SECTION_RE = re.compile(r"^\[doc:([^\]\s]+)\]\s*$")
# reST explicit markup no plain text writes: a directive (``.. note::``), a substitution
# definition (``.. |name| replace::``), a link target (``.. _label:``), or an interpreted
# role (:ref:`target`).
_RST_MARKUP_RE = re.compile(
    r"^[ \t]*\.\.[ \t]+(?:[\w:.-]+::|\|[^|\n]+\|[ \t]+[\w:.-]+::|_[^:\n]+:[ \t]*$)"
    r"|:[\w:.+-]+:`[^`]+`", re.MULTILINE)


def looks_like_rst(text: str) -> bool:
    """Whether plain text is reStructuredText: Sphinx projects keep the files they
    ``.. include::`` (and some keep every page, as Django does) in ``.txt`` files."""
    return _RST_MARKUP_RE.search(text) is not None


def read(text: str, stem: str, ctx: FileContext, result: ReadResult) -> None:
    """The documents of a text file (normalised ``text``) into ``result``."""
    lines = text.split("\n")
    first = next((line for line in lines if line.strip()), "")
    if not _SECTION_RE.match(first):
        if looks_like_rst(text):
            from glassrag.parsers import rst

            rst.read(text, stem, ctx, result)
            return
        result.documents.append(ctx.doc(text, title=stem, parser="text"))
        return
    headers = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _SECTION_RE.match(line))]
    seen: dict[str, int] = {}
    for n, (index, name) in enumerate(headers):
        lineno = index + 1
        if name in seen:
            result.errors.append(
                ctx.fail(f"duplicate section [doc:{name}] (first at line {seen[name]})", lineno)
            )
            continue
        seen[name] = lineno
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        body = lines[index + 1 : end]
        while body and not body[-1].strip():
            body.pop()  # the blank lines that separate sections belong to no section
        if not body:
            result.errors.append(ctx.fail(f"section [doc:{name}] has no text", lineno))
            continue
        result.documents.append(
            ctx.doc(
                "\n".join(body), doc_id=name, title=name, source=f"{ctx.relpath}#{name}",
                parser="sectioned", line_offset=lineno,
            )
        )
