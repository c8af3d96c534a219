"""The parsers registry: which parser reads a file, chosen by its suffix.

Two kinds of format are registered:

* a :class:`BinaryFormat` reads the file's bytes into one document. Its suffix only
  nominates it: ``sniff`` must then accept the bytes (``%PDF`` header, an OOXML zip whose
  ``[Content_Types].xml`` names the right main part, markup, RFC 822 headers, text), so a
  mislabelled file is reported as what it is instead of being misread. Ingest runs it in the
  helper process of :mod:`.worker`, under a time and memory budget.
* a :class:`TextFormat` (Markdown, reST, plain text, JSONL) is decoded first
  (:mod:`.encoding`) and read into any number of documents and per-line failures; it may
  read the file itself instead (:attr:`TextFormat.stream`, for JSONL exports larger than
  the per-file cap).

A format's module is imported when a file needs it (:attr:`Parser.load`), and third-party
libraries only when that module parses something: without the ``[parsers]`` extra, only
the files that need it fail, each with the install command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from glassrag.errors import GlassragError, InputFileError
from glassrag.parsers.base import Limits, Parsed, ParseOptions, failure_reason
from glassrag.parsers.reading import FileContext, ReadResult

__all__ = ["PARSERS", "SUPPORTED_SUFFIXES", "BinaryFormat", "Parser", "TextFormat",
           "parse_in_process", "parser_for"]

Sniff = Callable[[bytes, Limits], None]
Parse = Callable[[bytes, str, ParseOptions], Parsed]
#: ``read(text, stem, ctx, result)``: the documents of a decoded, normalised file.
Read = Callable[[str, str, FileContext, ReadResult], None]
#: ``stream(path, ctx, result, max_bytes)``: read the file itself; False leaves it to ``read``.
Stream = Callable[[Path, FileContext, ReadResult, int], bool]


@dataclass(frozen=True)
class BinaryFormat:
    """A format read from bytes into one :class:`Parsed`; ``label`` names it in messages."""

    label: str
    sniff: Sniff
    parse: Parse


@dataclass(frozen=True)
class TextFormat:
    """A format read from decoded text into documents (or from the file, by ``stream``)."""

    read: Read
    stream: Stream | None = None


@dataclass(frozen=True)
class Parser:
    """One registered format: its name, its suffixes and the function importing its code.

    ``name`` is the ``SourceDocument.parser`` of a binary format's documents (a text format
    names its own: ``markdown``, ``rst``, ``text`` or ``sectioned``, ``jsonl``)."""

    name: str
    suffixes: tuple[str, ...]
    load: Callable[[], BinaryFormat | TextFormat]

    def binary(self) -> BinaryFormat:
        """The binary format's code; TypeError for a text format."""
        code = self.load()
        if not isinstance(code, BinaryFormat):
            raise TypeError(f"{self.name} is a text format: it is read, not parsed from bytes")
        return code

    @property
    def label(self) -> str:
        """How messages name a binary format (``PDF``, ``CSV/TSV``…)."""
        return self.binary().label


def _markdown() -> TextFormat:
    from glassrag.parsers import markdown

    return TextFormat(markdown.read)


def _rst() -> TextFormat:
    from glassrag.parsers import rst

    return TextFormat(rst.read)


def _plain_text() -> TextFormat:
    from glassrag.parsers import plain_text

    return TextFormat(plain_text.read)


def _jsonl() -> TextFormat:
    from glassrag.parsers import jsonl

    return TextFormat(jsonl.read, jsonl.stream)


def _pdf() -> BinaryFormat:
    from glassrag.parsers import pdf

    return BinaryFormat(pdf.LABEL, pdf.sniff, pdf.parse)


def _docx() -> BinaryFormat:
    from glassrag.parsers import word

    return BinaryFormat(word.LABEL, word.sniff, word.parse)


def _pptx() -> BinaryFormat:
    from glassrag.parsers import slides

    return BinaryFormat(slides.LABEL, slides.sniff, slides.parse)


def _html() -> BinaryFormat:
    from glassrag.parsers import webpage

    return BinaryFormat(webpage.LABEL, webpage.sniff, webpage.parse)


def _eml() -> BinaryFormat:
    from glassrag.parsers import mail

    return BinaryFormat(mail.LABEL, mail.sniff, mail.parse)


def _csv() -> BinaryFormat:
    from glassrag.parsers import table

    return BinaryFormat(table.LABEL, table.sniff, table.parse)


def _tsv() -> BinaryFormat:
    from glassrag.parsers import table

    return BinaryFormat(table.LABEL, table.sniff, partial(table.parse, tab=True))


# Text formats first: the order in which messages list the supported suffixes.
PARSERS: tuple[Parser, ...] = (
    Parser("markdown", (".md", ".markdown", ".mdx"), _markdown),
    Parser("rst", (".rst",), _rst),
    Parser("text", (".txt",), _plain_text),
    Parser("jsonl", (".jsonl",), _jsonl),
    Parser("pdf", (".pdf",), _pdf),
    Parser("docx", (".docx",), _docx),
    Parser("pptx", (".pptx",), _pptx),
    Parser("html", (".html", ".htm", ".xhtml"), _html),
    Parser("eml", (".eml",), _eml),
    Parser("csv", (".csv",), _csv),
    Parser("tsv", (".tsv", ".tab"), _tsv),
)
_BY_SUFFIX = {suffix: p for p in PARSERS for suffix in p.suffixes}
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(_BY_SUFFIX)


def parser_for(suffix: str) -> Parser | None:
    """The parser registered for a (case-insensitive) suffix such as ``".pdf"``."""
    return _BY_SUFFIX.get(suffix.lower())


def parse_in_process(parser: Parser, raw: bytes, stem: str, options: ParseOptions,
                     out_of_memory: str = "out of memory") -> Parsed:
    """Sniff and parse a binary format in this process.

    Libraries raise all sorts of things for broken files (``KeyError`` from a zip without a
    part, ``ValueError`` from pypdf, ``RecursionError`` from a cyclic object graph): each
    becomes an :class:`InputFileError` naming the format, so one bad file never stops a batch.
    """
    code = parser.binary()
    try:
        code.sniff(raw, options.limits)
        return code.parse(raw, stem, options)
    except GlassragError:
        raise
    except MemoryError:
        raise InputFileError(f"cannot parse {code.label}: {out_of_memory}") from None
    except RecursionError as exc:
        raise InputFileError(f"cannot parse {code.label}: {failure_reason(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - any library failure is a bad-file error
        raise InputFileError(f"cannot parse {code.label}: {failure_reason(exc)}") from exc
