"""Turn input files into :class:`SourceDocument` records: one file's dispatch.

:func:`read_file` refuses what no parser reads, reads the bytes within the size cap and
hands them to the parser the registry (:mod:`glassrag.parsers.registry`) names for the
suffix: a binary format parses them, a text format gets them decoded
(:mod:`glassrag.parsers.encoding`) with newlines made uniform. Readers never raise for bad
content: each problem becomes a :class:`FailedInput` naming the file (and ``:LINE`` for a
JSONL line or a ``[doc:…]`` section) and whatever is sound in the file is still returned.
Text keeps the file's own lines, so chunk line numbers can point back into the original file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from glassrag.errors import GlassragError, InputFileError
from glassrag.parsers import ParseOptions, parse_bytes
from glassrag.parsers.base import failure_reason
from glassrag.parsers.encoding import decode_bytes, normalize_text
from glassrag.parsers.reading import FileContext, ReadResult
from glassrag.parsers.registry import SUPPORTED_SUFFIXES, BinaryFormat, Parser, parser_for

__all__ = [
    "SUPPORTED_SUFFIXES", "ReadResult", "decode_bytes", "is_supported", "normalize_text",
    "read_file",
]

# Types people will try first get a message that says what to do instead.
_NOT_YET = {
    ".doc": "Word (.doc)", ".ppt": "PowerPoint (.ppt)", ".xlsx": "Excel", ".rtf": "RTF",
    ".epub": "EPUB",
}


def is_supported(path: Path) -> bool:
    """Whether a reader exists for this file's suffix (case-insensitive)."""
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def _unsupported_message(suffix: str) -> str:
    supported = ", ".join(SUPPORTED_SUFFIXES)
    if suffix in _NOT_YET:
        return (
            f"{_NOT_YET[suffix]} parsing is not built in yet; convert the file to one of the "
            f"supported types ({supported})"
        )
    kind = f"'{suffix}'" if suffix else "(no suffix)"
    return f"unsupported file type {kind}; supported: {supported}"


def read_file(
    path: Path, *, root: Path | None = None, max_bytes: int = 20_000_000,
    parse_options: ParseOptions | None = None,
) -> ReadResult:
    """Read one input file into documents plus per-file or per-line failures.

    ``root`` is the directory the file was found under; the path relative to it (posix) is
    the default ``doc_id`` and ``source``. Files over ``max_bytes`` are refused before any
    byte is read. ``parse_options`` tunes the binary formats (PDF, Word, PowerPoint, HTML,
    e-mail, CSV/TSV). Never raises for a bad file: every problem is in ``ReadResult.errors``.
    """
    absolute = Path(os.path.abspath(path))
    base = Path(os.path.abspath(root)) if root is not None else absolute.parent
    try:
        relpath = absolute.relative_to(base).as_posix()
    except ValueError:
        relpath = absolute.name
    # doc.path is the real path (symlinks resolved): the stable identity of the file.
    options = parse_options or ParseOptions()
    ctx = FileContext(display=str(path), relpath=relpath, abspath=os.path.realpath(path),
                      limits=options.limits, keep_hidden=options.keep_hidden)
    result = ReadResult()
    parser = parser_for(path.suffix)
    if parser is None:
        result.errors.append(ctx.fail(_unsupported_message(path.suffix.lower())))
        return result
    try:
        _dispatch(path, parser, max_bytes, options, ctx, result)
    except Exception as exc:  # noqa: BLE001 - whatever a reader trips on fails this file only
        result.documents.clear()  # a half-read file is not ingested: its roles may be lost
        result.errors.append(ctx.fail(f"cannot read: {failure_reason(exc)}"))
    return result


def _dispatch(path: Path, parser: Parser, max_bytes: int, options: ParseOptions,
              ctx: FileContext, result: ReadResult) -> None:
    """Read ``path`` with ``parser`` into ``result``."""
    code = parser.load()
    if not isinstance(code, BinaryFormat) and code.stream is not None \
            and code.stream(path, ctx, result, max_bytes):
        return
    try:
        raw = _read_bytes(path, max_bytes)
        if isinstance(code, BinaryFormat):
            parsed = parse_bytes(parser, raw, path.stem, options)
            ctx.encoding = parsed.encoding
            result.hidden_dropped = parsed.hidden_dropped
            result.documents.append(ctx.doc(
                parsed.text, title=parsed.title, parser=parser.name,
                metadata=parsed.metadata, positions=parsed.positions,
                line_offset=parsed.line_offset,
            ))
            return
        text, ctx.encoding = decode_bytes(raw)
    except GlassragError as exc:  # InputFileError, MissingExtra, a bad csv_template
        result.errors.append(ctx.fail(exc.message))
        return
    text = normalize_text(text)
    if (nul := text.find("\x00")) >= 0:
        line = text.count("\n", 0, nul) + 1
        result.errors.append(ctx.fail(f"NUL character at line {line}: not a text file"))
        return
    if not text.strip():
        result.errors.append(ctx.fail("empty file (only whitespace)"))
        return
    code.read(text, path.stem, ctx, result)


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    """Read a regular file's bytes, refusing empty, oversize and special files."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise InputFileError("is a directory")
        if not stat.S_ISREG(st.st_mode):
            # Opening a FIFO would block forever; devices could be endless.
            raise InputFileError("not a regular file (FIFO, socket or device)")
        if st.st_size == 0:
            raise InputFileError("empty file")
        if st.st_size > max_bytes:
            raise InputFileError(
                f"file is {st.st_size:,} bytes, over the {max_bytes:,}-byte cap; the cap is "
                "configurable ([ingest] max_file_bytes in glassrag.toml)"
            )
        with open(path, "rb") as fh:
            # Read one byte past the cap: the file may have grown since stat(). Ask for no
            # more than the file's size needs first: read(n) allocates n bytes up front.
            first = min(max_bytes, st.st_size + 65536) + 1
            raw = fh.read(first)
            if len(raw) == first <= max_bytes:  # it grew a lot since stat(): read on
                raw += fh.read(max_bytes + 1 - len(raw))
    except PermissionError as exc:
        raise InputFileError("permission denied") from exc
    except FileNotFoundError as exc:
        raise InputFileError("no such file or directory") from exc
    except OSError as exc:
        raise InputFileError(f"cannot read: {exc.strerror or exc}") from exc
    if len(raw) > max_bytes:
        raise InputFileError(f"file grew past the {max_bytes:,}-byte cap while being read")
    if not raw:
        raise InputFileError("empty file")
    return raw


