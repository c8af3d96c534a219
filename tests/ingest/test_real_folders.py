"""Real documentation folders: stray files are skipped and counted, globs match at any depth,
JSONL exports are read record by record."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from glassrag import KnowledgeBase
from glassrag.ingest.discovery import discover
from glassrag.interfaces.cli.main import app
from glassrag.parsers.readers import read_file


def docs_folder(root: Path) -> Path:
    folder = root / "docs"
    (folder / "img").mkdir(parents=True)
    (folder / "guide").mkdir()
    (folder / "index.md").write_text("# Home\n\nWelcome to the project.\n")
    (folder / "guide" / "setup.rst").write_text("Setup\n=====\n\nRun the installer.\n")
    (folder / "img" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (folder / "style.css").write_text("body { color: red }\n")
    (folder / "Makefile").write_text("html:\n\tsphinx-build . _build\n")
    (folder / "CNAME").write_text("docs.example.org\n")
    (folder / "LICENSE").write_text("Permission is hereby granted.\n")
    (folder / "layout.jinja").write_text("{{ body }}\n")
    return folder


def test_unsupported_files_inside_a_folder_are_skipped_and_counted(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        report = kb.ingest([folder])
    assert report.failed == []
    assert report.skipped == {"unsupported type": 6}
    assert report.added == 2 and report.to_dict()["skipped"] == {"unsupported type": 6}


def test_cli_exit_code_is_zero_for_skips_but_not_for_an_explicit_unsupported_file(
    tmp_path: Path,
) -> None:
    folder = docs_folder(tmp_path)
    runner = CliRunner()
    kb = str(tmp_path / "kb")
    result = runner.invoke(app, ["--kb", kb, "ingest", str(folder)])
    assert result.exit_code == 0, result.output
    assert "skipped 6 files (6 unsupported type)" in result.stdout
    named = runner.invoke(app, ["--kb", kb, "ingest", str(folder / "Makefile")])
    assert named.exit_code != 0
    assert "Makefile" in named.output and "unsupported file type" in named.output


def test_a_glob_without_a_slash_matches_file_names_at_every_depth(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    (folder / "guide" / "deep").mkdir()
    (folder / "guide" / "deep" / "faq.md").write_text("# FAQ\n\nAnswers.\n")
    files, _ = discover([folder], include=["*.md"])
    assert sorted(f.relative_to(folder).as_posix() for f, _ in files) == [
        "guide/deep/faq.md", "index.md",
    ]
    files, _ = discover([folder], include=["guide/*.rst"], exclude=["faq.md"])
    assert [f.relative_to(folder).as_posix() for f, _ in files] == ["guide/setup.rst"]
    # A pattern with a slash is anchored at the ingested folder.
    files, _ = discover([folder], include=["*/faq.md"])
    assert files == []


def test_a_jsonl_export_larger_than_the_file_cap_is_read_record_by_record(
    tmp_path: Path,
) -> None:
    export = tmp_path / "export.jsonl"
    records = [{"doc_id": f"r{n}", "title": "", "text": f"Record number {n} about walruses."}
               for n in range(200)]
    records[7]["text"] = "walrus " * 100  # one record over the cap
    export.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert export.stat().st_size > 8000
    result = read_file(export, max_bytes=400)
    assert len(result.documents) == 199
    assert [e.path for e in result.errors] == [f"{export}:8"]
    assert "over the 400-byte cap" in result.errors[0].error
    # an empty title takes the doc_id
    assert result.documents[0].title == "r0"


def test_a_big_jsonl_export_ingests_and_is_skipped_when_unchanged(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text("\n".join(
        json.dumps({"doc_id": f"r{n}", "text": f"Record {n} mentions otters."}) for n in range(300)
    ) + "\n")
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    config.write_text(config.read_text().replace("max_file_bytes = 20000000",
                                                 "max_file_bytes = 1000"))
    with KnowledgeBase.open(kb_dir) as kb:
        first = kb.ingest([export])
        again = kb.ingest([export])
    assert first.failed == [] and first.added == 300
    assert again.failed == [] and again.unchanged == 300


def test_invalid_utf8_in_one_jsonl_record_fails_that_line_only(tmp_path: Path) -> None:
    export = tmp_path / "mixed.jsonl"
    export.write_bytes(b'{"doc_id": "a", "text": "fine"}\n{"doc_id": "b", "text": "\xff"}\n')
    result = read_file(export)
    assert [d.doc_id for d in result.documents] == ["a"]
    assert [e.path for e in result.errors] == [f"{export}:2"]
    assert "not valid UTF-8" in result.errors[0].error


def test_empty_title_in_front_matter_falls_back_to_the_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('---\ntitle: ""\n---\n# Real title\n\nText.\n')
    [doc] = read_file(page).documents
    assert doc.title == "Real title"
