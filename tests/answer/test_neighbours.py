"""The sentence after the first quote, quoted for context while the answer stays within
``[answer] context_chars`` (``glassrag.answer.neighbours``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tests.answer.test_answer_choice import make_hit, quotes

from glassrag import KnowledgeBase
from glassrag.answer.dense_gate import quote_cosine
from glassrag.answer.extractive import ASIDES, extractive_answer
from glassrag.records import Hit
from glassrag.settings import AnswerSettings

CAUSE = ("Cause: two brewer instances started with the same group name in one process block "
         "each other at start-up.")
SOLUTION = "Solution: run a single brewer per group and process."
TROUBLE = f"{CAUSE}\n{SOLUTION}\n\nOther start-up problems are listed in the FAQ.\n"
QUESTION = "Two brewer instances with the same group name in one process block at start-up?"


# The default settings: the sentence after the first quote is on (test_answer_choice's
# quotes() turns it off by default, for the tests of which quotes are chosen).
ON = AnswerSettings()


def trouble(heading: str | None = "Troubleshooting \u203a Start-up") -> Hit:
    return make_hit("trouble#2", TROUBLE, heading=heading, source="trouble.md")


def test_the_sentence_after_the_first_quote_is_quoted_for_context() -> None:
    assert quotes(QUESTION, [trouble()], ON) == [CAUSE, SOLUTION]
    assert quotes(QUESTION, [trouble()], AnswerSettings(context_chars=0)) == [CAUSE]


def test_not_when_the_answer_would_grow_past_the_budget() -> None:
    fits = len(CAUSE) + 1 + len(SOLUTION)
    assert quotes(QUESTION, [trouble()], AnswerSettings(context_chars=fits)) == [CAUSE, SOLUTION]
    assert quotes(QUESTION, [trouble()], AnswerSettings(context_chars=fits - 1)) == [CAUSE]


def test_a_record_without_sections_gets_no_context() -> None:
    # A chunk with no heading path (a JSONL record, seed 000's sentence chunks) is a list of
    # statements: the next one is another fact, not the rest of the answer.
    assert quotes(QUESTION, [trouble(heading=None)], ON) == [CAUSE]


def test_the_sentence_after_the_block_a_quote_introduces() -> None:
    text = ("To clear a stuck brewer queue, run:\n\n```sh\nbrewer queue --purge\n```\n\n"
            "The purge drops unsent brews.\n")
    hit = make_hit("queue#1", text, heading="Queues")
    got = quotes("How do I clear a stuck brewer queue?", [hit], ON)
    assert got == ["To clear a stuck brewer queue, run:\n\n```sh\nbrewer queue --purge\n```",
                   "The purge drops unsent brews."]


def test_the_next_row_of_a_table_is_another_entry() -> None:
    text = ("| Option | Meaning |\n| --- | --- |\n| `steamLimit` | caps the steam level of a "
            "brew |\n| `brewTimeout` | seconds before a brew is abandoned |\n")
    hit = make_hit("opts#1", text, heading="Options")
    got = quotes("Which option caps the steam level of a brew?", [hit], ON)
    assert got == ["| `steamLimit` | caps the steam level of a brew |"]


def test_it_goes_right_after_the_first_quote_and_the_dense_gate_skips_it() -> None:
    other = make_hit("groups#1", "Group names are case-sensitive and shared by every brewer "
                     "instance of the process.", heading="Groups", source="groups.md")
    question = ("Two brewer instances with the same group name in one process block at "
                "start-up; are group names case-sensitive?")
    draft = extractive_answer(question, [trouble(), other])
    got = [c.quote for c in draft.citations]
    assert got[:2] == [CAUSE, SOLUTION] and len(got) == 3
    assert draft.notes[ASIDES] == [1]

    class OnlySolutionIsClose:
        def embed_queries(self, texts: list[str]) -> np.ndarray:
            return np.array([[1.0, 0.0] for _ in texts])

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.array([[1.0, 0.0] if t == SOLUTION else [0.0, 1.0] for t in texts])

    # Its cosine is no sign of what the answer is about: the gate measures the others.
    assert quote_cosine(question, draft, OnlySolutionIsClose()) == 0.0


def test_a_knowledge_base_cites_the_context_sentence_by_its_own_line(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "trouble.md").write_text(f"# Troubleshooting\n\n## Start-up\n\n{TROUBLE}",
                                     encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.ingest([docs]).failed == []
        answer = kb.ask(QUESTION)
        assert answer.status == "answered"
        cause, solution = answer.citations
        assert (cause.quote, cause.line_start, cause.line_end) == (CAUSE, 5, 5)
        assert (solution.quote, solution.line_start, solution.line_end) == (SOLUTION, 6, 6)
        assert kb.trace(answer.trace_id)["settings"]["context_chars"] == 300
        kb.settings.answer = kb.settings.answer.model_copy(update={"context_chars": 0})
        assert [c.quote for c in kb.ask(QUESTION).citations] == [CAUSE]
