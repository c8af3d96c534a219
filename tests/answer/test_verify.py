"""The citation verifier: forged citations fail, honest ones become full Citation records."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.answer.extractive import AnswerSettings, extractive_answer
from glassrag.answer.verify import normalize_for_match, quote_lines, verify
from glassrag.records import ANSWERED, BLOCKED, NO_EVIDENCE, Chunk, Draft, DraftCitation, Hit

TEXT = "Boarding closes 20 minutes before departure.\nGates open 45 minutes before.\nBring ID."


def make_hit(chunk_id: str = "gates#1", text: str = TEXT, *, line_start: int = 10,
             line_end: int | None = None, title: str = "Gate rules",
             source: str = "gates.md") -> Hit:
    chunk = Chunk(
        chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], ordinal=1, text=text,
        line_start=line_start,
        line_end=line_start + text.count("\n") if line_end is None else line_end,
        char_start=0, char_end=len(text), heading=None, roles=("public",), doc_version=3,
        content_hash="abc123", title=title, source=source, page=2,
    )
    return Hit(chunk=chunk, score=1.0)


def answered(*citations: tuple[str, str]) -> Draft:
    return Draft(status=ANSWERED, text="Based on gates.md: something",
                 citations=tuple(DraftCitation(c, q) for c, q in citations))


# -- normalisation -------------------------------------------------------------------------

def test_normalize_folds_width_and_whitespace_but_not_case() -> None:
    assert normalize_for_match("ＡＢＣ　１２３％") == "ABC 123%"
    assert normalize_for_match("  one\n two\t\tthree\r\n") == "one two three"
    assert normalize_for_match("API Key") == "API Key"  # case is evidence, kept


# -- honest drafts ---------------------------------------------------------------------------

def test_a_verbatim_quote_verifies_into_a_full_citation() -> None:
    hit = make_hit()
    result = verify(answered(("gates#1", "Gates open 45 minutes before.")), [hit])
    assert result.ok and result.problems == ()
    (citation,) = result.citations
    assert (citation.chunk_id, citation.doc_id, citation.source, citation.title) == (
        "gates#1", "gates", "gates.md", "Gate rules")
    assert (citation.doc_version, citation.content_hash, citation.page, citation.slide) == (
        3, "abc123", 2, None)
    assert citation.quote == "Gates open 45 minutes before."
    assert (citation.line_start, citation.line_end) == (11, 11)  # narrowed to its own line


def test_a_no_evidence_draft_without_citations_verifies() -> None:
    result = verify(Draft(status=NO_EVIDENCE, text=""), [make_hit()])
    assert result.ok and result.citations == ()


def test_quotes_match_across_width_and_line_breaks() -> None:
    hit = make_hit(text="Gate Ａ１２ opens at\n０９:３０ daily.")
    result = verify(answered(("gates#1", "Gate A12 opens at 09:30 daily.")), [hit])
    assert result.ok
    # Matched only after normalisation, so there is no exact position: the chunk's range.
    assert (result.citations[0].line_start, result.citations[0].line_end) == (10, 11)
    assert verify(answered(("gates#1", "Gate  Ａ１２\nopens")), [hit]).ok


# -- line narrowing ----------------------------------------------------------------------------

def test_quote_lines_narrow_to_the_lines_the_quote_spans() -> None:
    chunk = make_hit().chunk  # lines 10..12
    assert quote_lines(chunk, "Boarding closes 20 minutes") == (10, 10)
    assert quote_lines(chunk, "Bring ID.") == (12, 12)
    assert quote_lines(chunk, "departure.\nGates open") == (10, 11)
    assert quote_lines(chunk, "\nGates open 45 minutes before.\n") == (11, 11)
    assert quote_lines(chunk, "not there") == (10, 12)


def test_quote_lines_keep_the_range_when_lines_do_not_map() -> None:
    # A JSONL record: the text has newlines but sits on one line of the file.
    chunk = make_hit(line_start=4, line_end=4).chunk
    assert quote_lines(chunk, "Bring ID.") == (4, 4)


# -- forged drafts -----------------------------------------------------------------------------

def test_answered_needs_a_citation_and_text() -> None:
    result = verify(Draft(status=ANSWERED, text="Trust me."), [make_hit()])
    assert not result.ok
    assert result.problems == ("an answered draft must cite at least one chunk",)
    empty = verify(Draft(status=ANSWERED, text="  ",
                         citations=(DraftCitation("gates#1", "Bring ID."),)), [make_hit()])
    assert empty.problems == ("an answered draft has no answer text",)


def test_no_evidence_must_not_carry_citations() -> None:
    draft = Draft(status=NO_EVIDENCE, text="", citations=(DraftCitation("gates#1", "Bring ID."),))
    result = verify(draft, [make_hit()])
    assert not result.ok and result.citations == ()
    assert result.problems == ("a no_evidence draft must not carry citations (it has 1)",)


def test_only_answered_and_no_evidence_are_draft_statuses() -> None:
    for status in (BLOCKED, "unverified", "maybe"):
        result = verify(Draft(status=status, text=""), [make_hit()])
        assert not result.ok
        assert result.problems == (
            f"status {status!r} is not one an answerer may return (answered or no_evidence)",)


def test_a_chunk_outside_the_evidence_fails() -> None:
    result = verify(answered(("other#4", "Bring ID.")), [make_hit()])
    assert not result.ok and result.citations == ()
    assert result.problems == ("citation 1: chunk 'other#4' is not among this request's "
                               "evidence (only permitted evidence may be cited)",)


def test_a_blocked_chunk_fails_without_revealing_anything_but_its_id() -> None:
    secret = make_hit("vault#2", "The merger closes on 3 March.", title="Merger plan",
                      source="board/merger.md")
    draft = answered(("gates#1", "Bring ID."), ("vault#2", "The merger closes on 3 March."))
    outside = verify(draft, [make_hit()], blocked_chunk_ids={"vault#2"})
    # Even if a blocked chunk slipped into the evidence, citing it still fails.
    inside = verify(draft, [make_hit(), secret], blocked_chunk_ids=["vault#2"])
    unknown = verify(draft, [make_hit()])
    for result in (outside, inside):
        assert not result.ok and result.citations == ()
        (problem,) = result.problems
        assert problem.startswith("citation 2: chunk 'vault#2'")
        for secret_part in ("merger", "board", "3 march", "closes"):
            assert secret_part not in problem.lower()
        # Worded exactly like an unknown chunk, so the message is no existence oracle.
        assert result.problems == unknown.problems


def test_a_quote_not_in_the_chunk_fails() -> None:
    result = verify(answered(("gates#1", "Gates open 90 minutes before.")), [make_hit()])
    assert result.problems == (
        "citation 1 (chunk 'gates#1'): the quote does not occur in the chunk's text",)
    case = verify(answered(("gates#1", "gates open 45 minutes before.")), [make_hit()])
    assert not case.ok  # a re-cased quote is a paraphrase


def test_empty_quotes_fail() -> None:
    for quote in ("", "  \n "):
        result = verify(answered(("gates#1", quote)), [make_hit()])
        assert result.problems == ("citation 1 (chunk 'gates#1'): the quote is empty",)


def test_every_problem_is_reported_and_none_is_shown() -> None:
    draft = Draft(status="maybe", text="x", citations=(
        DraftCitation("gates#1", "Bring ID."), DraftCitation("nope#1", "x"),
        DraftCitation("gates#1", "not in it")))
    result = verify(draft, [make_hit()])
    assert not result.ok and result.citations == ()
    assert [p.split(":")[0] for p in result.problems] == [
        "status 'maybe' is not one an answerer may return (answered or no_evidence)",
        "citation 2", "citation 3 (chunk 'gates#1')"]


# -- the answerer's drafts always verify ----------------------------------------------------------

WORDS = ["bags", "seats", "cost", "Canada", "parcels", "days", "refund", "退票", "改签",
         "手续费", "起飞前", "３０", "ＡＰＩ", "12.5", "e.g."]
SEPARATORS = [" ", " ", ". ", "! ", "? ", "\n", "。", "；", "  \n ", ", "]
pieces = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=14)
chunk_text = st.one_of(pieces.map(lambda ps: "".join(w + s for w, s in ps)), st.text(max_size=40))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(chunk_text, min_size=0, max_size=5),
    question=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    min_coverage=st.floats(0.0, 1.0),
    max_sentences=st.integers(1, 3),
    max_hits=st.integers(1, 5),
)
def test_every_extractive_answer_verifies(texts: list[str], question: str, min_coverage: float,
                                          max_sentences: int, max_hits: int) -> None:
    hits = [make_hit(f"d{i}#1", text) for i, text in enumerate(texts)]
    answer_settings = AnswerSettings(min_coverage=min_coverage, max_sentences=max_sentences,
                                     max_hits=max_hits)
    draft = extractive_answer(question, hits, answer_settings)
    result = verify(draft, hits)
    assert result.ok, result.problems
    if draft.status == ANSWERED:
        assert len(result.citations) == len(draft.citations) >= 1
        by_id = {h.chunk.chunk_id: h.chunk.text for h in hits}
        for citation in draft.citations:
            assert citation.quote and citation.quote in by_id[citation.chunk_id]


# -- a real knowledge base ------------------------------------------------------------------------

def test_answers_from_a_real_knowledge_base_verify(tmp_path: Path) -> None:
    records = [
        {"doc_id": "shipping", "title": "Shipping", "source": "help.md#shipping",
         "roles": ["public"], "text": "Orders ship from Porto every weekday. Parcels to Canada "
         "arrive within twelve days of shipping."},
        {"doc_id": "returns", "title": "Returns", "source": "help.md#returns",
         "roles": ["public"], "text": "Unworn items can be returned for thirty days."},
        {"doc_id": "carrier-deal", "title": "Carrier contract", "source": "ops.md#carrier",
         "roles": ["staff"], "text": "The Canada carrier discount ends when the contract lapses."},
    ]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "hours.md").write_text(
        "# Hours\n\nThe desk opens at nine.\nThe desk closes at six on Fridays.\n",
        encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kb")
    try:
        kb.ingest([write_jsonl(tmp_path / "docs" / "help.jsonl", records),
                   tmp_path / "docs" / "hours.md"])
        public = Principal("visitor")
        evidence = kb.search("How long do parcels to Canada take?", principal=public).hits
        draft = extractive_answer("How long do parcels to Canada take?", evidence)
        quote = "Parcels to Canada arrive within twelve days of shipping."
        assert [c.quote for c in draft.citations] == [quote]
        blocked_ids = [c.chunk_id for c in kb.chunks("carrier-deal")]
        result = verify(draft, evidence, blocked_chunk_ids=blocked_ids)
        assert result.ok
        assert (result.citations[0].doc_id, result.citations[0].source) == (
            "shipping", "help.md#shipping")

        # A chunk that exists in the knowledge base but was not retrieved is still forged.
        returns_id = kb.chunks("returns")[0].chunk_id
        forged = answered((returns_id, "Unworn items can be returned for thirty days."))
        assert "not among this request's evidence" in verify(forged, evidence).problems[0]
        leaked = verify(answered((blocked_ids[0], "The Canada carrier discount")), evidence,
                        blocked_chunk_ids=blocked_ids)
        assert leaked.problems == (f"citation 1: chunk {blocked_ids[0]!r} is not among this "
                                   "request's evidence (only permitted evidence may be cited)",)

        # Real line numbers: the quote sits on line 4 of hours.md.
        hours = kb.search("When does the desk close on Fridays?", principal=public).hits
        answer = extractive_answer("When does the desk close on Fridays?", hours)
        cited = verify(answer, hours).citations[0]
        assert cited.quote == "The desk closes at six on Fridays."
        assert (cited.line_start, cited.line_end) == (4, 4)
    finally:
        kb.close()
