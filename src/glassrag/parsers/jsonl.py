"""JSON Lines (``.jsonl``): one document per line, ``{"doc_id", "text", ...}``.

A UTF-8 file is read record by record (:func:`stream`), so ``max_bytes`` caps each record,
not the file; anything else (UTF-16/32, binary content) is decoded whole first and read by
:func:`read`. A bad line fails alone, named ``FILE:LINE``; the other lines are still read.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glassrag.parsers.encoding import BINARY_SNIFF_BYTES, normalize_text, utf8_lines_readable
from glassrag.parsers.fields import take_fields
from glassrag.parsers.reading import FileContext, ReadResult
from glassrag.records import SourceDocument

__all__ = ["read", "stream"]


def read(text: str, stem: str, ctx: FileContext, result: ReadResult) -> None:
    """The records of a whole decoded file (normalised ``text``) into ``result``."""
    # split("\n"), not splitlines(): JSON strings may hold U+2028, which is not a line end.
    _jsonl_lines(text.split("\n"), ctx, result)


def stream(path: Path, ctx: FileContext, result: ReadResult, max_bytes: int) -> bool:
    """Read a UTF-8 JSONL file record by record, so ``max_bytes`` caps each record (line),
    not the file: an export of 100k records is read however large it is.

    Returns False, reading nothing, for what the whole-file path reports better: anything
    but a regular non-empty file, UTF-16/32 (BOM) and binary content.
    """
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return False
        with open(path, "rb") as fh:
            if not utf8_lines_readable(fh.read(BINARY_SNIFF_BYTES)):
                return False
            fh.seek(0)
            ctx.encoding = "utf-8"
            _jsonl_lines(_record_lines(fh, max_bytes), ctx, result)
    except OSError as exc:
        result.errors.append(ctx.fail(f"cannot read: {exc.strerror or exc}"))
    return True


@dataclass(frozen=True)
class _BadLine:
    """A JSONL line that could not even be read as text (too long, not UTF-8)."""

    message: str


def _record_lines(fh: Any, max_bytes: int) -> Iterator[str | _BadLine]:
    """The file's lines (``\\n``-separated) as text; a line over ``max_bytes`` is skipped
    without ever being held in memory whole."""
    first = True
    while True:
        raw = fh.readline(max_bytes + 2)
        if not raw:
            return
        if len(raw) > max_bytes + 1 or (len(raw) == max_bytes + 2 and not raw.endswith(b"\n")):
            while raw and not raw.endswith(b"\n"):  # drain the rest of the long line
                raw = fh.readline(1 << 20)
            yield _BadLine(f"record is over the {max_bytes:,}-byte cap; the cap is "
                           "configurable ([ingest] max_file_bytes in glassrag.toml)")
            continue
        if first:
            raw, first = raw.removeprefix(b"\xef\xbb\xbf"), False
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield _BadLine(f"not valid UTF-8 (byte {exc.start + 1} of the line); "
                           "save the file as UTF-8")


def _jsonl_lines(lines: Iterable[str | _BadLine], ctx: FileContext, result: ReadResult) -> None:
    seen: dict[str, int] = {}
    content = False
    for lineno, line in enumerate(lines, start=1):
        if isinstance(line, _BadLine):
            result.errors.append(ctx.fail(f"line {lineno}: {line.message}", lineno))
            content = True
            continue
        if not line or line.isspace():  # (not line.strip(), without copying the line)
            continue
        content = True
        try:
            doc = _jsonl_record(line, ctx)
        except ValueError as exc:
            result.errors.append(ctx.fail(f"line {lineno}: {exc}", lineno))
            continue
        if doc.doc_id in seen:
            message = f"duplicate doc_id {doc.doc_id!r} (first on line {seen[doc.doc_id]})"
            result.errors.append(ctx.fail(f"line {lineno}: {message}", lineno))
            continue
        seen[doc.doc_id] = lineno
        result.documents.append(doc)
    if not content:
        result.errors.append(ctx.fail("empty file (only whitespace)"))


def _json_depth(line: str) -> int:
    """The deepest bracket nesting of a JSON text, brackets inside strings not counted."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in line:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "}]":
            depth -= 1
    return deepest


def _jsonl_record(line: str, ctx: FileContext) -> SourceDocument:
    # Nesting past the cap needs that many brackets: counting them (C speed) spares the scan
    # on almost every line. Checked before parsing, so the outcome never depends on how deep
    # the interpreter's recursion limit lets json go.
    depth_cap = ctx.limits.max_metadata_depth
    if line.count("{") + line.count("[") > depth_cap and _json_depth(line) > depth_cap:
        raise ValueError(f"nested deeper than {depth_cap} levels")
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    for key in ("doc_id", "text"):
        if record.get(key) is None:
            raise ValueError(f"missing required field '{key}'")
    text = record.pop("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("'text' must be a non-empty string")
    fields = take_fields(record, csv_roles=False)
    doc_id = fields["doc_id"]
    metadata = record.pop("metadata", {})
    if not isinstance(metadata, dict):
        raise ValueError("'metadata' must be a JSON object")
    # Other top-level keys are kept rather than dropped; metadata wins on a name clash.
    fields = {"title": doc_id, "source": f"{ctx.relpath}#{doc_id}", **fields}
    return ctx.doc(normalize_text(text), parser="jsonl", metadata={**record, **metadata}, **fields)
