"""why-not: each stage that can drop a document, on a small knowledge base of real files.

The documents are written so that each stage has one document it drops: a file that failed
to ingest, a type no reader takes, a document only finance may read, one that shares no
term with the question, one ranked below the hits the answer reads, one read but below the
evidence threshold, and one that passed every check while the answer quoted another.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import init_kb_with
from glassrag import KnowledgeBase, Principal
from glassrag.audit import why_not as stages
from glassrag.audit.why_not import why_not
from glassrag.errors import InvalidInput
from glassrag.interfaces.cli.main import app
from glassrag.settings import AnswerSettings

QUESTION = "zebra migration patterns in kenya"
ADMIN = Principal("root", admin=True)
FILES = {
    "zebra.md": "# Zebras\n\nZebra migration patterns in Kenya follow the long rains.\n",
    "twin.md": "# Herds\n\nZebra migration patterns in Kenya follow the short rains too.\n",
    "kenya.md": "# Travel\n\nKenya welcomes many visitors every year.\n",
    "hours.md": "# Office hours\n\nInstructors hold office hours every Wednesday.\n",
    "guide.md": ("---\ntitle: Guide\n---\n# Migration\n\n"
                 "Zebra migration patterns in Kenya are watched by rangers.\n\n"
                 "# Lunch\n\nThe canteen serves lunch at noon.\n"),
    "secret.md": ("---\nroles: [finance]\n---\n# Budget\n\nZebra migration patterns in Kenya "
                  "decide the finance team's budget.\n"),
    "picture.png": "not an image, and not a document either",
    "big.md": "# Big\n\n" + "A long line about zebra migration patterns in Kenya. " * 60,
}
# Each mentions the question's words more than far.md, so far.md ranks below the top five.
FILLERS = {f"filler{n}.md": f"# Filler {n}\n\nZebra migration in Kenya, zebra patterns, "
           f"kenya zebra migration notes number {n}.\n" for n in range(6)}
FAR = {"far.md": "# Far\n\n" + "Many words about nothing in particular here. " * 30
       + "One mention of patterns.\n"}


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in {**FILES, **FILLERS, **FAR}.items():
        (folder / name).write_text(text, encoding="utf-8")
    kb_dir = init_kb_with(tmp_path / "kb", "max_file_bytes = 20000000", "max_file_bytes = 2000")
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([folder])
    assert [Path(f.path).name for f in report.failed] == ["big.md"]
    assert report.skipped == {"unsupported type": 1}
    return kb_dir


@pytest.fixture
def kb(kb_dir: Path):  # type: ignore[no-untyped-def]
    with KnowledgeBase.open(kb_dir) as base:
        yield base


def test_a_failed_file_is_named_with_its_ingest_error(kb: KnowledgeBase) -> None:
    told = why_not(kb, QUESTION, "big.md", as_admin=True)
    assert told.stage == stages.NOT_IN_KB
    assert told.details["ingest"]["outcome"] == "failed"
    assert told.details["ingest"]["path"].endswith("/docs/big.md")
    assert "max_file_bytes" in told.details["ingest"]["error"]
    assert "max_file_bytes" in told.reason
    skipped = why_not(kb, QUESTION, "picture.png", as_admin=True)
    assert skipped.stage == stages.NOT_IN_KB and skipped.details["ingest"]["outcome"] == "skipped"
    assert "unsupported type" in skipped.reason
    never = why_not(kb, QUESTION, "nothing.md", as_admin=True)
    assert never.stage == stages.NOT_IN_KB and never.details == {}


def test_a_file_that_ingests_later_leaves_the_failure_log(kb: KnowledgeBase,
                                                         tmp_path: Path) -> None:
    big = tmp_path / "docs" / "big.md"
    big.write_text("# Big\n\nNow short: zebra migration patterns in Kenya.\n", encoding="utf-8")
    assert kb.ingest([tmp_path / "docs"]).failed == []
    assert why_not(kb, QUESTION, "big.md", as_admin=True).stage != stages.NOT_IN_KB
    big.unlink()
    kb.delete("big.md")
    assert why_not(kb, QUESTION, "big.md", as_admin=True).details == {}


def test_the_role_stage_is_told_to_an_admin_only(kb: KnowledgeBase) -> None:
    public = Principal("pat")
    told = why_not(kb, QUESTION, "secret.md", principal=public, as_admin=True)
    assert told.stage == stages.NOT_READABLE
    assert told.details == {"principal_roles": ["public"], "document_roles": ["finance"]}
    hidden = why_not(kb, QUESTION, "secret.md", principal=public)
    missing = why_not(kb, QUESTION, "nothing.md", principal=public)
    assert hidden.stage == missing.stage == stages.NOT_IN_KB
    assert json.dumps(hidden.to_dict()).replace("secret.md", "X") == \
        json.dumps(missing.to_dict()).replace("nothing.md", "X")
    # An ingest failure names a file: for a non-admin it is a missing document like any other.
    failed = why_not(kb, QUESTION, "big.md", principal=public)
    assert failed.to_dict() == {**missing.to_dict(), "doc_id": "big.md",
                                "reason": missing.reason.replace("nothing.md", "big.md")}
    # Bad lines on a hidden document are not an error either: that would tell it exists.
    assert why_not(kb, QUESTION, "secret.md", lines="900-901", principal=public).stage == \
        stages.NOT_IN_KB
    reader = Principal("fin", roles=["finance"])
    assert why_not(kb, QUESTION, "secret.md", principal=reader).stage != stages.NOT_READABLE


def test_no_query_term_shows_the_terms_of_both_sides(kb: KnowledgeBase) -> None:
    told = why_not(kb, QUESTION, "hours.md")
    assert told.stage == stages.NO_QUERY_TERM
    assert told.details["query_terms"] == ["zebra", "migrat", "pattern", "kenya"]
    assert {"offic", "hour", "wednesday"} <= set(told.details["document_terms"])
    assert told.details["document_term_count"] == len(told.details["document_terms"])


def test_below_the_cut_off_gives_its_rank_against_the_last_kept_hit(kb: KnowledgeBase) -> None:
    ranked = kb.search(QUESTION, top_k=50).hits
    rank = next(n for n, h in enumerate(ranked, start=1) if h.chunk.doc_id == "far.md")
    assert rank > 5
    told = why_not(kb, QUESTION, "far.md")
    assert told.stage == stages.BELOW_CUTOFF
    assert told.details["rank"] == rank and told.details["cut_off"] == 5
    assert told.details["score"] == round(ranked[rank - 1].score, 6)
    assert told.details["last_kept"] == {"rank": 5, "chunk_id": ranked[4].chunk.chunk_id,
                                         "score": round(ranked[4].score, 6)}
    assert f"ranked {rank}" in told.reason
    wider = why_not(kb, QUESTION, "far.md", top_k=rank)
    assert wider.stage != stages.BELOW_CUTOFF or wider.details["cut_off"] == 5


def test_below_the_evidence_threshold_gives_coverage_against_it(kb: KnowledgeBase) -> None:
    # kenya.md ranks first for this question, but covers two of its seven terms.
    question = "kenya welcomes embassy passport visa fees stamps"
    assert kb.search(question, top_k=5).hits[0].chunk.doc_id == "kenya.md"
    assert kb.ask(question).status == "no_evidence"
    told = why_not(kb, question, "kenya.md")
    assert told.stage == stages.BELOW_THRESHOLD
    assert told.details["rank"] == 1
    # Seven words: the share required is raised to min_covered_terms words' worth.
    required = AnswerSettings().min_covered_terms / 7
    assert 0 < told.details["coverage"] < told.details["min_coverage"] == pytest.approx(required)
    assert f"threshold is {required:.2f}" in told.reason


def test_not_selected_and_cited(kb: KnowledgeBase) -> None:
    answer = kb.ask(QUESTION)
    cited = {c.doc_id for c in answer.citations}
    assert len(cited) == 1
    assert why_not(kb, QUESTION, cited.pop()).stage == stages.CITED
    kept = [h.chunk.doc_id for h in kb.search(QUESTION, top_k=5).hits]
    others = [d for d in kept if d not in {c.doc_id for c in answer.citations}]
    assert len(others) == 4
    for doc in others:
        told = why_not(kb, QUESTION, doc)
        assert told.stage == stages.NOT_SELECTED, told
        assert told.details["coverage"] >= 0.3
        assert told.details["answer_cites"] == [c.chunk_id for c in answer.citations]


def test_lines_pick_a_passage(kb: KnowledgeBase) -> None:
    chunks = kb.chunks("guide.md")
    lunch = next(c for c in chunks if "canteen" in c.text)
    migration = next(c for c in chunks if "rangers" in c.text)
    assert why_not(kb, QUESTION, "guide.md", lines=f"{lunch.line_start}-{lunch.line_end}"
                   ).stage == stages.NO_QUERY_TERM
    assert why_not(kb, QUESTION, "guide.md", lines=str(migration.line_start)
                   ).stage != stages.NO_QUERY_TERM
    for bad in ("900-910", "5-2", "x"):
        with pytest.raises(InvalidInput) as caught:
            why_not(kb, QUESTION, "guide.md", lines=bad)
        assert caught.value.details["field"] == "lines"


def test_cli_why_not(kb_dir: Path) -> None:
    runner = CliRunner()
    base = ["--kb", str(kb_dir), "why-not", QUESTION]
    plain = runner.invoke(app, [*base, "--doc", "hours.md"])
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.startswith("stage: no_query_term\n")
    told = runner.invoke(app, [*base, "--doc", "secret.md", "--as-admin", "--json"])
    assert json.loads(told.stdout)["stage"] == "not_readable"
    as_finance = runner.invoke(app, [*base, "--doc", "secret.md", "--role", "finance", "--json"])
    assert json.loads(as_finance.stdout)["stage"] != "not_readable"
    bad = runner.invoke(app, [*base, "--doc", "guide.md", "--lines", "oops", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["details"]["field"] == "lines"
