"""Symlinks never carry a document across a permission boundary."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from conftest import init_kb_with
from glassrag import KnowledgeBase, Principal
from glassrag.interfaces.cli.main import app

PUBLIC = Principal("p")
HR = Principal("h", roles=["hr"])


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """project/.glassrag with a rule for docs/hr, and docs/a-public/notes.md -> ../hr/secret.md."""
    project = tmp_path / "project"
    kb_dir = project / ".glassrag"
    KnowledgeBase.init(kb_dir).close()
    (kb_dir / "roles.toml").write_text('[[rule]]\nglob = "docs/hr/**"\nroles = ["hr"]\n')
    docs = project / "docs"
    put(docs / "hr" / "secret.md", "the ocelot canary salary is 91000\n")
    put(docs / "a-public" / "open.md", "ocelot visiting hours\n")
    (docs / "a-public" / "notes.md").symlink_to(Path("..") / "hr" / "secret.md")
    return docs, kb_dir


def _texts(kb: KnowledgeBase, who: Principal) -> set[str]:
    return {h.chunk.text for h in kb.search("ocelot", principal=who).hits}


def test_link_into_a_restricted_folder_keeps_the_targets_roles(tmp_path: Path) -> None:
    docs, kb_dir = _tree(tmp_path)
    with KnowledgeBase.open(kb_dir) as kb:
        assert kb.ingest([docs]).failed == []
        assert kb.document("hr/secret.md").roles == ("hr",)
        assert not any("canary" in t for t in _texts(kb, PUBLIC))
        assert any("canary" in t for t in _texts(kb, HR))


def test_public_folder_alone_cannot_reach_a_restricted_target(tmp_path: Path) -> None:
    docs, kb_dir = _tree(tmp_path)
    with KnowledgeBase.open(kb_dir) as kb:
        # Ingested alone, the public folder's link points outside it: refused.
        [failure] = kb.ingest([docs / "a-public"]).failed
        assert failure.path == str(docs / "a-public" / "notes.md")
        assert not any("canary" in t for t in _texts(kb, PUBLIC))
        # Allowed, it is stored under the link's path but with its target's roles.
        assert kb.ingest([docs / "a-public"], follow_external_links=True).failed == []
        assert kb.document("notes.md").roles == ("hr",)
        assert not any("canary" in t for t in _texts(kb, PUBLIC))


def test_link_and_its_target_are_one_document(tmp_path: Path) -> None:
    docs, kb_dir = _tree(tmp_path)
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([docs])
        ids = sorted(d.doc_id for d in kb.documents())
        assert ids == ["a-public/open.md", "hr/secret.md"]  # no a-public/notes.md copy


def test_link_outside_the_root_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    outside = put(tmp_path / "etc" / "passwd.txt", "root:x:0:0 ocelot canary\n")
    docs = tmp_path / "docs"
    put(docs / "ok.md", "ocelot visiting hours\n")
    (docs / "passwd.txt").symlink_to(outside)
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        report = kb.ingest([docs])
        [failure] = report.failed
        assert failure.path == str(docs / "passwd.txt") and str(outside) in failure.error
        assert [d.doc_id for d in kb.documents()] == ["ok.md"]
        assert not any("canary" in t for t in _texts(kb, PUBLIC))


def test_external_links_are_followed_when_asked(tmp_path: Path) -> None:
    outside = put(tmp_path / "shared" / "glossary.md", "ocelot: a wild cat\n")
    docs = tmp_path / "docs"
    put(docs / "ok.md", "ocelot visiting hours\n")
    (docs / "glossary.md").symlink_to(outside)
    runner = CliRunner()
    refused = runner.invoke(app, ["--kb", str(tmp_path / "kb"), "ingest", str(docs)])
    assert refused.exit_code == 1 and "--follow-external-links" in refused.output
    allowed = runner.invoke(app, ["--kb", str(tmp_path / "kb"), "ingest", str(docs),
                                  "--follow-external-links"])
    assert allowed.exit_code == 0, allowed.output
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.document("glossary.md").path == str(outside.resolve())


def test_external_links_setting(tmp_path: Path) -> None:
    kb_dir = init_kb_with(tmp_path / "kb", "follow_external_links = false",
                          "follow_external_links = true")
    outside = put(tmp_path / "shared" / "glossary.md", "ocelot: a wild cat\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "glossary.md").symlink_to(outside)
    with KnowledgeBase.open(kb_dir) as kb:
        assert kb.ingest([tmp_path / "docs"]).failed == []
        # The call's own option wins over the setting.
        assert kb.ingest([tmp_path / "docs"], follow_external_links=False).failed


def test_an_allowed_external_link_takes_the_rule_of_its_own_path(tmp_path: Path) -> None:
    project = tmp_path / "project"
    kb_dir = project / ".glassrag"
    KnowledgeBase.init(kb_dir).close()
    (kb_dir / "roles.toml").write_text('[[rule]]\nglob = "docs/hr/**"\nroles = ["hr"]\n')
    outside = put(tmp_path / "elsewhere" / "pay.md", "ocelot canary pay\n")
    (project / "docs" / "hr").mkdir(parents=True)
    (project / "docs" / "hr" / "pay.md").symlink_to(outside)
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([project / "docs"], follow_external_links=True)
        assert kb.document("hr/pay.md").roles == ("hr",)
