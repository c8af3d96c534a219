"""Round trips per format: what a generator wrote is what the parser returns, with positions.

Every input is generated here (a minimal PDF writer, python-docx, python-pptx, the standard
library's email package, HTML and CSV strings), so the expected text is known exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glassrag.ingest.chunking import chunk_text
from glassrag.parsers import ParseOptions, parser_for, position_runs
from glassrag.parsers.base import Limits, TextBuilder, wrap
from glassrag.parsers.readers import read_file
from glassrag.records import SourceDocument
from parser_samples import encrypt_pdf, make_docx, make_eml, make_pdf, make_pptx


def only_doc(path: Path, **kwargs) -> SourceDocument:
    result = read_file(path, **kwargs)
    assert result.errors == []
    [doc] = result.documents
    return doc


def line_of(doc: SourceDocument, needle: str) -> int:
    """1-based line of ``doc.text`` holding ``needle``."""
    return next(i for i, line in enumerate(doc.text.split("\n"), 1) if needle in line)


def test_pdf_text_and_page_of_every_line(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf(
        [["Alpha opening line", "second (bracketed) line"], [], ["Gamma closing words"]],
        title="Annual report",
    ))
    doc = only_doc(path)
    assert doc.parser == "pdf" and doc.title == "Annual report" and doc.encoding is None
    assert doc.text == "Alpha opening line\nsecond (bracketed) line\n\nGamma closing words"
    # Page 2 has no text; the blank line between pages belongs to the page before it.
    assert doc.positions == {"page": (1, 1, 1, 3)}
    assert doc.metadata == {"pages": 3, "pages_without_text": [2]}
    spans = chunk_text(doc.text, "structure")
    assert [(s.text, s.line_start) for s in spans] == [
        ("Alpha opening line\nsecond (bracketed) line", 1), ("Gamma closing words", 4),
    ]
    assert position_runs(doc.positions) == {"page": [
        {"page": 1, "line_start": 1, "line_end": 3}, {"page": 3, "line_start": 4, "line_end": 4},
    ]}


def test_pdf_title_falls_back_to_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "minutes.pdf"
    path.write_bytes(make_pdf([["Only page"]]))
    assert only_doc(path).title == "minutes"


def test_pdf_with_owner_password_only_opens(tmp_path: Path) -> None:
    path = tmp_path / "locked-for-editing.pdf"
    path.write_bytes(encrypt_pdf(make_pdf([["Readable by anyone"]]), user_password=""))
    assert only_doc(path).text == "Readable by anyone"


def test_docx_headings_paragraphs_and_tables(tmp_path: Path) -> None:
    doc = only_doc(make_docx(tmp_path / "policy.docx"))
    assert doc.parser == "docx" and doc.title == "Travel policy"
    assert doc.metadata["author"] == "Finance"
    assert doc.text == (
        "# Travel policy\n\nEmployees book trains for trips under four hours.\n\n"
        "## Allowances\n\nThe daily meal allowance is 45 euros.\n\n"
        "City | Rate\nParis | 60\nBerlin | 55\n\nReceipts are kept for seven years."
    )
    spans = chunk_text(doc.text, "structure")
    assert [s.heading for s in spans] == [
        "Travel policy", "Travel policy", "Allowances", "Allowances", "Allowances", "Allowances"
    ]
    assert spans[4].text == "City | Rate\nParis | 60\nBerlin | 55"


def test_pptx_one_section_per_slide_with_slide_numbers(tmp_path: Path) -> None:
    doc = only_doc(make_pptx(tmp_path / "deck.pptx"))
    assert doc.parser == "pptx" and doc.title == "Quarterly results"
    assert doc.metadata == {"slides": 3}
    assert doc.text == (
        "# Quarterly results\nRevenue grew 12 percent\nCosts were flat\n"
        "Notes:\nMention the new office.\n\n"
        "# Regional split\nRegion | Share\nNorth | 40%\n\n"
        "# Slide 3\nQuestions welcome"
    )
    assert doc.positions == {"slide": (1,) * 6 + (2,) * 4 + (3,) * 2}
    spans = chunk_text(doc.text, "structure")
    slides = [doc.positions["slide"][s.line_start - 1] for s in spans]
    assert [(s.heading, slide) for s, slide in zip(spans, slides, strict=True)] == [
        ("Quarterly results", 1), ("Regional split", 2), ("Slide 3", 3),
    ]


HTML = """<!DOCTYPE html>
<html lang="en"><head><title>Refund guide</title>
<meta name="description" content="How refunds work">
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body><nav><a href="/">Home menu</a></nav>
<header><p>Site banner</p></header>
<main>
  <h1>Refunds</h1>
  <p>Learners   may ask for a <b>refund</b>
     within 14 days.</p>
  <h2>Steps</h2>
  <ul><li>Open the form</li><li>Send it</li></ul>
  <table><tr><th>Plan</th><th>Days</th></tr><tr><td>Basic</td><td>14</td></tr></table>
  <pre>code   kept
  indented</pre>
  <script>alert("inline script")</script>
</main>
<footer>Copyright footer</footer></body></html>
"""


def test_html_main_content_headings_and_dropped_parts(tmp_path: Path) -> None:
    path = tmp_path / "guide.html"
    path.write_text(HTML, encoding="utf-8")
    doc = only_doc(path)
    assert doc.parser == "html" and doc.title == "Refund guide" and doc.encoding == "utf-8"
    assert doc.metadata == {"lang": "en", "description": "How refunds work"}
    assert doc.text == (
        "# Refunds\n\nLearners may ask for a refund within 14 days.\n\n## Steps\n\n"
        "Open the form\nSend it\n\nPlan | Days\nBasic | 14\n\ncode   kept\n  indented"
    )
    for dropped in ("script", "menu", "footer", "banner", "color"):
        assert dropped not in doc.text


def test_html_without_main_uses_the_body_and_first_heading(tmp_path: Path) -> None:
    path = tmp_path / "page.htm"
    path.write_text("<html><body><h2>Only heading</h2><div>Body text<br>next line</div>"
                    "<aside>sidebar</aside></body></html>")
    doc = only_doc(path)
    assert doc.title == "Only heading"
    assert doc.text == "## Only heading\n\nBody text\nnext line"


SPHINX_PAGE = """<!doctype html><html><head><title>Policy</title></head><body>
<div class="related" role="navigation"><h3>Navigation</h3><a href="index.html">index</a></div>
<div class="document"><div class="body" role="main">
<section id="versions">
<h1>Versions<a class="headerlink" href="#versions" title="Link">\u00b6</a></h1>
<p>Use the <a href="#defaults">default version</a> unless told otherwise.</p>
<h2 id="defaults">Defaults<a href="#defaults">#</a></h2><p>Python 3 is the default.</p>
</section></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Quick search</h3></div>
<div role="contentinfo">Built with Sphinx.</div>
</body></html>
"""


def test_html_landmark_roles_and_permalink_markers_are_not_text(tmp_path: Path) -> None:
    path = tmp_path / "policy.html"
    path.write_text(SPHINX_PAGE, encoding="utf-8")
    doc = only_doc(path)
    # role="main" is the content; the headings end in their words, not in "\u00b6" or "#";
    # a link to an anchor that shows words is text.
    assert doc.text == ("# Versions\n\nUse the default version unless told otherwise.\n\n"
                        "## Defaults\n\nPython 3 is the default.")
    assert doc.title == "Policy"
    page = SPHINX_PAGE.replace('role="main"', "")  # no main part: the body, less its furniture
    path.write_text(page, encoding="utf-8")
    text = only_doc(path).text
    assert text.startswith("# Versions\n") and "Navigation" not in text
    assert "Quick search" not in text and "Built with Sphinx" not in text


def test_eml_subject_metadata_and_file_lines(tmp_path: Path) -> None:
    path = tmp_path / "kickoff.eml"
    raw = make_eml()
    path.write_bytes(raw)
    doc = only_doc(path)
    assert doc.parser == "eml" and doc.title == "Project kickoff"
    assert doc.metadata == {
        "from": "Ada Lovelace <ada@example.org>", "to": "team@example.org",
        "date": "Mon, 06 Jan 2025 09:00:00 +0000", "body": "text/plain",
    }
    assert doc.text == "Hello team,\n\nThe kickoff is on Monday at 9.\n\nRegards,\nAda"
    # The body is stored verbatim, so chunk lines are the .eml file's own lines.
    file_lines = raw.decode().split("\n")
    for span in chunk_text(doc.text, "structure", line_offset=doc.line_offset):
        assert file_lines[span.line_start - 1] == span.text.split("\n")[0]


def test_eml_prefers_plain_and_converts_html_only(tmp_path: Path) -> None:
    both = tmp_path / "both.eml"
    both.write_bytes(make_eml(body="Plain words.\n", html="<p>HTML words</p>"))
    assert only_doc(both).text == "Plain words."
    html_only = tmp_path / "html.eml"
    html_only.write_bytes(make_eml(body="", html="<html><body><h1>News</h1><p>Only HTML"
                                                 "<script>x()</script></p></body></html>"))
    doc = only_doc(html_only)
    assert doc.text == "# News\n\nOnly HTML"
    assert doc.metadata["body"] == "text/html" and doc.line_offset == 0


def test_eml_quoted_printable_body_has_no_file_offset(tmp_path: Path) -> None:
    path = tmp_path / "qp.eml"
    path.write_bytes(make_eml(body="Caf\u00e9 menu: " + "long words " * 20 + "\n"))
    doc = only_doc(path)
    assert doc.text.startswith("Café menu: long words") and doc.line_offset == 0
    assert all(len(line) <= 100 for line in doc.text.split("\n"))


CSV = ('name,year,summary\nAda,1843,"First program, with notes"\nAlan,1936,\n\n'
       'Grace,1952,"A\ncompiler"\n')


def test_csv_default_template_rows_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text(CSV, encoding="utf-8")
    doc = only_doc(path)
    assert doc.parser == "csv" and doc.title == "people" and doc.line_offset == 1
    assert doc.text.split("\n") == [
        "name: Ada; year: 1843; summary: First program, with notes",
        "name: Alan; year: 1936",  # empty values are left out
        "name: Grace; year: 1952; summary: A compiler",
    ]
    # Spreadsheet rows (the header is row 1; the blank line is row 4).
    assert doc.positions == {"row": (2, 3, 5)}
    assert doc.metadata == {"columns": ["name", "year", "summary"], "rows": 3, "delimiter": ","}
    [span] = chunk_text(doc.text, "structure", line_offset=doc.line_offset)
    assert (span.line_start, span.line_end) == (2, 4)  # file lines 2-3 are Ada and Alan


def test_csv_template_and_tsv(tmp_path: Path) -> None:
    path = tmp_path / "people.tsv"
    path.write_text("name\tyear\nAda\t1843\nAlan\t1936\n", encoding="utf-8")
    options = ParseOptions(csv_template="{name} ({year}) {{braces}}")
    doc = only_doc(path, parse_options=options)
    assert doc.parser == "tsv"
    assert doc.text == "Ada (1843) {braces}\nAlan (1936) {braces}"


def test_csv_template_naming_a_missing_column_is_a_file_error(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text(CSV, encoding="utf-8")
    result = read_file(path, parse_options=ParseOptions(csv_template="{nom}"))
    assert result.documents == []
    assert "csv_template names column {nom}" in result.errors[0].error


def test_csv_semicolons_are_sniffed_and_long_rows_wrapped(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    long_text = " ".join(["word"] * 200)
    path.write_text(f"id;text\n1;{long_text}\n2;short\n", encoding="utf-8")
    doc = only_doc(path)
    assert doc.metadata["delimiter"] == ";"
    lines = doc.text.split("\n")
    assert all(len(line) <= 500 for line in lines) and len(lines) == 4
    assert " ".join(lines[:3]) == f"id: 1; text: {long_text}"
    assert doc.positions["row"] == (2, 2, 2, 3)


@pytest.mark.parametrize(
    ("suffix", "name"),
    [(".pdf", "pdf"), (".DOCX", "docx"), (".pptx", "pptx"), (".htm", "html"),
     (".html", "html"), (".xhtml", "html"), (".eml", "eml"), (".csv", "csv"), (".tsv", "tsv"),
     (".md", "markdown"), (".Markdown", "markdown"), (".rst", "rst"), (".txt", "text"),
     (".jsonl", "jsonl")],
)
def test_registry_by_suffix(suffix: str, name: str) -> None:
    parser = parser_for(suffix)
    assert parser is not None and parser.name == name
    assert parser_for(".doc") is None and parser_for("") is None


def test_wrap_keeps_sentences_whole_and_cuts_long_runs() -> None:
    sentence = "This sentence has exactly some words in it."
    lines = wrap(" ".join([sentence] * 6), width=100)
    assert lines == [f"{sentence} {sentence}"] * 3
    assert wrap("x" * 250, width=100) == ["x" * 100, "x" * 100, "x" * 50]
    han = "这是一个很长的中文句子。" * 20
    assert "".join(wrap(han, width=100)) == han
    assert all(len(line) <= 100 for line in wrap(han, width=100))


def test_text_builder_cleans_controls_and_collapses_blank_lines() -> None:
    out = TextBuilder(Limits())
    out.add("a\x00b\x0cc\r\n\n\n\nd\u2028e", page=1)
    out.blank(page=1)
    text, positions = out.build()
    assert text == "ab\nc\n\nd\ne"
    assert positions == {"page": (1, 1, 1, 1, 1)}
