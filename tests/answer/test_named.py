"""The named-thing check: when only a few readable chunks name what the question names, a
quote from any other chunk is no answer (``no_evidence``, with the reason in the trace),
and the count is taken over the chunks the asker may read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from glassrag import KnowledgeBase, Principal
from glassrag.answer.named import unquoted_name
from glassrag.records import Chunk, Draft, DraftCitation, Hit
from glassrag.retrieval.search import RARE_NAME_CHUNKS, retrieve

PUBLIC = Principal("p")
OPS = Principal("o", roles=["ops"])
QUESTION = "Which exporter writes Quasar files?"

EXPORTERS = ("# Exporters\n\nThe CSV exporter writes report files to the output folder, one "
             "file per run.\n\nThe PDF exporter writes a single file with every chart.\n")
CHANGES = "# Changes in 2.1\n\nVersion 2.1 reads archives made by Quasar as well.\n"
# More chunks naming Quasar than RARE_NAME_CHUNKS, all of them hidden from the public.
SECRET = "---\nroles: [ops]\n---\n# Internal exporters\n\n" + "\n\n".join(
    f"## Build {n}\n\nQuasar builds run nightly on host {n}." for n in range(4))


def _kb(tmp_path: Path, *pages: tuple[str, str]) -> KnowledgeBase:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages:
        (docs / name).write_text(text, encoding="utf-8")
    base = KnowledgeBase.open(tmp_path / "kb")
    assert base.ingest([docs], embedder="hash:256").failed == []
    return base


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    base = _kb(tmp_path, ("exporters.md", EXPORTERS), ("changes.md", CHANGES))
    yield base
    base.close()


@pytest.fixture
def kb_hidden(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """The same pages, and a page for ops only that names Quasar four more times."""
    base = _kb(tmp_path, ("exporters.md", EXPORTERS), ("changes.md", CHANGES),
               ("internal.md", SECRET))
    yield base
    base.close()


def test_rare_names_are_counted_among_readable_chunks(kb_hidden: KnowledgeBase) -> None:
    kb = kb_hidden
    assert RARE_NAME_CHUNKS < 4  # the hidden page's chunks alone would make it common
    assert retrieve(kb.store, kb.lexical, QUESTION, PUBLIC, 5).rare_names == (("quasar",),)
    assert retrieve(kb.store, kb.lexical, QUESTION, OPS, 5).rare_names == ()
    # Ops may read five chunks naming Quasar: to them it is a common word, which a quote
    # need not repeat, so the exporters line is shown.
    ops = kb.ask(QUESTION, principal=OPS)
    assert ops.status == "answered" and "CSV exporter" in ops.answer


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_a_quote_from_no_chunk_naming_the_rare_thing_is_no_evidence(kb: KnowledgeBase,
                                                                     mode: str) -> None:
    # The exporters page covers every other word of the question; only the change note
    # names Quasar, and it says nothing about exporters (quoted after the exporters line,
    # it does not make that line an answer).
    answer = kb.ask(QUESTION, mode=mode, principal=PUBLIC)
    assert answer.status == "no_evidence", answer.answer
    assert "Quasar" not in answer.answer
    assert answer.trace_id is not None
    notes = kb.trace(answer.trace_id)["attempts"][0]["draft"]["notes"]
    if mode == "bm25":  # the other modes may refuse on the dense gate first
        assert notes["rare_name"] == "quasar" and "none of them" in notes["reason"]


def test_the_chunk_naming_it_still_answers(kb: KnowledgeBase) -> None:
    answer = kb.ask("Which archives does version 2.1 read as well?", principal=PUBLIC)
    assert answer.status == "answered" and "Quasar" in answer.answer


def _hit(chunk_id: str, text: str, heading: str = "", doc_id: str = "d") -> Hit:
    chunk = Chunk(chunk_id=chunk_id, doc_id=doc_id, ordinal=0, text=text, line_start=1,
                  line_end=1, char_start=0, char_end=len(text), heading=heading,
                  roles=("public",), doc_version=1, content_hash="h", title="Guide")
    return Hit(chunk=chunk, score=1.0)


def test_unquoted_name_reads_the_cited_chunks_text_heading_and_title() -> None:
    hits = [_hit("a", "It writes files."), _hit("b", "Nothing here.", heading="Quasar"),
            _hit("c", "Quasar 2 is out.", doc_id="news")]
    quoting = lambda *ids: Draft(status="answered", text="", citations=tuple(  # noqa: E731
        DraftCitation(i, "x") for i in ids))
    assert unquoted_name(quoting("a"), hits, [("quasar",)]) == "quasar"
    # A quote from another document only adds to the answer; one from the same page (its
    # title line quoted first, the section after it) is part of it.
    assert unquoted_name(quoting("a", "c"), hits, [("quasar",)]) == "quasar"
    assert unquoted_name(quoting("a", "b"), hits, [("quasar",)]) is None
    assert unquoted_name(quoting("b"), hits, [("quasar",)]) is None  # named by its heading
    assert unquoted_name(quoting("c", "a"), hits, [("quasar",)]) is None
    assert unquoted_name(quoting("a"), hits, [("guid",)]) is None  # by the page's title
    assert unquoted_name(quoting("a"), hits, [("fs.readfile", "readfil"), ("nowher",)]) \
        == "fs.readfile"
    # One of two rare names is enough (a question may misspell the other).
    assert unquoted_name(quoting("a"), hits, [("fs.readfile",), ("file",)]) is None
    # A Latin name of five letters or more is held by a word it begins, not a shorter one.
    derived = [_hit("d", "The Brazilian forest shrank. It has gone.")]
    assert unquoted_name(quoting("d"), derived, [("brazil",)]) is None
    assert unquoted_name(quoting("d"), derived, [("go",)]) == "go"
    assert unquoted_name(quoting("a"), hits, []) is None


def test_the_calibration_sweep_refuses_it_at_every_threshold(kb: KnowledgeBase) -> None:
    from glassrag.eval.docs_questions import DocsQuestion
    from glassrag.eval.refusal_calibration import calibrate

    report = calibrate([DocsQuestion("u1", QUESTION, answerable=False)], kb=kb,
                       principal=PUBLIC)
    assert report.current["no_evidence"] == 1.0
    assert all(point["no_evidence"] == 1.0 for point in report.coverage_curve)
    assert report.signals[0]["coverage"] is None  # no threshold lets a quote through
