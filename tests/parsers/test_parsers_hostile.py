"""Bounds checked before parsing: HTML attributes and nesting, e-mail header sizes.

Each hostile file is refused with one error naming it, before the library that would spend
super-linear time or memory on it runs; inputs just under each bound still parse.
"""

from __future__ import annotations

import base64
from email.message import EmailMessage
from pathlib import Path

from glassrag.parsers import Limits, ParseOptions
from glassrag.parsers.readers import read_file
from parser_samples import make_eml


def put(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def only_error(path: Path, **kwargs: object) -> str:
    result = read_file(path, **kwargs)  # type: ignore[arg-type]
    assert result.documents == [], result.documents
    [failure] = result.errors
    assert failure.path == str(path)
    return failure.error


def _page(element: str) -> bytes:
    return f"<html><body>\n<p>Intro.</p>\n{element}\n<p>Outro.</p></body></html>".encode()


# -- HTML attributes -----------------------------------------------------------------------

def test_an_element_with_too_many_attributes_is_refused(tmp_path: Path) -> None:
    attrs = " ".join(f"data-a{i}=v" for i in range(300))
    path = put(tmp_path / "attrs.html", _page(f"<div {attrs}>text</div>"))
    assert only_error(path) == (
        "HTML element <div> at line 3 has 300 attributes, over the 256-attribute cap")


def test_two_hundred_attributes_parse(tmp_path: Path) -> None:
    attrs = " ".join(f'data-a{i}="{">" * 3}"' for i in range(200))
    [doc] = read_file(put(tmp_path / "ok.html", _page(f"<div {attrs}>text</div>"))).documents
    assert doc.text == "Intro.\n\ntext\n\nOutro."


def test_a_quoted_angle_bracket_does_not_hide_attributes(tmp_path: Path) -> None:
    # ">" inside a quoted value does not end the tag; the count goes on past it.
    attrs = 'title=">" ' + " ".join(f"a{i}" for i in range(1000))
    path = put(tmp_path / "quoted.html", _page(f"<p {attrs}>text</p>"))
    assert "has 1,001 attributes, over the 256-attribute cap" in only_error(path)


def test_attributes_of_a_script_tag_count_too(tmp_path: Path) -> None:
    attrs = " ".join(f"a{i}" for i in range(1000))
    path = put(tmp_path / "script.html", _page(f"<script {attrs}>var x;</script>"))
    assert "HTML element <script> at line 3 has 1,000 attributes" in only_error(path)


def test_end_tags_inside_attribute_values_do_not_hide_nesting(tmp_path: Path) -> None:
    # A scan that read "</div>" in the value as an end tag would see depth 0 here.
    path = put(tmp_path / "fake-ends.html", _page('<div title="</div>">' * 600 + "deep"))
    assert only_error(path) == "HTML is nested deeper than 512 elements; browsers stop there"


def test_the_attribute_cap_is_a_limit(tmp_path: Path) -> None:
    attrs = " ".join(f"a{i}" for i in range(20))
    path = put(tmp_path / "few.html", _page(f"<div {attrs}>text</div>"))
    options = ParseOptions(limits=Limits(max_html_attributes=5))
    assert "has 20 attributes, over the 5-attribute cap" in only_error(
        path, parse_options=options)


# -- e-mail headers ------------------------------------------------------------------------

def _encoded_words(count: int) -> str:
    word = base64.b64encode(b"x" * 45).decode()
    return " ".join(f"=?utf-8?b?{word}?=" for _ in range(count))


def test_an_oversized_encoded_subject_is_refused_before_decoding(tmp_path: Path) -> None:
    subject = _encoded_words(2000)  # 146 KB of encoded words
    raw = f"From: a@example.org\nTo: b@example.org\nSubject: {subject}\n\nBody.\n".encode()
    size = len(f"Subject: {subject}")
    assert only_error(put(tmp_path / "subject.eml", raw)) == (
        f"e-mail header Subject is {size:,} bytes, over the 102,400-byte cap")


def test_a_long_subject_under_the_cap_is_decoded(tmp_path: Path) -> None:
    raw = make_eml(subject="x" * 45 * 900)
    [doc] = read_file(put(tmp_path / "long.eml", raw)).documents
    assert doc.title == "x" * 45 * 900


def test_an_oversized_header_inside_a_mime_part_is_refused(tmp_path: Path) -> None:
    message = EmailMessage()
    message["From"] = "a@example.org"
    message["Subject"] = "Parts"
    message.set_content("Plain body.")
    message.add_attachment(b"data", maintype="application", subtype="octet-stream",
                           filename="f.bin")
    raw = bytes(message).replace(
        b'filename="f.bin"', b'filename="f.bin"; x="' + b"y" * 200_000 + b'"')
    assert "over the 102,400-byte cap" in only_error(put(tmp_path / "parts.eml", raw))


def test_all_headers_together_are_capped(tmp_path: Path) -> None:
    headers = "".join(f"X-Note-{i}: {'z' * 900}\n" for i in range(1200))  # ~1.1 MB
    raw = f"From: a@example.org\nSubject: many\n{headers}\nBody.\n".encode()
    assert only_error(put(tmp_path / "many.eml", raw)) == (
        "e-mail headers total over the 1,000,000-byte cap")
