"""Parsed formats through a real knowledge base and the CLI: pages and slides on hits and
citations, per-parser counts, the position map in ``docs show``, the CSV template setting,
and bad files that never cost what is already stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glassrag import KnowledgeBase
from glassrag.interfaces.cli.main import app
from parser_samples import encrypt_pdf, make_docx, make_eml, make_pdf, make_pptx

HANDBOOK = [
    ["Welcome to the company handbook.", "This page covers the office hours."],
    ["Expense claims must be filed within thirty days.", "Late claims need a manager approval."],
    ["The holiday party is in December.", "Bring a friend."],
]


@pytest.fixture
def handbook(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "handbook.pdf"
    path.parent.mkdir()
    path.write_bytes(make_pdf(HANDBOOK, title="Employee handbook"))
    return path


def test_search_hit_and_answer_citation_carry_the_page(kb: KnowledgeBase, handbook: Path) -> None:
    report = kb.ingest([handbook])
    assert report.failed == [] and report.parsers == {"pdf": {"files": 1, "chunks": 3}}
    top = kb.search("expense claims deadline").hits[0]
    assert "Expense claims must be filed" in top.chunk.text
    assert top.chunk.page == 2 and top.to_dict()["page"] == 2
    assert (top.chunk.line_start, top.chunk.line_end) == (4, 5)
    answer = kb.ask("How many days do we have to file expense claims?")
    assert answer.status == "answered"
    citation = answer.citations[0]
    assert citation.page == 2 and citation.to_dict()["page"] == 2
    assert citation.quote in " ".join(HANDBOOK[1])
    assert answer.to_dict()["evidence"][0]["page"] == 2


def test_slides_are_on_hits_and_pages_absent_elsewhere(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.ingest([make_pptx(tmp_path / "deck.pptx"), make_docx(tmp_path / "policy.docx")])
    hit = kb.search("regional share north").hits[0]
    assert hit.chunk.slide == 2 and hit.to_dict()["slide"] == 2 and "page" not in hit.to_dict()
    word = kb.search("meal allowance euros").hits[0]
    assert word.chunk.doc_id == "policy.docx"
    assert "page" not in word.to_dict() and "slide" not in word.to_dict()


def test_bad_files_fail_alone_and_nothing_stored_is_lost(kb: KnowledgeBase,
                                                         tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nplatypus sightings are rare\n")
    assert kb.ingest([folder]).added == 1
    raw = make_pdf([["platypus report"]])
    (folder / "cut.pdf").write_bytes(raw[: len(raw) // 2])
    (folder / "locked.pdf").write_bytes(encrypt_pdf(raw, "pw"))
    (folder / "scan.pdf").write_bytes(make_pdf([[]]))
    (folder / "memo.docx").write_bytes(b"not a zip")
    (folder / "deep.html").write_bytes(b"<div>" * 10_000)
    (folder / "good.pdf").write_bytes(raw)
    (folder / "mail.eml").write_bytes(make_eml(body="A platypus was seen near the lake.\n"))
    report = kb.ingest([folder])
    failed = {Path(f.path).name for f in report.failed}
    assert failed == {"cut.pdf", "locked.pdf", "scan.pdf", "memo.docx", "deep.html"}
    assert report.added == 2 and report.unchanged == 1
    assert report.parsers == {"pdf": {"files": 1, "chunks": 1}, "eml": {"files": 1, "chunks": 1}}
    found = {h.chunk.doc_id for h in kb.search("platypus").hits}
    assert found == {"notes.md", "good.pdf", "mail.eml"}


def test_csv_template_from_the_settings_file(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    table = tmp_path / "people.csv"
    table.write_text("name,field\nAda,mathematics\nAlan,logic\n", encoding="utf-8")
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([table])
        assert kb.chunks("people.csv")[0].text == (
            "name: Ada; field: mathematics\nname: Alan; field: logic")
    template = 'csv_template = "{name} studied {field}"'
    config.write_text(config.read_text().replace('csv_template = ""', template))
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([table])  # a new template re-renders an unchanged file
        assert report.updated == 1
        [chunk] = kb.chunks("people.csv")
        assert chunk.text == "Ada studied mathematics\nAlan studied logic"
        assert (chunk.line_start, chunk.line_end) == (2, 3)  # the rows' own file lines


@pytest.fixture
def run(tmp_path: Path):
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, ["--kb", str(tmp_path / "kb"), *args])

    return invoke


def test_cli_ingest_reports_per_parser_counts(run, handbook: Path, tmp_path: Path) -> None:
    make_pptx(handbook.parent / "deck.pptx")
    (handbook.parent / "notes.md").write_text("# Notes\n\nshort\n")
    result = run("ingest", str(handbook.parent))
    assert result.exit_code == 0, result.output
    assert "  markdown: 1 files, 1 chunks" in result.stdout  # heading and text: one section
    assert "  pdf: 1 files, 3 chunks" in result.stdout
    assert "  pptx: 1 files, 3 chunks" in result.stdout
    data = json.loads(run("ingest", str(handbook.parent), "--json").stdout)
    assert data["parsers"] == {}  # nothing was re-read: every file is unchanged


def test_cli_docs_show_prints_the_position_map(run, handbook: Path) -> None:
    run("ingest", str(handbook))
    shown = run("docs", "show", "handbook.pdf")
    assert shown.exit_code == 0, shown.output
    assert "positions (page):" in shown.stdout
    assert "  page 2: lines 4-6" in shown.stdout
    assert "handbook.pdf#2 lines 4-5 page 2" in shown.stdout
    data = json.loads(run("docs", "show", "handbook.pdf", "--json").stdout)
    assert data["positions"] == {"page": [
        {"page": 1, "line_start": 1, "line_end": 3},
        {"page": 2, "line_start": 4, "line_end": 6},
        {"page": 3, "line_start": 7, "line_end": 8},
    ]}
    assert [c["page"] for c in data["chunks"]] == [1, 2, 3]
