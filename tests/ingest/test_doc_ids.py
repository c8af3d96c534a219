"""A doc_id stored from one file is never silently taken over by another file."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.interfaces.cli.main import app

PUBLIC = Principal("p")
HR = Principal("h", roles=["hr"])


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    hr = tmp_path / "hr"
    public = tmp_path / "public"
    put(hr / "README.md", "# HR\n\nThe ocelot keeper canary salary is 91000.\n")
    put(public / "README.md", "# Welcome\n\nOcelot visiting hours are 9 to 5.\n")
    return hr, public


def _snapshot(kb: KnowledgeBase, doc_id: str) -> tuple:
    doc = kb.document(doc_id)
    return (doc.roles, doc.content_hash, doc.version, doc.path,
            [c.text for c in kb.chunks(doc_id)], kb.store.history(doc_id))


def test_second_folder_with_the_same_file_name_is_refused(kb: KnowledgeBase,
                                                          tmp_path: Path) -> None:
    hr, public = _folders(tmp_path)
    kb.ingest([hr], roles=["hr"])
    before = _snapshot(kb, "README.md")
    report = kb.ingest([public], roles=["public"])
    assert (report.added, report.updated) == (0, 0)
    [failure] = report.failed
    assert failure.path == str(public / "README.md")
    # Both paths are named, and how to go on.
    assert str((hr / "README.md").resolve()) in failure.error
    assert str((public / "README.md").resolve()) in failure.error
    assert "--replace" in failure.error and "--id-prefix" in failure.error
    assert _snapshot(kb, "README.md") == before  # nothing stored changed
    assert not any("canary" in h.chunk.text for h in kb.search("ocelot", principal=PUBLIC).hits)
    assert any("canary" in h.chunk.text for h in kb.search("ocelot", principal=HR).hits)


def test_replace_takes_the_doc_id_over(kb: KnowledgeBase, tmp_path: Path) -> None:
    hr, public = _folders(tmp_path)
    kb.ingest([hr], roles=["hr"])
    report = kb.ingest([public], roles=["public"], replace=True)
    assert (report.updated, report.failed) == (1, [])
    doc = kb.document("README.md")
    assert doc.roles == ("public",) and doc.path == str((public / "README.md").resolve())


def test_id_prefix_keeps_both_documents(kb: KnowledgeBase, tmp_path: Path) -> None:
    hr, public = _folders(tmp_path)
    kb.ingest([hr], roles=["hr"], id_prefix="hr/")
    report = kb.ingest([public], roles=["public"], id_prefix="public/")
    assert (report.added, report.failed) == (1, [])
    assert sorted(d.doc_id for d in kb.documents()) == ["hr/README.md", "public/README.md"]
    assert kb.document("hr/README.md").roles == ("hr",)
    # Re-ingesting with the same prefix is unchanged, not a conflict.
    again = kb.ingest([hr], roles=["hr"], id_prefix="hr/")
    assert (again.unchanged, again.failed) == (1, [])


def test_jsonl_record_claimed_by_another_file_is_refused(kb: KnowledgeBase,
                                                         tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a" / "x.jsonl", [{"doc_id": "faq", "text": "first ocelot"}])
    write_jsonl(tmp_path / "b" / "x.jsonl", [{"doc_id": "faq", "text": "second ocelot"},
                                             {"doc_id": "other", "text": "fine ocelot"}])
    kb.ingest([tmp_path / "a"])
    report = kb.ingest([tmp_path / "b"])
    assert report.added == 1 and len(report.failed) == 1
    assert kb.document_text(kb.document("faq").content_hash) == "first ocelot"


def test_prune_keeps_a_document_whose_id_another_file_claimed(kb: KnowledgeBase,
                                                             tmp_path: Path) -> None:
    put(tmp_path / "d" / "a.md", "---\ndoc_id: shared\n---\nocelot one\n")
    kb.ingest([tmp_path / "d"])
    (tmp_path / "d" / "a.md").rename(tmp_path / "d" / "b.md")
    report = kb.ingest([tmp_path / "d"], prune=True)
    assert report.deleted == 0 and len(report.failed) == 1  # a moved file needs --replace
    assert kb.document("shared").path.endswith("a.md")
    moved = kb.ingest([tmp_path / "d"], prune=True, replace=True)
    assert (moved.updated, moved.deleted, moved.failed) == (1, 0, [])
    assert kb.document("shared").path.endswith("b.md")


def test_cli_conflict_exits_1_and_options_work(tmp_path: Path) -> None:
    hr, public = _folders(tmp_path)
    runner = CliRunner()
    kb = str(tmp_path / "kb")
    assert runner.invoke(app, ["--kb", kb, "ingest", str(hr), "--roles", "hr"]).exit_code == 0
    clash = runner.invoke(app, ["--kb", kb, "ingest", str(public), "--json"])
    assert clash.exit_code == 1
    assert "already belongs to" in json.loads(clash.stdout)["failed"][0]["error"]
    prefixed = runner.invoke(app, ["--kb", kb, "ingest", str(public), "--id-prefix", "public/"])
    assert prefixed.exit_code == 0, prefixed.output
    replaced = runner.invoke(app, ["--kb", kb, "ingest", str(public), "--replace"])
    assert replaced.exit_code == 0, replaced.output
