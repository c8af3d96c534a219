from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from glassrag.errors import InputFileError
from glassrag.parsers.readers import (
    SUPPORTED_SUFFIXES,
    ReadResult,
    decode_bytes,
    is_supported,
    normalize_text,
    read_file,
)
from glassrag.records import SourceDocument

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

ZH = (
    "机票退改规则：航班起飞前二十四小时以上申请退票，收取票面价百分之五的手续费；"
    "起飞前两小时内不再受理改期，请旅客提前安排行程。"
)
JA = (
    "会議室の予約は前日の午後五時までに済ませてください。"
    "キャンセルする場合は、必ず総務部へ連絡をお願いします。"
)


def put(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def only_doc(result: ReadResult) -> SourceDocument:
    assert result.errors == []
    assert len(result.documents) == 1
    return result.documents[0]


def only_error(result: ReadResult) -> tuple[str, str]:
    assert result.documents == []
    assert len(result.errors) == 1
    return result.errors[0].path, result.errors[0].error


def file_line(path: Path, doc: SourceDocument, needle: str) -> int:
    """The 1-based file line of ``needle``, computed the way a chunker would from the doc."""
    index = doc.text.split("\n").index(needle)
    line = doc.line_offset + index + 1
    assert path.read_bytes().decode("utf-8").splitlines()[line - 1] == needle
    return line


# --- normalize_text and decode_bytes -------------------------------------------------------


def test_normalize_text_only_fixes_newlines_and_bom() -> None:
    assert normalize_text("\ufeffone\r\ntwo\rthree\n  four\t\n") == "one\ntwo\nthree\n  four\t\n"
    assert normalize_text("a\r\n\r\nb") == "a\n\nb"  # blank lines survive: line numbers hold


def test_decode_plain_utf8() -> None:
    assert decode_bytes("Pipelines: résumé ✓".encode()) == ("Pipelines: résumé ✓", "utf-8")


def test_decode_utf8_with_bom() -> None:
    text, encoding = decode_bytes("\ufeff" .encode() + ZH.encode("utf-8"))
    assert (text, encoding) == (ZH, "utf-8-sig")


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_decode_utf16_with_bom(codec: str) -> None:
    # .encode("utf-16") writes a BOM; the -le/-be codecs do not, so add one by hand.
    raw = ("\ufeff" + JA).encode(codec) if codec != "utf-16" else JA.encode(codec)
    assert decode_bytes(raw) == (JA, "utf-16")


def test_decode_gb18030_chinese_comes_back_as_chinese() -> None:
    text, encoding = decode_bytes(ZH.encode("gb18030"))
    assert (text, encoding) == (ZH, "gb18030")


def test_decode_gbk_bytes_use_gb18030() -> None:
    assert decode_bytes(ZH.encode("gbk")) == (ZH, "gb18030")


def test_decode_shift_jis_japanese_comes_back_as_japanese() -> None:
    text, encoding = decode_bytes(JA.encode("shift_jis"))
    assert text == JA
    assert encoding in ("shift_jis", "cp932")


def test_decode_japanese_saved_as_gb18030_stays_japanese() -> None:
    # GB18030 can encode kana too; the bytes decide, not the language.
    assert decode_bytes(JA.encode("gb18030")) == (JA, "gb18030")


def test_decode_rejects_binary() -> None:
    with pytest.raises(InputFileError, match="binary file"):
        decode_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def test_decode_rejects_undecodable_bytes() -> None:
    # cp932 "decodes" these into private-use code points and C1 controls: not clean.
    with pytest.raises(InputFileError, match="cannot decode"):
        decode_bytes(b"price: \xff\xfe\xff \x80\xff")


def test_decode_does_not_pass_latin1_off_as_chinese() -> None:
    # GB18030 accepts these bytes, but only as a handful of rare ideographs.
    raw = "naïve façade über Straße".encode("latin-1")
    with pytest.raises(InputFileError, match="save the file as UTF-8"):
        decode_bytes(raw)


# --- file-level failures --------------------------------------------------------------------


def test_empty_file(tmp_path: Path) -> None:
    path = put(tmp_path / "blank.md", b"")
    assert only_error(read_file(path)) == (str(path), "empty file")


def test_whitespace_only_file_is_empty(tmp_path: Path) -> None:
    path = put(tmp_path / "blank.txt", " \n\t\r\n")
    assert "empty file" in only_error(read_file(path))[1]


def test_oversize_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = put(tmp_path / "big.txt", "x" * 2048)
    where, error = only_error(read_file(path, max_bytes=1000))
    assert where == str(path)
    assert "2,048 bytes" in error and "1,000-byte cap" in error and "configurable" in error


def test_binary_file(tmp_path: Path) -> None:
    path = put(tmp_path / "photo.txt", b"GIF89a\x01\x00\x01\x00\x00\xff\x00,")
    assert only_error(read_file(path)) == (str(path), "binary file (NUL bytes in the first 8 KiB)")


def test_undecodable_file(tmp_path: Path) -> None:
    path = put(tmp_path / "legacy.txt", b"caf\xe9 au lait \xff\xfd\xff")
    assert "cannot decode" in only_error(read_file(path))[1]


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        ("memo.doc", "Word (.doc) parsing is not built in yet"),
        ("deck.ppt", "PowerPoint (.ppt) parsing is not built in yet"),
        ("sheet.xlsx", "Excel parsing is not built in yet"),
        ("photo.png", "unsupported file type '.png'"),
        ("Makefile", "unsupported file type (no suffix)"),
    ],
)
def test_unsupported_suffix_lists_the_supported_ones(
    tmp_path: Path, name: str, phrase: str
) -> None:
    path = put(tmp_path / name, b"%PDF-1.7 or whatever")
    where, error = only_error(read_file(path))
    assert where == str(path)
    assert phrase in error
    assert all(suffix in error for suffix in SUPPORTED_SUFFIXES)


def test_suffix_check_ignores_case(tmp_path: Path) -> None:
    assert is_supported(Path("NOTES.MD")) and is_supported(Path("a.PDF"))
    assert not is_supported(Path("a.doc"))
    doc = only_doc(read_file(put(tmp_path / "UPPER.TXT", "loud words\n")))
    assert doc.parser == "text"


def test_fifo_is_not_read(tmp_path: Path) -> None:
    # Opening a FIFO would block forever; it must be refused from stat() alone.
    path = tmp_path / "pipe.txt"
    os.mkfifo(path)
    assert "not a regular file" in only_error(read_file(path))[1]


@pytest.mark.skipif(IS_ROOT, reason="root can read any file")
def test_unreadable_file(tmp_path: Path) -> None:
    path = put(tmp_path / "secret.md", "classified\n")
    path.chmod(0)
    try:
        assert only_error(read_file(path)) == (str(path), "permission denied")
    finally:
        path.chmod(0o644)


def test_permission_denied_is_reported_even_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = put(tmp_path / "secret.md", "classified\n")
    real_open = open

    def deny(file: object, *args: object, **kwargs: object) -> object:
        if file == path:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", deny)
    assert only_error(read_file(path)) == (str(path), "permission denied")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "gone.md"
    assert only_error(read_file(path)) == (str(path), "no such file or directory")


# --- Markdown -------------------------------------------------------------------------------

FRONT = """\
---
title: Retrieval checklist
doc_id: rag-checklist
source: https://wiki.example/rag-checklist
roles: [employee, reviewer]
chunker: sentences
owner: platform team
reviewed: 2024-05-01
---
# Checklist

Print the retrieved chunks before blaming the model.
"""


def test_markdown_front_matter_round_trip(tmp_path: Path) -> None:
    path = put(tmp_path / "kb" / "guides" / "check.md", FRONT)
    doc = only_doc(read_file(path, root=tmp_path / "kb"))
    assert doc.doc_id == "rag-checklist"
    assert doc.title == "Retrieval checklist"
    assert doc.roles == ("employee", "reviewer")
    assert doc.chunker == "sentences"
    assert doc.source == "https://wiki.example/rag-checklist"
    assert doc.metadata == {"owner": "platform team", "reviewed": "2024-05-01"}
    assert doc.parser == "markdown" and doc.encoding == "utf-8"
    assert doc.path == str(path.resolve())
    assert doc.line_offset == 9
    assert doc.text.startswith("# Checklist\n")
    assert file_line(path, doc, "Print the retrieved chunks before blaming the model.") == 12


def test_markdown_without_front_matter_uses_heading_then_stem(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    with_heading = put(kb / "notes" / "rag.md", "Intro line.\n\n## Why chunks matter ##\nBody.\n")
    doc = only_doc(read_file(with_heading, root=kb))
    assert (doc.doc_id, doc.source) == ("notes/rag.md", "notes/rag.md")
    assert doc.title == "Why chunks matter"
    assert doc.line_offset == 0 and doc.roles == () and doc.chunker is None
    fenced = put(kb / "plain.markdown", "```\n# not a heading\n```\nJust prose.\n")
    assert only_doc(read_file(fenced, root=kb)).title == "plain"


def test_a_setext_heading_titles_markdown_as_an_atx_heading_does(tmp_path: Path) -> None:
    # "Title" over "=====" (or "-----") is a heading in CommonMark; the "## Getting it" below
    # it is a section of the document, not its title.
    for underline in ("======", "------"):
        path = put(tmp_path / "install.md",
                   f"Installing the kettle daemon\n{underline}\n\n## Getting it\nFetch it.\n")
        assert only_doc(read_file(path)).title == "Installing the kettle daemon", underline
    # A rule under a list item is a rule; under a paragraph of two lines, it makes them one
    # heading.
    path = put(tmp_path / "rules.md", "- one\n---\n\nTwo lines\nof prose\n---\n\n## Later\n")
    assert only_doc(read_file(path)).title == "Two lines of prose"
    path = put(tmp_path / "list.md", "- one\n- two\n---\n\n## Later\n")
    assert only_doc(read_file(path)).title == "Later"


def test_a_readme_title_leaves_out_its_badges(tmp_path: Path) -> None:
    path = put(tmp_path / "README.md",
               "# kettle-lint [![tests](https://ci.example.org/badge.svg)](https://ci.example.org)"
               " ![npm](https://img.example.org/v.svg)\n\nChecks kettle recipes.\n")
    assert only_doc(read_file(path)).title == "kettle-lint"


def test_markdown_roles_as_comma_separated_string(tmp_path: Path) -> None:
    path = put(tmp_path / "r.md", "---\nroles: employee, hr ,\n---\nPayroll dates.\n")
    assert only_doc(read_file(path)).roles == ("employee", "hr")


def test_markdown_crlf_front_matter_keeps_line_numbers(tmp_path: Path) -> None:
    raw = "---\r\ntitle: Windows note\r\n---\r\n\r\nLine five.\r\nLine six.\r\n"
    path = put(tmp_path / "w.md", raw)
    doc = only_doc(read_file(path))
    assert doc.title == "Windows note" and doc.line_offset == 3
    assert doc.text == "\nLine five.\nLine six.\n"
    assert file_line(path, doc, "Line six.") == 6


def test_markdown_gb18030_file(tmp_path: Path) -> None:
    path = put(tmp_path / "zh.md", f"# 退票规则\n\n{ZH}\n".encode("gb18030"))
    doc = only_doc(read_file(path))
    assert (doc.title, doc.encoding) == ("退票规则", "gb18030")
    assert ZH in doc.text


def test_markdown_unterminated_front_matter(tmp_path: Path) -> None:
    path = put(tmp_path / "open.md", "---\ntitle: Never closed\n\nBody text.\n")
    where, error = only_error(read_file(path))
    assert where == str(path) and "never closed" in error


def test_markdown_front_matter_yaml_error_names_the_line(tmp_path: Path) -> None:
    path = put(tmp_path / "bad.md", "---\ntitle: ok\nroles: [employee\nowner: x\n---\nBody.\n")
    where, error = only_error(read_file(path))
    assert where == str(path)
    assert "invalid YAML at line" in error
    line = int(error.split("at line ")[1].split(":")[0])
    assert 3 <= line <= 5  # inside the front matter, counted as a file line


def test_markdown_front_matter_must_be_a_mapping(tmp_path: Path) -> None:
    path = put(tmp_path / "list.md", "---\n- one\n- two\n---\nBody.\n")
    assert "must be a mapping, not list" in only_error(read_file(path))[1]


@pytest.mark.parametrize(
    ("field_yaml", "phrase"),
    [
        ("title: 42", "'title' must be a non-empty string"),
        ("doc_id: ['a']", "'doc_id' must be a non-empty string"),
        ("chunker: {name: window}", "'chunker' must be a non-empty string"),
        ("roles: {team: hr}", "'roles' must be a list of strings"),
        ("roles: [hr, 7]", "'roles' must be a list of strings"),
    ],
)
def test_markdown_front_matter_wrong_field_types(
    tmp_path: Path, field_yaml: str, phrase: str
) -> None:
    # The whole file fails: ingesting it without its roles could expose it to everyone.
    path = put(tmp_path / "typed.md", f"---\n{field_yaml}\n---\nBody.\n")
    assert phrase in only_error(read_file(path))[1]


def test_markdown_with_only_front_matter_is_empty(tmp_path: Path) -> None:
    path = put(tmp_path / "meta.md", "---\ntitle: Nothing here\n---\n\n")
    assert "no text after the front matter" in only_error(read_file(path))[1]


def test_markdown_empty_front_matter_is_allowed(tmp_path: Path) -> None:
    doc = only_doc(read_file(put(tmp_path / "e.md", "---\n---\nHello.\n")))
    assert (doc.text, doc.line_offset, doc.metadata) == ("Hello.\n", 2, {})


# --- plain and sectioned text ---------------------------------------------------------------


def test_plain_text_round_trip(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    path = put(kb / "review.txt", "First line of notes.\n\nThird line checks citations.\n")
    doc = only_doc(read_file(path, root=kb))
    assert (doc.doc_id, doc.source, doc.title, doc.parser) == (
        "review.txt", "review.txt", "review", "text",
    )
    assert doc.text == "First line of notes.\n\nThird line checks citations.\n"
    assert file_line(path, doc, "Third line checks citations.") == 3


def test_plain_text_shift_jis(tmp_path: Path) -> None:
    path = put(tmp_path / "ja.txt", (JA + "\r\n" + JA + "\r\n").encode("shift_jis"))
    doc = only_doc(read_file(path))
    assert doc.text == f"{JA}\n{JA}\n"
    assert doc.encoding in ("shift_jis", "cp932")


def test_plain_text_utf16(tmp_path: Path) -> None:
    path = put(tmp_path / "wide.txt", ("Wide notes\n" + ZH + "\n").encode("utf-16"))
    doc = only_doc(read_file(path))
    assert doc.text == f"Wide notes\n{ZH}\n" and doc.encoding == "utf-16"


SECTIONED = (
    "\n"
    "[doc:returns]\n"
    "Returns are free within 30 days.\n"
    "Refunds go back to the card.\n"
    "\n"
    "[doc:delivery]   \n"  # trailing spaces after a header are allowed
    "Parcels leave the depot within two working days.\n"
    "\n"
    "[doc:invoices]\n"
    "Invoices arrive by email.\n"
)


def test_sectioned_text_round_trip(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    path = put(kb / "shop" / "kb.txt", SECTIONED)
    result = read_file(path, root=kb)
    assert result.errors == []
    docs = {d.doc_id: d for d in result.documents}
    assert list(docs) == ["returns", "delivery", "invoices"]
    returns = docs["returns"]
    assert returns.title == "returns" and returns.source == "shop/kb.txt#returns"
    assert returns.parser == "sectioned" and returns.chunker is None
    assert returns.text == "Returns are free within 30 days.\nRefunds go back to the card."
    assert returns.line_offset == 2
    assert file_line(path, returns, "Refunds go back to the card.") == 4
    delivery = "Parcels leave the depot within two working days."
    assert file_line(path, docs["delivery"], delivery) == 7
    assert file_line(path, docs["invoices"], "Invoices arrive by email.") == 10


def test_sectioned_duplicate_name_is_an_error_for_the_later_section(tmp_path: Path) -> None:
    text = "[doc:faq]\nFirst answer.\n[doc:other]\nX.\n[doc:faq]\nAgain.\n"
    path = put(tmp_path / "kb.txt", text)
    result = read_file(path)
    assert [d.doc_id for d in result.documents] == ["faq", "other"]
    assert result.documents[0].text == "First answer."
    assert len(result.errors) == 1
    assert result.errors[0].path == f"{path}:5"
    assert "duplicate section [doc:faq]" in result.errors[0].error
    assert "line 1" in result.errors[0].error


def test_sectioned_empty_section_is_an_error(tmp_path: Path) -> None:
    path = put(tmp_path / "kb.txt", "[doc:full]\nSomething.\n\n[doc:hollow]\n\n")
    result = read_file(path)
    assert [d.doc_id for d in result.documents] == ["full"]
    assert [(e.path, e.error) for e in result.errors] == [
        (f"{path}:4", "section [doc:hollow] has no text")
    ]


def test_text_with_a_header_later_is_plain_text(tmp_path: Path) -> None:
    path = put(tmp_path / "t.txt", "Intro first.\n[doc:late]\nMore.\n")
    assert only_doc(read_file(path)).parser == "text"


# --- JSONL ----------------------------------------------------------------------------------

RECORDS: list[dict[str, Any]] = [
    {
        "doc_id": "leave-policy",
        "title": "Annual leave",
        "source": "hr.md#leave",
        "roles": ["employee"],
        "text": "Staff get 25 days of leave. Unused days expire in March.",
    },
    {"doc_id": "canteen", "text": "The canteen opens at noon.", "metadata": {"floor": 2}},
]


def test_jsonl_round_trip(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    lines = [json.dumps(r) for r in RECORDS]
    path = put(kb / "data" / "docs.jsonl", "\n".join([lines[0], "", lines[1]]) + "\n")
    result = read_file(path, root=kb)
    assert result.errors == []
    first, second = result.documents
    assert (first.doc_id, first.title, first.source, first.roles) == (
        "leave-policy", "Annual leave", "hr.md#leave", ("employee",),
    )
    assert first.text == RECORDS[0]["text"] and first.parser == "jsonl" and first.line_offset == 0
    assert (second.title, second.source, second.roles) == (
        "canteen", "data/docs.jsonl#canteen", (),
    )
    assert second.metadata == {"floor": 2}
    assert second.path == str(path.resolve())


def test_jsonl_extra_keys_go_to_metadata(tmp_path: Path) -> None:
    record = {"doc_id": "a", "text": "Body.", "url": "https://example.org", "metadata": {"k": 1}}
    doc = only_doc(read_file(put(tmp_path / "x.jsonl", json.dumps(record))))
    assert doc.metadata == {"url": "https://example.org", "k": 1}


def test_jsonl_record_text_newlines_are_normalised(tmp_path: Path) -> None:
    path = put(tmp_path / "x.jsonl", json.dumps({"doc_id": "a", "text": "1\r\n2"}))
    doc = only_doc(read_file(path))
    assert doc.text == "1\n2"


@pytest.mark.parametrize(
    ("line", "phrase"),
    [
        ('{"doc_id": "a", "text": "unclosed', "invalid JSON"),
        ('["doc_id", "text"]', "expected a JSON object, got list"),
        ('{"doc_id": "a"}', "missing required field 'text'"),
        ('{"doc_id": "a", "text": "   "}', "'text' must be a non-empty string"),
        ('{"doc_id": "a", "text": 5}', "'text' must be a non-empty string"),
        ('{"text": "orphan"}', "missing required field 'doc_id'"),
        ('{"doc_id": "", "text": "t"}', "'doc_id' must be a non-empty string"),
        ('{"doc_id": "a", "text": "t", "roles": "employee"}', "'roles' must be a list of strings"),
        ('{"doc_id": "a", "text": "t", "roles": [1]}', "'roles' must be a list of strings"),
        ('{"doc_id": "a", "text": "t", "title": ["x"]}', "'title' must be a non-empty string"),
        ('{"doc_id": "a", "text": "t", "metadata": []}', "'metadata' must be a JSON object"),
        ('{"doc_id": "a", "text": "t", "chunker": 3}', "'chunker' must be a non-empty string"),
    ],
)
def test_jsonl_bad_line_is_reported_and_other_lines_load(
    tmp_path: Path, line: str, phrase: str
) -> None:
    good = json.dumps({"doc_id": "good", "text": "Fine record."})
    path = put(tmp_path / "mixed.jsonl", f"{good}\n\n{line}\n")
    result = read_file(path)
    assert [d.doc_id for d in result.documents] == ["good"]
    assert len(result.errors) == 1
    assert result.errors[0].path == f"{path}:3"
    assert result.errors[0].error.startswith("line 3: ")
    assert phrase in result.errors[0].error


def test_jsonl_duplicate_doc_id_fails_the_later_line(tmp_path: Path) -> None:
    rows = [
        {"doc_id": "same", "text": "Kept."},
        {"doc_id": "other", "text": "Also kept."},
        {"doc_id": "same", "text": "Rejected."},
    ]
    path = put(tmp_path / "dup.jsonl", "\n".join(json.dumps(r) for r in rows))
    result = read_file(path)
    assert [d.text for d in result.documents] == ["Kept.", "Also kept."]
    assert [e.path for e in result.errors] == [f"{path}:3"]
    assert "duplicate doc_id 'same' (first on line 1)" in result.errors[0].error


def test_jsonl_line_separator_inside_a_string_is_not_a_line_break(tmp_path: Path) -> None:
    raw = '{"doc_id": "a", "text": "one\u2028two"}\n{"doc_id": "b", "text": "three"}\n'
    result = read_file(put(tmp_path / "ls.jsonl", raw))
    assert result.errors == [] and [d.doc_id for d in result.documents] == ["a", "b"]


# --- properties -----------------------------------------------------------------------------
# Lines are non-empty so a lone CR is never directly followed by a LF (that would be CRLF).
_line = st.text(st.characters(blacklist_characters="\r\n\ufeff"), min_size=1, max_size=12)
_lines = st.lists(_line)


@given(_lines, st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=12, max_size=12))
def test_normalize_text_keeps_every_line(lines: list[str], breaks: list[str]) -> None:
    original = "".join(line + breaks[i % len(breaks)] for i, line in enumerate(lines))
    assert normalize_text(original).split("\n")[:-1] == lines


@given(st.text(max_size=200))
def test_utf8_round_trip(text: str) -> None:
    if "\x00" not in text and not text.startswith("\ufeff"):
        assert decode_bytes(text.encode("utf-8")) == (text, "utf-8")
