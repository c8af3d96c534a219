"""CSV and TSV via the standard library: one line of text per row, from a template.

The header row names the columns; every later row becomes one line, rendered by
``ParseOptions.csv_template`` (``[ingest] csv_template``): ``{column}`` is replaced by that
column's value and ``{{``/``}}`` are literal braces. With no template a row reads
``col1: v1; col2: v2`` (empty values left out). ``line_offset`` is 1 (the header), so for a
file without line breaks inside quoted values a chunk's lines are the file's lines;
``positions["row"]`` is always the spreadsheet row (the header is row 1).
"""

from __future__ import annotations

import csv
import io
import re

from glassrag.errors import InputFileError, InvalidInput
from glassrag.parsers.base import Limits, Parsed, ParseOptions, TextBuilder
from glassrag.parsers.encoding import decode_bytes, normalize_text
from glassrag.parsers.office import describe

LABEL = "CSV/TSV"
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_ROW_WIDTH = 500  # under the structure chunker's default 600: a row stays one line if it can


def sniff(raw: bytes, limits: Limits) -> None:
    kind = describe(raw)
    if kind != "text":
        raise InputFileError(f"not {LABEL}: the content is {kind}")


def render(template: str | None, header: list[str], row: list[str]) -> str:
    """One row as text: ``template`` filled in, or ``name: value`` pairs."""
    pairs = list(zip(header, row, strict=False))  # short rows: missing cells are empty
    values = dict(pairs)
    if not template:
        return "; ".join(f"{name}: {value}" for name, value in pairs if value)

    def fill(match: re.Match[str]) -> str:
        if match.group(0) in ("{{", "}}"):
            return match.group(0)[0]
        name = match.group(1).strip()
        if name not in values and name not in header:
            raise InvalidInput(
                f"csv_template names column {{{name}}}, which is not in the header "
                f"({', '.join(header)})", field="csv_template",
            )
        return values.get(name, "")

    return _PLACEHOLDER.sub(fill, template)


def _dialect(text: str, tab: bool) -> type[csv.Dialect] | str:
    if tab:
        return "excel-tab"
    sample = text[:8192].rsplit("\n", 1)[0]
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return "excel"


def parse(raw: bytes, stem: str, options: ParseOptions, tab: bool = False) -> Parsed:
    text, encoding = decode_bytes(raw)
    text = normalize_text(text)
    dialect = _dialect(text, tab)
    rows = csv.reader(io.StringIO(text, newline=""), dialect)
    out = TextBuilder(options.limits, width=_ROW_WIDTH)
    header: list[str] = []
    count = 0
    try:
        for number, record in enumerate(rows, start=1):  # spreadsheet rows: header is 1
            cells = [" ".join(cell.split()) for cell in record]
            if not any(cells):
                continue
            if not header:
                header = [c or f"column {i}" for i, c in enumerate(cells, start=1)]
                continue
            names = header + [f"column {i}" for i in range(len(header) + 1, len(cells) + 1)]
            rendered = render(options.csv_template, names, cells)
            if rendered.strip():
                out.add(rendered, row=number)
                count += 1
    except csv.Error as exc:
        raise InputFileError(f"bad {LABEL} at line {rows.line_num}: {exc}") from exc
    body, positions = out.build()
    if not body.strip():
        raise InputFileError(f"{LABEL} file has a header but no rows with values")
    delimiter = getattr(dialect, "delimiter", "\t" if tab else ",")
    metadata = {"columns": header, "rows": count, "delimiter": delimiter}
    return Parsed(text=body, title=stem, metadata=metadata, positions=positions,
                  line_offset=1, encoding=encoding)
