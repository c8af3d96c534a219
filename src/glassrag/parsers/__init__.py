"""Parsers for non-text formats, chosen by suffix and confirmed by sniffing the content.

A suffix only nominates a parser; the parser's ``sniff`` must then accept the bytes (``%PDF``
header, an OOXML zip whose ``[Content_Types].xml`` names the right main part, markup, RFC 822
headers, text), so a mislabelled file is reported as what it is instead of being misread.
Third-party libraries are imported when a file needs them: without the ``[parsers]`` extra,
only those files fail, each with the install command.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from glassrag.errors import GlassragError, InputFileError
from glassrag.parsers import mail, pdf, slides, table, webpage, word
from glassrag.parsers.base import Budget, Limits, Parsed, ParseOptions, failure_reason

__all__ = [
    "PARSERS", "Budget", "Limits", "ParseOptions", "Parsed", "Parser", "parse_bytes",
    "parse_in_process", "parser_for", "position_runs",
]


@dataclass(frozen=True)
class Parser:
    """One format: the ``SourceDocument.parser`` name, a label, suffixes, sniff and parse."""

    name: str
    label: str
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes, Limits], None]
    parse: Callable[[bytes, str, ParseOptions], Parsed]


PARSERS: tuple[Parser, ...] = (
    Parser("pdf", pdf.LABEL, (".pdf",), pdf.sniff, pdf.parse),
    Parser("docx", word.LABEL, (".docx",), word.sniff, word.parse),
    Parser("pptx", slides.LABEL, (".pptx",), slides.sniff, slides.parse),
    Parser("html", webpage.LABEL, (".html", ".htm", ".xhtml"), webpage.sniff, webpage.parse),
    Parser("eml", mail.LABEL, (".eml",), mail.sniff, mail.parse),
    Parser("csv", table.LABEL, (".csv",), table.sniff, table.parse),
    Parser("tsv", table.LABEL, (".tsv", ".tab"), table.sniff, partial(table.parse, tab=True)),
)
_BY_SUFFIX = {suffix: p for p in PARSERS for suffix in p.suffixes}


def parser_for(suffix: str) -> Parser | None:
    """The parser registered for a (case-insensitive) suffix such as ``".pdf"``."""
    return _BY_SUFFIX.get(suffix.lower())


def parse_bytes(parser: Parser, raw: bytes, stem: str, options: ParseOptions) -> Parsed:
    """Sniff, then parse; every failure comes out as a :class:`GlassragError`.

    With ``options.budget`` (what ingest passes) the work is done in the helper process of
    :mod:`.worker`, under that time and memory budget; otherwise here.
    """
    if options.budget is not None and os.name == "posix":  # RLIMIT_AS, select() on pipes
        from glassrag.parsers.worker import (
            parse_in_worker,  # not at import: the helper runs that module
        )

        return parse_in_worker(parser.name, parser.label, raw, stem, options)
    return parse_in_process(parser, raw, stem, options)


def parse_in_process(parser: Parser, raw: bytes, stem: str, options: ParseOptions,
                     out_of_memory: str = "out of memory") -> Parsed:
    """Sniff and parse in this process.

    Libraries raise all sorts of things for broken files (``KeyError`` from a zip without a
    part, ``ValueError`` from pypdf, ``RecursionError`` from a cyclic object graph): each
    becomes an :class:`InputFileError` naming the format, so one bad file never stops a batch.
    """
    try:
        parser.sniff(raw, options.limits)
        return parser.parse(raw, stem, options)
    except GlassragError:
        raise
    except MemoryError:
        raise InputFileError(f"cannot parse {parser.label}: {out_of_memory}") from None
    except RecursionError as exc:
        raise InputFileError(f"cannot parse {parser.label}: {failure_reason(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - any library failure is a bad-file error
        raise InputFileError(f"cannot parse {parser.label}: {failure_reason(exc)}") from exc


def position_runs(
    positions: dict[str, tuple[int, ...]], line_offset: int = 0
) -> dict[str, list[dict[str, int]]]:
    """Compress a position map into runs: ``{"page": [{"page": 1, "line_start": 1, ...}]}``.

    Line numbers are the file line numbers chunks use (``line_offset`` added).
    """
    runs: dict[str, list[dict[str, int]]] = {}
    for key, values in positions.items():
        out: list[dict[str, int]] = []
        for index, value in enumerate(values, start=1 + line_offset):
            if out and out[-1][key] == value and out[-1]["line_end"] == index - 1:
                out[-1]["line_end"] = index
            else:
                out.append({key: value, "line_start": index, "line_end": index})
        runs[key] = out
    return runs
