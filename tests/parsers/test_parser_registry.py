"""The parsers registry: every format by suffix, each module imported only when used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from glassrag.parsers.readers import SUPPORTED_SUFFIXES, read_file
from glassrag.parsers.registry import PARSERS, BinaryFormat, TextFormat, parser_for
from parser_samples import make_pdf

TEXT_FORMATS = {"markdown", "rst", "text", "jsonl"}
FORMAT_MODULES = ("markdown", "rst", "plain_text", "jsonl", "pdf", "word", "slides",
                  "webpage", "mail", "table")


def test_every_suffix_has_one_parser_of_its_kind() -> None:
    assert SUPPORTED_SUFFIXES == (".md", ".markdown", ".mdx", ".rst", ".txt", ".jsonl", ".pdf",
                                  ".docx", ".pptx", ".html", ".htm", ".xhtml", ".eml", ".csv",
                                  ".tsv", ".tab")
    for parser in PARSERS:
        code = parser.load()
        assert isinstance(code, TextFormat if parser.name in TEXT_FORMATS else BinaryFormat)
        assert all(parser_for(s) is parser for s in parser.suffixes)


def test_a_text_format_is_not_parsed_from_bytes() -> None:
    markdown = parser_for(".md")
    assert markdown is not None
    with pytest.raises(TypeError, match="markdown is a text format"):
        markdown.binary()


def _modules_after_reading(path: Path) -> list[str]:
    probe = ("import json, sys\nfrom pathlib import Path\n"
             "from glassrag.parsers.readers import read_file\n"
             f"result = read_file(Path({str(path)!r}))\n"
             "assert result.documents and not result.errors, result.errors\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('glassrag.parsers')"
             " or m in ('charset_normalizer', 'pypdf', 'markdown_it', 'yaml'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def _formats(modules: list[str]) -> list[str]:
    return [m.removeprefix("glassrag.parsers.") for m in modules
            if m.removeprefix("glassrag.parsers.") in FORMAT_MODULES]


@pytest.mark.parametrize(("name", "content", "module"), [
    ("notes.txt", b"Refunds take 14 days.\n", "plain_text"),
    ("notes.md", b"# Refunds\n\nRefunds take 14 days.\n", "markdown"),
    ("notes.rst", b"Refunds\n=======\n\nRefunds take 14 days.\n", "rst"),
    ("notes.jsonl", b'{"doc_id": "r", "text": "Refunds take 14 days."}\n', "jsonl"),
])
def test_reading_a_text_file_imports_only_its_format(tmp_path: Path, name: str, content: bytes,
                                                     module: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    loaded = _modules_after_reading(path)
    assert _formats(loaded) == [module]
    assert "charset_normalizer" not in loaded and "pypdf" not in loaded  # UTF-8: no detector


def test_reading_a_pdf_imports_the_pdf_parser_alone(tmp_path: Path) -> None:
    path = tmp_path / "policy.pdf"
    path.write_bytes(make_pdf([["Refunds take 14 days."]]))
    loaded = _modules_after_reading(path)
    assert _formats(loaded) == ["pdf"] and "pypdf" in loaded


def test_legacy_encodings_still_decode(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes("退款在十四天内办理。\n".encode("gb18030"))
    [doc] = read_file(path).documents
    assert doc.text == "退款在十四天内办理。\n" and doc.encoding == "gb18030"
