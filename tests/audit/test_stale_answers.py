"""Stale answers and recheck: past answers whose citations no longer hold after an edit of
the cited lines, a deleted document or a roles change, and the same question asked again.

Real knowledge bases on disk: each change is a re-ingest of an edited file, as a team would
make it; an edit elsewhere in the document must not make an answer stale.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glassrag import KnowledgeBase, Principal
from glassrag.audit.recheck import recheck
from glassrag.audit.stale import (
    DOCUMENT_DELETED,
    LINES_CHANGED,
    NO_LONGER_READABLE,
    stale_answers,
)
from glassrag.errors import InvalidInput, NotFound
from glassrag.interfaces.cli.main import app

REFUND = """---
title: Refund policy
roles: [employee]
---
# Refunds

Refunds are handled by the support team.

Learners can ask for a refund within 14 days of enrolling.

Approved refunds go back to the card that paid.
"""
HOURS = """# Office hours

Instructors hold office hours every Wednesday at 19:00.
"""
QUESTION = "How many days do learners have to ask for a refund?"
ALICE = Principal("alice", roles=["employee"])


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "refund.md").write_text(REFUND, encoding="utf-8")
    (folder / "hours.md").write_text(HOURS, encoding="utf-8")
    return folder


@pytest.fixture
def kb(tmp_path: Path, docs: Path):  # type: ignore[no-untyped-def]
    base = KnowledgeBase.open(tmp_path / "kb")
    assert base.ingest([docs]).failed == []
    yield base
    base.close()


def _asked(kb: KnowledgeBase) -> str:
    answer = kb.ask(QUESTION, principal=ALICE)
    assert answer.status == "answered", answer
    assert answer.citations[0].doc_id == "refund.md"
    assert "14 days" in answer.citations[0].quote
    assert answer.trace_id is not None
    return answer.trace_id


def _edit(docs: Path, old: str, new: str, name: str = "refund.md") -> None:
    path = docs / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_an_edited_cited_line_makes_the_answer_stale_with_a_diff(kb: KnowledgeBase,
                                                                 docs: Path) -> None:
    trace_id = _asked(kb)
    hours = kb.ask("When are office hours?", principal=ALICE)
    _edit(docs, "within 14 days", "within 30 days")
    report = kb.ingest([docs])
    assert report.updated == 1 and report.stale_answers == 1
    assert report.to_dict()["stale_answers"] == 1
    [stale] = stale_answers(kb)
    assert stale.trace_id == trace_id and stale.trace_id != hours.trace_id
    assert stale.principal["principal_id"] == "alice" and stale.question == QUESTION
    [citation] = stale.citations
    assert citation.reasons == (LINES_CHANGED,)
    assert citation.cited_version == 1 and citation.current_version == 2
    assert citation.old_lines == ("Learners can ask for a refund within 14 days of enrolling.",)
    assert citation.new_lines == ("Learners can ask for a refund within 30 days of enrolling.",)
    # Lines of the file, front matter included, on both sides.
    assert citation.cited_lines == (9, 9) and citation.current_lines == (9, 9)
    assert "-Learners can ask for a refund within 14 days" in citation.diff
    assert "+Learners can ask for a refund within 30 days" in citation.diff
    assert not citation.quote_still_present


def test_an_edit_elsewhere_in_the_document_does_not(kb: KnowledgeBase, docs: Path) -> None:
    _asked(kb)
    _edit(docs, "Refunds are handled by the support team.",
          "Refunds are handled by the billing team.\n\nA new paragraph, above the cited one.")
    # The answer quotes the sentence after the cited one as well (its last line): a line
    # added after it is elsewhere too.
    _edit(docs, "card that paid.\n", "card that paid.\n\nA closing note below it.\n")
    report = kb.ingest([docs])
    assert report.updated == 1 and report.stale_answers == 0
    assert stale_answers(kb) == []


def test_a_moved_and_edited_line_is_followed_to_where_it_went(kb: KnowledgeBase,
                                                             docs: Path) -> None:
    _asked(kb)
    _edit(docs, "Refunds are handled by the support team.",
          "Refunds are handled by the support team.\n\nInserted.\n\nInserted too.")
    _edit(docs, "within 14 days", "within 10 days")
    kb.ingest([docs])
    [citation] = stale_answers(kb)[0].citations
    assert citation.cited_lines == (9, 9) and citation.current_lines == (13, 13)
    assert citation.new_lines == ("Learners can ask for a refund within 10 days of enrolling.",)


def test_a_deleted_document_makes_the_answer_stale(kb: KnowledgeBase, docs: Path) -> None:
    _asked(kb)
    (docs / "refund.md").unlink()
    report = kb.ingest([docs], prune=True)
    assert report.deleted == 1 and report.stale_answers == 1
    citations = stale_answers(kb)[0].citations
    for citation in citations:
        assert citation.reasons == (DOCUMENT_DELETED,)
        assert citation.current_version is None and citation.current_lines is None
        assert citation.new_lines == ()
    assert "-Learners can ask for a refund within 14 days" in citations[0].diff


def test_a_roles_change_the_asker_may_not_read_makes_it_stale(kb: KnowledgeBase,
                                                             docs: Path) -> None:
    _asked(kb)
    _edit(docs, "roles: [employee]", "roles: [employee, contractor]")
    assert kb.ingest([docs]).stale_answers == 0  # alice still reads it
    assert stale_answers(kb) == []
    _edit(docs, "roles: [employee, contractor]", "roles: [finance]")
    assert kb.ingest([docs]).stale_answers == 1
    citations = stale_answers(kb)[0].citations
    assert citations  # each one is checked below: none would pass as well
    for citation in citations:
        assert citation.reasons == (NO_LONGER_READABLE,)
        assert citation.current_roles == ("finance",)
        assert citation.old_lines == citation.new_lines and citation.diff == ""
        assert citation.quote_still_present


def test_the_ingest_count_is_only_of_the_documents_it_changed(kb: KnowledgeBase,
                                                             docs: Path) -> None:
    _asked(kb)
    _edit(docs, "within 14 days", "within 30 days")
    assert kb.ingest([docs]).stale_answers == 1
    _edit(docs, "19:00", "18:00", name="hours.md")
    # The refund answer is still stale, but this ingest did not change its document.
    assert kb.ingest([docs]).stale_answers == 0
    assert len(stale_answers(kb)) == 1


def test_since_keeps_later_answers_and_rejects_a_non_date(kb: KnowledgeBase,
                                                         docs: Path) -> None:
    _asked(kb)
    _edit(docs, "within 14 days", "within 30 days")
    kb.ingest([docs])
    assert len(stale_answers(kb, since="2000-01-01")) == 1
    assert stale_answers(kb, since="2999-01-01T00:00:00Z") == []
    with pytest.raises(InvalidInput) as caught:
        stale_answers(kb, since="last tuesday")
    assert caught.value.details["field"] == "since"


def test_recheck_after_an_edit_returns_the_new_answer(kb: KnowledgeBase, docs: Path) -> None:
    trace_id = _asked(kb)
    _edit(docs, "within 14 days", "within 30 days")
    kb.ingest([docs])
    result = recheck(kb, trace_id)
    assert result.changed
    assert "14 days" in result.old.answer and "30 days" in result.new.answer
    assert result.old.status == result.new.status == "answered"
    assert result.new.citations[0]["doc_version"] == 2
    new_trace = kb.trace(result.new.trace_id)
    # Asked as the same principal, with the same settings.
    assert new_trace["principal"] == kb.trace(trace_id)["principal"]
    assert new_trace["settings"]["mode"] == "bm25" and new_trace["settings"]["top_k"] == 5
    # Rechecking the new trace changes nothing.
    assert not recheck(kb, result.new.trace_id).changed


def test_recheck_keeps_the_askers_roles(kb: KnowledgeBase, docs: Path) -> None:
    trace_id = _asked(kb)
    _edit(docs, "roles: [employee]", "roles: [finance]")
    kb.ingest([docs])
    result = recheck(kb, trace_id)
    assert result.changed and result.new.status == "blocked_by_permission"
    assert "14 days" not in result.new.answer
    with pytest.raises(NotFound):
        recheck(kb, "tr_nosuchtrace")


def test_cli_traces_stale_and_recheck(tmp_path: Path, kb: KnowledgeBase, docs: Path) -> None:
    trace_id = _asked(kb)
    _edit(docs, "within 14 days", "within 30 days")
    kb.close()
    runner = CliRunner()
    base = ["--kb", str(tmp_path / "kb")]
    ingest = runner.invoke(app, [*base, "ingest", str(docs)])
    assert ingest.exit_code == 0, ingest.output
    assert "past answers whose citations changed: 1" in ingest.stdout
    listed = runner.invoke(app, [*base, "traces", "stale", "--json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.stdout)
    assert row["trace_id"] == trace_id
    assert row["stale_citations"][0]["reasons"] == ["lines_changed"]
    text = runner.invoke(app, [*base, "traces", "stale"])
    assert text.exit_code == 0
    assert f"{trace_id}" in text.stdout and "[1] refund.md lines 9-9" in text.stdout
    assert "+Learners can ask for a refund within 30 days" in text.stdout
    assert text.stdout.rstrip().endswith("1 stale answers")
    bad = runner.invoke(app, [*base, "traces", "stale", "--since", "soon", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["details"]["field"] == "since"
    again = runner.invoke(app, [*base, "recheck", trace_id, "--json"])
    assert again.exit_code == 0, again.output
    body = json.loads(again.stdout)
    assert body["changed"] and "30 days" in body["new"]["answer"]
    table = runner.invoke(app, [*base, "recheck", trace_id])
    assert table.exit_code == 0 and "changed: yes" in table.stdout
    missing = runner.invoke(app, [*base, "recheck", "tr_missing"])
    assert missing.exit_code == 3


def test_answers_recorded_before_the_citation_index_still_count(kb: KnowledgeBase,
                                                                 docs: Path) -> None:
    _asked(kb)
    path = kb.path
    kb.store.db.begin()
    kb.store.db.execute("DELETE FROM trace_citations")
    kb.store.db.execute("DELETE FROM glassrag_migrations WHERE name = 'm002_trace_citations'")
    kb.store.db.execute("DROP TABLE trace_citations")
    kb.store.db.commit()
    kb.close()
    _edit(docs, "within 14 days", "within 30 days")
    with KnowledgeBase.open(path) as reopened:
        assert reopened.ingest([docs]).stale_answers == 1


@pytest.mark.parametrize(("key", "then", "now"), [("max_short_quotes", 1, 0),
                                                  ("context_chars", 300, 0)])
def test_recheck_notes_a_changed_quote_setting(kb: KnowledgeBase, key: str, then: int,
                                               now: int) -> None:
    trace_id = _asked(kb)
    assert kb.trace(trace_id)["settings"][key] == then
    kb.settings.answer = kb.settings.answer.model_copy(update={key: now})
    result = recheck(kb, trace_id)
    assert f"[answer] {key} was {then} and is now {now}" in result.notes
    # Rechecking the new trace, asked with today's settings, notes nothing.
    assert not any(key in note for note in recheck(kb, result.new.trace_id).notes)


def test_a_trace_written_before_an_answer_setting_existed_reads_it_as_none(
        kb: KnowledgeBase) -> None:
    from glassrag.trace import Trace

    data = kb.trace(_asked(kb))
    for key in ("min_coverage", "max_sentences", "max_short_quotes", "context_chars"):
        del data["settings"][key]
    settings = Trace.from_dict(data).settings
    # None, not 0: max_short_quotes = 0 is a setting recheck must compare.
    assert (settings.min_coverage, settings.max_sentences, settings.max_short_quotes,
            settings.context_chars) == (None, None, None, None)
