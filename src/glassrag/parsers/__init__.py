"""Parsers: every file format glassrag reads, registered by suffix in :mod:`.registry`.

Text formats (Markdown, reST, plain text, JSONL) are decoded by :mod:`.encoding` and read
into documents; binary formats (PDF, Word, PowerPoint, HTML, e-mail, CSV/TSV) are sniffed
and parsed from bytes, in the helper process of :mod:`.worker` when a budget is given.
:func:`glassrag.parsers.readers.read_file` dispatches one file.
"""

from __future__ import annotations

import os

from glassrag.parsers.base import Budget, Limits, Parsed, ParseOptions
from glassrag.parsers.registry import PARSERS, Parser, parse_in_process, parser_for

__all__ = [
    "PARSERS", "Budget", "Limits", "ParseOptions", "Parsed", "Parser", "parse_bytes",
    "parse_in_process", "parser_for", "position_runs",
]


def parse_bytes(parser: Parser, raw: bytes, stem: str, options: ParseOptions) -> Parsed:
    """Sniff, then parse a binary format; every failure comes out as a :class:`GlassragError`.

    With ``options.budget`` (what ingest passes) the work is done in the helper process of
    :mod:`.worker`, under that time and memory budget; otherwise here.
    """
    if options.budget is not None and os.name == "posix":  # RLIMIT_AS, select() on pipes
        from glassrag.parsers.worker import (
            parse_in_worker,  # not at import: the helper runs that module
        )

        return parse_in_worker(parser.name, parser.label, raw, stem, options)
    return parse_in_process(parser, raw, stem, options)


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
