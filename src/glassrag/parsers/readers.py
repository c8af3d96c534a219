"""Turn input files into :class:`SourceDocument` records.

Readers never raise for bad content: each problem becomes a :class:`FailedInput` naming the
file (and ``:LINE`` for a JSONL line or a ``[doc:…]`` section) and whatever is sound in the
file is still returned. Text keeps the file's own lines, so chunk line numbers can point
back into the original file.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from charset_normalizer import from_bytes

from glassrag.errors import GlassragError, InputFileError
from glassrag.parsers import PARSERS, Limits, ParseOptions, parse_bytes, parser_for
from glassrag.parsers.base import failure_reason
from glassrag.parsers.front_matter import load_front_matter
from glassrag.records import FailedInput, SourceDocument

__all__ = [
    "SUPPORTED_SUFFIXES", "ReadResult", "decode_bytes", "is_supported", "normalize_text",
    "read_file",
]

TEXT_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".jsonl")
# Text formats first, then what the parsers registry reads (PDF, Word, HTML, ...).
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + tuple(s for p in PARSERS for s in p.suffixes)

# Types people will try first get a message that says what to do instead.
_NOT_YET = {
    ".doc": "Word (.doc)", ".ppt": "PowerPoint (.ppt)", ".xlsx": "Excel", ".rtf": "RTF",
    ".epub": "EPUB",
}

_BOMS = (  # UTF-32 first: its little-endian BOM begins with the UTF-16 one.
    (b"\xff\xfe\x00\x00", "utf-32", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig", "utf-8-sig"),
    (b"\xff\xfe", "utf-16", "utf-16"),
    (b"\xfe\xff", "utf-16", "utf-16"),
)
_CJK_CODECS = ("gb18030", "cp932")  # gb18030 covers GBK/GB2312; cp932 covers Shift_JIS
_BINARY_SNIFF = 8192
_RARITY_SAMPLE = 20_000
_MAX_RARITY = 0.5  # real prose, even traditional Chinese read as GBK, stays far below this
# What a wrong legacy codec produces from stray bytes (cp932 maps 0x80 and 0xFD-0xFF to C1
# controls and private-use code points): such a decoding is not "clean", whatever it says.
_UNCLEAN = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ue000-\uf8ff]")
_SECTION_RE = re.compile(r"^\[doc:([^\]\s]+)\]\s*$")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass
class ReadResult:
    """The documents read from one file and the problems found in it."""

    documents: list[SourceDocument] = field(default_factory=list)
    errors: list[FailedInput] = field(default_factory=list)
    # Hidden pieces the parser left out (ParseOptions.keep_hidden keeps them).
    hidden_dropped: int = 0


@dataclass
class _Ctx:
    display: str  # the path as the caller gave it, for error messages
    relpath: str  # posix path relative to the ingest root: default doc_id and source
    abspath: str
    encoding: str | None = "utf-8"
    limits: Limits = field(default_factory=Limits)

    def fail(self, message: str, line: int | None = None) -> FailedInput:
        return FailedInput(self.display if line is None else f"{self.display}:{line}", message)

    def doc(self, text: str, **fields: Any) -> SourceDocument:
        fields = {"doc_id": self.relpath, "source": self.relpath, **fields}
        return SourceDocument(text=text, path=self.abspath, encoding=self.encoding, **fields)


def is_supported(path: Path) -> bool:
    """Whether a reader exists for this file's suffix (case-insensitive)."""
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def normalize_text(text: str) -> str:
    """Make CRLF and lone CR into ``\\n`` and drop a leading BOM; nothing else changes."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _is_common(ch: str) -> bool:
    """Whether a character belongs to everyday Chinese (GB2312) or Japanese (JIS level 1)."""
    try:
        ch.encode("gb2312")
        return True
    except UnicodeEncodeError:
        pass
    try:
        return ch.encode("shift_jis") <= b"\x98\x72"  # JIS X 0208 level 1 ends at 0x9872
    except UnicodeEncodeError:
        return False


def _rarity(text: str) -> float:
    """Share of rare characters among the non-ASCII ones in a sample.

    A wrong CJK codec still "succeeds", but into rare ideographs (Shift_JIS read as GBK,
    Latin-1 read as GB18030), so rarity tells a real decoding from mojibake.
    """
    wide = [ch for ch in text[:_RARITY_SAMPLE] if not ch.isascii()]
    return sum(1 for ch in wide if not _is_common(ch)) / len(wide) if wide else 0.0


def decode_bytes(raw: bytes) -> tuple[str, str]:
    """Decode file bytes, returning ``(text, encoding)``; raise InputFileError if impossible.

    Order: a BOM (``utf-8-sig``, ``utf-16``, ``utf-32``), then strict UTF-8, then the Chinese
    and Japanese legacy codecs (gb18030, cp932) ranked by charset-normalizer and by how
    few rare characters each decoding produces. NUL bytes in the first 8 KiB of non-UTF-16/32
    content mean a binary file. The returned text still has the file's own newlines.
    """
    for bom, codec, name in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec).removeprefix("\ufeff"), name
            except UnicodeDecodeError as exc:
                raise InputFileError(f"not valid {name} despite its BOM: {exc.reason}") from exc
    if b"\x00" in raw[:_BINARY_SNIFF]:
        raise InputFileError("binary file (NUL bytes in the first 8 KiB)")
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        utf8_error = exc
    detected = from_bytes(raw, cp_isolation=list(_CJK_CODECS))
    detector_rank = {match.encoding: rank for rank, match in enumerate(detected)}
    options: list[tuple[float, int, str, str]] = []
    for codec in _CJK_CODECS:
        try:
            text = raw.decode(codec)  # strict: a lossy decode is never "clean"
        except UnicodeDecodeError:
            continue
        if _UNCLEAN.search(text) or (rarity := _rarity(text)) > _MAX_RARITY:
            continue
        options.append((rarity, detector_rank.get(codec, len(_CJK_CODECS)), codec, text))
    if not options:
        raise InputFileError(
            f"cannot decode: not UTF-8 (invalid byte at offset {utf8_error.start}), "
            "nor GB18030 or Shift_JIS; save the file as UTF-8"
        )
    _, _, codec, text = min(options)
    return text, codec


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
    byte is read. PDF, Word, PowerPoint, HTML, e-mail and CSV/TSV files go to the
    :mod:`glassrag.parsers` registry (``parse_options`` tunes them). Never raises for a bad
    file: every problem is in ``ReadResult.errors``.
    """
    absolute = Path(os.path.abspath(path))
    base = Path(os.path.abspath(root)) if root is not None else absolute.parent
    try:
        relpath = absolute.relative_to(base).as_posix()
    except ValueError:
        relpath = absolute.name
    # doc.path is the real path (symlinks resolved): the stable identity of the file.
    options = parse_options or ParseOptions()
    ctx = _Ctx(display=str(path), relpath=relpath, abspath=os.path.realpath(path),
               limits=options.limits)
    result = ReadResult()
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        result.errors.append(ctx.fail(_unsupported_message(suffix)))
        return result
    try:
        _dispatch(path, suffix, max_bytes, options, ctx, result)
    except Exception as exc:  # noqa: BLE001 - whatever a reader trips on fails this file only
        result.documents.clear()  # a half-read file is not ingested: its roles may be lost
        result.errors.append(ctx.fail(f"cannot read: {failure_reason(exc)}"))
    return result


def _dispatch(path: Path, suffix: str, max_bytes: int, options: ParseOptions, ctx: _Ctx,
              result: ReadResult) -> None:
    """Read ``path`` with the reader for ``suffix`` into ``result``."""
    if suffix == ".jsonl" and _stream_jsonl(path, ctx, result, max_bytes):
        return
    parser = parser_for(suffix)
    try:
        raw = _read_bytes(path, max_bytes)
        if parser is not None:
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
    if suffix == ".jsonl":
        _read_jsonl(text, ctx, result)
    elif suffix == ".txt":
        _read_text(text, path.stem, ctx, result)
    elif suffix == ".rst":
        _read_rst(text, path.stem, ctx, result)
    else:
        _read_markdown(text, path.stem, ctx, result)


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


def _read_text(text: str, stem: str, ctx: _Ctx, result: ReadResult) -> None:
    lines = text.split("\n")
    first = next((line for line in lines if line.strip()), "")
    if not _SECTION_RE.match(first):
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


def _jsonable(value: Any) -> Any:
    # YAML turns unquoted dates into date objects; metadata must survive JSON round trips.
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    return value


def _take_fields(data: dict[str, Any], csv_roles: bool) -> dict[str, Any]:
    """Pop the SourceDocument fields out of ``data``, checked; ValueError names a bad one."""
    fields: dict[str, Any] = {}
    if isinstance(data.get("title"), str) and not data["title"].strip():
        del data["title"]  # an empty title means "none given": the default title applies
    for key in ("doc_id", "title", "source", "chunker"):
        value = data.pop(key, None)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValueError(f"'{key}' must be a non-empty string")
        if value is not None:
            fields[key] = value.strip()
    if "roles" in data:
        fields["roles"] = _explicit_roles(data.pop("roles"), csv_roles)
    return fields


def _explicit_roles(roles: Any, csv_roles: bool) -> tuple[str, ...]:
    """The roles a document names itself, checked.

    A ``roles`` key that is present but names no role (``[]``, ``""``, ``null``, ``[" "]``)
    is an error, never "no roles": falling back to the default role would publish a document
    whose author meant to restrict it.
    """
    hint = " or a comma-separated string" if csv_roles else ""
    if csv_roles and isinstance(roles, str):
        # "hr, finance," is a comma list with a trailing comma, not a blank role.
        roles = [r for r in roles.split(",") if r.strip()]
    if roles is None:
        raise ValueError("'roles' is empty (null); name at least one role or remove the key")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise ValueError(f"'roles' must be a list of strings{hint}")
    if not roles:
        raise ValueError("'roles' is empty; name at least one role or remove the key")
    blank = next((n for n, r in enumerate(roles, start=1) if not r.strip()), None)
    if blank is not None:
        raise ValueError(f"'roles' entry {blank} is blank; every role must be a non-empty name")
    return tuple(dict.fromkeys(r.strip() for r in roles))


def _read_markdown(text: str, stem: str, ctx: _Ctx, result: ReadResult) -> None:
    lines = text.split("\n")
    meta: dict[str, Any] = {}
    offset = 0
    if lines[0].rstrip() == "---":
        close = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), 0)
        if not close:
            result.errors.append(ctx.fail("front matter opened at line 1 is never closed by '---'"))
            return
        front = "\n".join(lines[1:close])
        if len(front) > ctx.limits.max_front_matter_chars:
            cap = ctx.limits.max_front_matter_chars
            result.errors.append(ctx.fail(
                f"front matter is {len(front):,} characters, over the {cap:,}-character cap"))
            return
        try:
            loaded = load_front_matter(front, ctx.limits.max_metadata_depth)
        except RecursionError:  # PyYAML without libyaml composes recursively
            result.errors.append(ctx.fail("front matter: invalid YAML: nested too deeply"))
            return
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 2}" if mark is not None else ""  # file lines
            problem = getattr(exc, "problem", None) or str(exc)
            result.errors.append(ctx.fail(f"front matter: invalid YAML{where}: {problem}"))
            return
        if loaded is not None and not isinstance(loaded, dict):
            kind = type(loaded).__name__
            result.errors.append(ctx.fail(f"front matter must be a mapping, not {kind}"))
            return
        meta, offset = _jsonable(loaded or {}), close + 1
    try:
        fields = _take_fields(meta, csv_roles=True)
    except ValueError as exc:
        # The whole file fails: ingesting it with its roles dropped could expose it.
        result.errors.append(ctx.fail(f"front matter: {exc}"))
        return
    body = "\n".join(lines[offset:])
    if not body.strip():
        result.errors.append(ctx.fail("empty document: no text after the front matter"))
        return
    fields.setdefault("title", _first_heading(lines[offset:]) or stem)
    result.documents.append(
        ctx.doc(body, parser="markdown", line_offset=offset, metadata=meta, **fields)
    )


def _read_rst(text: str, stem: str, ctx: _Ctx, result: ReadResult) -> None:
    """reStructuredText: the file's own text (so lines stay exact), titled by its first
    section title. Roles come from the roles rules file or the ingest call."""
    from glassrag.parsers.rst import rst_title

    result.documents.append(ctx.doc(text, title=rst_title(text) or stem, parser="rst"))


def _first_heading(lines: list[str]) -> str | None:
    in_fence = False
    for line in lines:
        if _FENCE_RE.match(line):
            in_fence = not in_fence  # a "# comment" in a code block is not a heading
        elif not in_fence and (m := _HEADING_RE.match(line)):
            return m.group(1).strip()
    return None


def _read_jsonl(text: str, ctx: _Ctx, result: ReadResult) -> None:
    # split("\n"), not splitlines(): JSON strings may hold U+2028, which is not a line end.
    _jsonl_lines(text.split("\n"), ctx, result)


def _stream_jsonl(path: Path, ctx: _Ctx, result: ReadResult, max_bytes: int) -> bool:
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
            head = fh.read(_BINARY_SNIFF)
            if b"\x00" in head or any(head.startswith(bom) for bom, codec, _ in _BOMS
                                      if codec != "utf-8-sig"):
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


def _jsonl_lines(lines: Iterable[str | _BadLine], ctx: _Ctx, result: ReadResult) -> None:
    seen: dict[str, int] = {}
    content = False
    for lineno, line in enumerate(lines, start=1):
        if isinstance(line, _BadLine):
            result.errors.append(ctx.fail(f"line {lineno}: {line.message}", lineno))
            content = True
            continue
        if not line.strip():
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


def _jsonl_record(line: str, ctx: _Ctx) -> SourceDocument:
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
    fields = _take_fields(record, csv_roles=False)
    doc_id = fields["doc_id"]
    metadata = record.pop("metadata", {})
    if not isinstance(metadata, dict):
        raise ValueError("'metadata' must be a JSON object")
    # Other top-level keys are kept rather than dropped; metadata wins on a name clash.
    fields = {"title": doc_id, "source": f"{ctx.relpath}#{doc_id}", **fields}
    return ctx.doc(normalize_text(text), parser="jsonl", metadata={**record, **metadata}, **fields)
