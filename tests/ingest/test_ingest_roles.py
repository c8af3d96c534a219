"""Where a document's roles come from: explicit empty roles, the default role, roles rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.errors import InvalidInput
from glassrag.interfaces.cli.main import app
from glassrag.parsers.readers import read_file

PUBLIC = Principal("p")
HR = Principal("h", roles=["hr"])


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- an explicit empty role list is an error, never the default role --------------------

@pytest.mark.parametrize("roles_yaml", ["roles: []", 'roles: ""', "roles:", "roles: null",
                                        "roles: ~", 'roles: [" "]', 'roles: [hr, ""]',
                                        'roles: " , "'])
def test_empty_front_matter_roles_fail_the_file(tmp_path: Path, roles_yaml: str) -> None:
    path = put(tmp_path / "secret.md", f"---\n{roles_yaml}\n---\nsalary of the ocelot keeper\n")
    result = read_file(path)
    assert result.documents == []
    [error] = result.errors
    assert error.path == str(path)
    assert "front matter: 'roles'" in error.error
    assert "empty" in error.error or "blank" in error.error


@pytest.mark.parametrize("roles_json", ["[]", '[""]', "null", '["hr", "  "]'])
def test_empty_jsonl_roles_fail_that_record_naming_its_line(tmp_path: Path,
                                                            roles_json: str) -> None:
    good = json.dumps({"doc_id": "ok", "text": "fine", "roles": ["hr"]})
    bad = f'{{"doc_id": "secret", "text": "ocelot salaries", "roles": {roles_json}}}'
    path = put(tmp_path / "r.jsonl", f"{good}\n{bad}\n")
    result = read_file(path)
    assert [d.doc_id for d in result.documents] == ["ok"]
    [error] = result.errors
    assert error.path == f"{path}:2" and error.error.startswith("line 2: 'roles'")


def test_empty_roles_are_not_ingested_as_public(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    put(docs / "secret.md", "---\nroles: []\n---\nocelot keeper salary bands\n")
    write_jsonl(docs / "more.jsonl", [{"doc_id": "s2", "text": "ocelot bonus", "roles": [""]}])
    put(docs / "open.md", "ocelot feeding times\n")
    report = kb.ingest([docs])
    assert sorted(f.path for f in report.failed) == [f"{docs / 'more.jsonl'}:1",
                                                     str(docs / "secret.md")]
    assert [d.doc_id for d in kb.documents()] == ["open.md"]
    assert {h.chunk.doc_id for h in kb.search("ocelot", principal=PUBLIC).hits} == {"open.md"}


def test_blank_roles_option_is_refused(kb: KnowledgeBase, tmp_path: Path) -> None:
    put(tmp_path / "n.md", "ocelot\n")
    with pytest.raises(InvalidInput, match="roles"):
        kb.ingest([tmp_path / "n.md"], roles=[" "])
    assert kb.documents() == []


# --- the report counts documents that got the default role --------------------------------

def test_report_counts_defaulted_documents_even_when_unchanged(kb: KnowledgeBase,
                                                              tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    put(docs / "a.md", "alpha ocelot\n")
    put(docs / "b.md", "beta ocelot\n")
    put(docs / "c.md", "---\nroles: [hr]\n---\ngamma ocelot\n")
    first = kb.ingest([docs])
    assert (first.defaulted_roles, first.default_roles) == (2, ["public"])
    again = kb.ingest([docs])  # every file skipped unparsed
    assert again.unchanged == 3 and again.defaulted_roles == 2
    assert kb.ingest([docs], roles=["staff"]).defaulted_roles == 0  # --roles applied


def test_cli_summary_and_json_report_show_defaulted_roles(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    put(docs / "a.md", "alpha ocelot\n")
    put(docs / "c.md", "---\nroles: [hr]\n---\ngamma ocelot\n")
    runner = CliRunner()
    kb = str(tmp_path / "kb")
    text = runner.invoke(app, ["--kb", kb, "ingest", str(docs)])
    assert text.exit_code == 0, text.output
    assert "default roles (public) given to 1 documents that name none" in text.stdout
    as_json = runner.invoke(app, ["--kb", kb, "ingest", str(docs), "--json"])
    report = json.loads(as_json.stdout)
    assert report["defaulted_roles"] == 1 and report["default_roles"] == ["public"]


# --- roles rules are anchored to one base, whichever folder is ingested --------------------

def _project(tmp_path: Path, rules: str) -> tuple[Path, Path]:
    """A project directory holding the knowledge base (.glassrag) and its documents."""
    project = tmp_path / "project"
    kb_dir = project / ".glassrag"
    KnowledgeBase.init(kb_dir).close()
    (kb_dir / "roles.toml").write_text(rules, encoding="utf-8")
    put(project / "docs" / "internal" / "salaries.md", "ocelot keeper salaries\n")
    put(project / "docs" / "faq.md", "ocelot visiting hours\n")
    return project, kb_dir


RULE = '[[rule]]\nglob = "docs/internal/**"\nroles = ["hr"]\n'


@pytest.mark.parametrize("folder", ["docs", "docs/internal", "docs/internal/salaries.md", "."])
def test_a_rule_means_the_same_whichever_folder_is_ingested(tmp_path: Path,
                                                            folder: str) -> None:
    project, kb_dir = _project(tmp_path, RULE)
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([project / folder])
        assert report.failed == []
        [salaries] = [d for d in kb.documents() if d.path.endswith("salaries.md")]
        assert salaries.roles == ("hr",)
        assert not any("salar" in h.chunk.text for h in kb.search("ocelot", principal=PUBLIC).hits)


def test_base_can_be_set_in_the_rules_file(tmp_path: Path) -> None:
    project, kb_dir = _project(tmp_path, 'base = "../docs"\n[[rule]]\nglob = "internal/**"\n'
                                         'roles = ["hr"]\n')
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([project / "docs" / "internal"])
        assert kb.document("salaries.md").roles == ("hr",)


def test_a_rule_written_for_the_ingested_folder_fails_the_file(tmp_path: Path) -> None:
    # "internal/**" matched docs/internal/... only relative to the folder named on the
    # command line; under the anchored rules it matches nothing there. The file is an error
    # (not the default role), and the message says how to write the rule.
    project, kb_dir = _project(tmp_path, '[[rule]]\nglob = "internal/**"\nroles = ["hr"]\n')
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([project / "docs"])
        [failure] = report.failed
        assert failure.path == str(project / "docs" / "internal" / "salaries.md")
        assert "'internal/**'" in failure.error and "docs/internal/**" in failure.error
        assert [d.doc_id for d in kb.documents()] == ["faq.md"]


def test_report_lists_files_no_rule_matched(tmp_path: Path) -> None:
    project, kb_dir = _project(tmp_path, RULE)
    put(project / "docs" / "own.md", "---\nroles: [ops]\n---\nocelot rota\n")
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([project / "docs"])
        assert report.no_rule_matched == [str(project / "docs" / "faq.md")]
        assert kb.ingest([project / "docs"]).no_rule_matched == [str(project / "docs" / "faq.md")]
    result = CliRunner().invoke(app, ["--kb", str(kb_dir), "ingest", str(project / "docs")])
    assert f"no rule in roles.toml matched 1 files: {project / 'docs' / 'faq.md'}" in result.stdout


def test_no_rules_file_means_no_unmatched_list(kb: KnowledgeBase, tmp_path: Path) -> None:
    put(tmp_path / "d" / "a.md", "ocelot\n")
    assert kb.ingest([tmp_path / "d"]).no_rule_matched == []
