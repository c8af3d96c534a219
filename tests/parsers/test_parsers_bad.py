"""Bad input per format: each is one per-file error, in bounded time and memory.

The bounds tested here are the ones ``glassrag.parsers.base.Limits`` and the readers set:
``max_file_bytes`` (checked with ``stat`` before a byte is read), zip central-directory
sizes (checked before anything is inflated), HTML nesting depth (checked by a linear scan
before the tree is built), extracted text size and PDF page count.
"""

from __future__ import annotations

import io
import sys
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from glassrag.parsers import ParseOptions
from glassrag.parsers.base import Limits
from glassrag.parsers.readers import read_file
from parser_samples import (
    encrypt_pdf,
    make_docx,
    make_docx_table,
    make_eml,
    make_pdf,
    make_pptx,
    make_zip,
)

WORD_TYPES = (b'<?xml version="1.0"?><Types><Override PartName="/word/document.xml" ContentType='
              b'"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"'
              b"/></Types>")


def only_error(path: Path, **kwargs) -> str:
    result = read_file(path, **kwargs)
    assert result.documents == [], result.documents
    [failure] = result.errors
    assert failure.path == str(path)
    return failure.error


def bounded(action: Callable[[], object], megabytes: float = 30.0):
    """Run ``action``; fail if it allocates more (at peak) than allowed, or hangs.

    Memory is the bound these tests hold, because it is deterministic: a bomb that is
    inflated, a file read whole, or a tree built before a check shows up as megabytes.
    Time is only a hang guard (``HANG_SECONDS``): the failures it catches are quadratic
    blow-ups that take hours, not a speed target, which lives in ``benchmarks/``.
    """
    started = time.perf_counter()
    tracemalloc.start()
    try:
        value = action()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    assert elapsed < HANG_SECONDS, f"took {elapsed:.2f}s"
    assert peak < megabytes * 1e6, f"peak {peak / 1e6:.1f} MB"
    return value


HANG_SECONDS = 120.0


def put(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- PDF -----------------------------------------------------------------------------------

def test_truncated_pdf(tmp_path: Path) -> None:
    raw = make_pdf([["some text"], ["more text"]])
    path = put(tmp_path / "cut.pdf", raw[: len(raw) // 2])
    assert "truncated PDF" in bounded(lambda: only_error(path))


def test_corrupt_pdf(tmp_path: Path) -> None:
    path = put(tmp_path / "junk.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 40 + b"\n%%EOF\n")
    assert bounded(lambda: only_error(path)).startswith("cannot parse PDF:")


def test_pdf_with_broken_objects(tmp_path: Path) -> None:
    raw = make_pdf([["text"]]).replace(b"/Type /Pages", b"/Type /Nonsense")
    raw = raw.replace(b"/Kids", b"/Kidz")
    error = bounded(lambda: only_error(put(tmp_path / "broken.pdf", raw)))
    assert error == "PDF has no pages (its page tree is missing or broken)"


def test_encrypted_pdf_needs_a_password(tmp_path: Path) -> None:
    path = put(tmp_path / "secret.pdf", encrypt_pdf(make_pdf([["classified"]]), "hunter2"))
    assert "encrypted PDF: a password is needed" in bounded(lambda: only_error(path))


def test_pdf_without_text_layer(tmp_path: Path) -> None:
    path = put(tmp_path / "scan.pdf", make_pdf([[], []]))
    assert only_error(path).startswith("no text layer; OCR is not supported")


def test_pdf_page_cap(tmp_path: Path) -> None:
    path = put(tmp_path / "long.pdf", make_pdf([["a"], ["b"], ["c"]]))
    options = ParseOptions(limits=Limits(max_pages=2))
    assert only_error(path, parse_options=options) == "PDF has 3 pages, over the 2-page cap"


def test_nul_and_control_characters_in_pdf_text_are_dropped(tmp_path: Path) -> None:
    result = read_file(put(tmp_path / "nul.pdf", make_pdf([["before\x00after \x01ctl"]])))
    assert [d.text for d in result.documents] == ["beforeafter ctl"]


# -- Office files --------------------------------------------------------------------------

def test_docx_that_is_not_a_zip(tmp_path: Path) -> None:
    path = put(tmp_path / "memo.docx", b"Dear all, this is plain text.\n")
    assert only_error(path) == "not a Word document (.docx): not a zip archive (text)"


def test_docx_that_is_a_pdf_or_a_presentation(tmp_path: Path) -> None:
    assert "(a PDF)" in only_error(put(tmp_path / "a.docx", make_pdf([["x"]])))
    deck = make_pptx(tmp_path / "deck.pptx").read_bytes()
    assert only_error(put(tmp_path / "b.docx", deck)).endswith("is a PowerPoint document")


def test_truncated_docx(tmp_path: Path) -> None:
    raw = make_docx(tmp_path / "full.docx").read_bytes()
    error = only_error(put(tmp_path / "cut.docx", raw[: len(raw) // 2]))
    assert error == "not a Word document (.docx): the zip archive is truncated (no end record)"


def test_docx_without_its_document_part(tmp_path: Path) -> None:
    path = put(tmp_path / "hollow.docx", make_zip({"[Content_Types].xml": WORD_TYPES}))
    assert only_error(path).startswith("cannot parse Word document (.docx):")


def test_zip_bomb_is_refused_from_the_central_directory(tmp_path: Path) -> None:
    # 210 MB of zeros deflate to ~1 MB; the declared size is over the 200 MB cap, so the
    # file is refused before anything is inflated.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", WORD_TYPES)
        with archive.open("word/document.xml", "w") as member:
            block = b"\0" * 1_000_000
            for _ in range(210):
                member.write(block)
    path = put(tmp_path / "bomb.docx", buffer.getvalue())
    error = bounded(lambda: only_error(path), megabytes=5)
    assert error == ("zip bomb refused: contents would inflate past the 200,000,000-byte cap")


def test_a_large_mostly_empty_word_table_is_not_a_zip_bomb(tmp_path: Path) -> None:
    # Repetitive XML compresses far better than prose: this 300 x 300 table's document.xml
    # inflates ~270x, yet is 6 MB, well under the size cap.
    raw = make_docx_table(300, 300)
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        info = archive.getinfo("word/document.xml")
    assert info.file_size > 1_000_000 and info.file_size / info.compress_size > 200
    [doc] = read_file(put(tmp_path / "grid.docx", raw)).documents
    assert doc.text == "Quarterly grid"
    [doc] = read_file(put(tmp_path / "cells.docx", make_docx_table(3, 300, "x"))).documents
    assert doc.text.startswith("Quarterly grid\n\nx | x | x") and doc.text.count("x") == 900


def test_zip_total_size_and_entry_caps(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "policy.docx")
    small = ParseOptions(limits=Limits(max_unzipped_bytes=10_000))
    assert only_error(path, parse_options=small).startswith(
        "zip bomb refused: contents would inflate past the 10,000-byte cap")
    few = ParseOptions(limits=Limits(max_zip_entries=3))
    assert "entries, over the 3 cap" in only_error(path, parse_options=few)


def test_extracted_text_cap(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "policy.docx")
    tiny = ParseOptions(limits=Limits(max_text_chars=50))
    assert "extracted text is over the 50-character cap" in only_error(path, parse_options=tiny)


# -- HTML, e-mail, CSV ---------------------------------------------------------------------

class ParserSpy:
    """Stands in for the lexbor parser class and records every HTML string it is given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from glassrag.parsers import webpage

        self.inputs: list[str] = []
        real = webpage._lexbor()

        def parse(html: str):
            self.inputs.append(html)
            return real(html)

        monkeypatch.setattr(webpage, "_lexbor", lambda: parse)


def test_deeply_nested_html(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = ParserSpy(monkeypatch)
    path = put(tmp_path / "deep.html", b"<html><body>" + b"<div>" * 200_000 + b"deep")
    error = bounded(lambda: only_error(path))
    assert error == "HTML is nested deeper than 512 elements; browsers stop there"
    assert spy.inputs == []  # refused by the scan, before a tree is built


def test_html_nesting_just_under_the_cap_parses(tmp_path: Path) -> None:
    path = put(tmp_path / "ok.html", b"<html><body>" + b"<div>" * 500 + b"fine"
               + b"</div>" * 500 + b"<p>after</p>")
    [doc] = read_file(path).documents
    assert doc.text == "fine\n\nafter"


def test_huge_select_is_cut_before_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lexbor spends quadratic time on the options of one <select>; the select goes first.
    spy = ParserSpy(monkeypatch)
    html = b"<p>kept</p><select>" + b"<option>choice" * 200_000 + b"</select><p>also</p>"
    [doc] = bounded(lambda: read_file(put(tmp_path / "form.html", html)).documents)
    assert doc.text == "kept\n\nalso"
    assert spy.inputs and all("<option" not in html for html in spy.inputs)


def test_mislabelled_files_are_reported_as_what_they_are(tmp_path: Path) -> None:
    assert "not HTML" in only_error(put(tmp_path / "a.html", make_pdf([["x"]])))
    assert "not an e-mail" in only_error(put(tmp_path / "b.eml", b"just words\nno headers\n"))
    assert only_error(put(tmp_path / "c.csv", make_pdf([["x"]]))) == (
        "not CSV/TSV: the content is a PDF")
    zipped = make_zip({"a.txt": b"x"})
    assert "not a PDF" in only_error(put(tmp_path / "d.pdf", zipped))


def test_eml_without_a_text_body(tmp_path: Path) -> None:
    raw = b"From: a@example.org\nSubject: pic\nContent-Type: image/png\n\n\x89PNG\n"
    assert only_error(put(tmp_path / "pic.eml", raw)) == (
        "e-mail has no text/plain or text/html body")
    assert read_file(put(tmp_path / "ok.eml", make_eml())).errors == []


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("late.txt", b"x" * 9000 + b"\x00tail\n", "NUL character at line 1: not a text file"),
        ("late.md", b"# T\n\n" + b"y" * 9000 + b"\n\x00\n", "NUL character at line 4"),
        ("nul.csv", b"a,b\n1,\x002\n", "not CSV/TSV: the content is binary data"),
        ("nul.html", b"<p>a\x00b</p>", "binary file (NUL bytes in the first 8 KiB)"),
    ],
)
def test_nul_bytes_in_text_formats(tmp_path: Path, name: str, data: bytes, message: str) -> None:
    assert message in only_error(put(tmp_path / name, data))


@pytest.mark.parametrize("name", ["line.txt", "line.html", "line.pdf", "line.csv"])
@pytest.mark.parametrize("size", [20_000_001, 100_000_000])
def test_files_over_the_cap_fail_before_reading(tmp_path: Path, name: str, size: int) -> None:
    path = tmp_path / name
    with open(path, "wb") as fh:  # sparse: a 100 MB "single line" costs no disk
        fh.truncate(size)
    error = bounded(lambda: only_error(path), megabytes=1)
    assert error.startswith(f"file is {size:,} bytes, over the 20,000,000-byte cap")


def test_a_long_single_line_under_the_cap_is_wrapped_in_bounded_time(tmp_path: Path) -> None:
    words = ("lorem ipsum dolor sit amet " * 80_000).encode()  # ~2 MB, one paragraph
    path = put(tmp_path / "wall.html", b"<html><body><p>" + words + b"</p></body></html>")
    [doc] = bounded(lambda: read_file(path).documents, megabytes=80)
    lines = doc.text.split("\n")
    assert max(map(len, lines)) <= 100 and " ".join(lines) == words.decode().strip()


# -- the extra is missing ------------------------------------------------------------------

@pytest.mark.parametrize(
    ("module", "name", "make"),
    [
        ("pypdf", "report.pdf", lambda p: make_pdf([["text"]])),
        ("docx", "memo.docx", lambda p: make_docx(p / "src.docx").read_bytes()),
        ("pptx", "deck.pptx", lambda p: make_pptx(p / "src.pptx").read_bytes()),
        ("selectolax.lexbor", "page.html", lambda p: b"<html><body><p>hi</p></body></html>"),
    ],
)
def test_missing_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, name: str,
    make: Callable[[Path], bytes],
) -> None:
    path = put(tmp_path / name, make(tmp_path))
    monkeypatch.setitem(sys.modules, module, None)  # the next import raises ImportError
    error = only_error(path)
    assert "is not installed; install it with: pip install 'glassrag[parsers]'" in error
