"""What the answerer remembers between questions is keyed by the text it was worked out from:
a chunk whose text or heading changes (a new version of its document, the same chunk id) is
read afresh, never answered from what its old text said."""

from __future__ import annotations

from glassrag.answer.extractive import extractive_answer
from glassrag.answer.passages import heading_terms, units
from glassrag.records import ANSWERED, Chunk, Hit
from glassrag.text.analysis import analyze


def make_hit(text: str, *, heading: str | None = None, version: int = 1) -> Hit:
    chunk = Chunk(
        chunk_id="guide.md#1", doc_id="guide.md", ordinal=1, text=text, line_start=1,
        line_end=1 + text.count("\n"), char_start=0, char_end=len(text), heading=heading,
        roles=("public",), doc_version=version, content_hash=f"h{version}", title="Guide",
        source="guide.md",
    )
    return Hit(chunk=chunk, score=1.0)


OLD = "Refunds are accepted within 14 days. Contact support by email."
NEW = "Refunds are accepted within 30 days of purchase.\n\nShipping takes a week."


def test_a_changed_chunk_text_under_the_same_chunk_id_gives_the_new_texts_units() -> None:
    before = units([make_hit(OLD)], 5)
    after = units([make_hit(NEW, version=2)], 5)
    assert [u.text for u in before] == [
        "Refunds are accepted within 14 days.",
        "Refunds are accepted within 14 days. Contact support by email.",
        "Contact support by email."]
    assert [u.text for u in after] == ["Refunds are accepted within 30 days of purchase.",
                                       "Shipping takes a week."]
    assert "purchas" in after[0].terms and "14" not in after[0].terms
    assert after[0].literals == ("30",)
    # The old text's units are still the old text's when it comes back.
    assert [u.text for u in units([make_hit(OLD)], 5)] == [u.text for u in before]


def test_a_changed_chunk_text_is_quoted_in_its_new_words() -> None:
    question = "Within how many days are refunds accepted?"
    first = extractive_answer(question, [make_hit(OLD)])
    second = extractive_answer(question, [make_hit(NEW, version=2)])
    assert first.status == second.status == ANSWERED
    assert first.citations[0].quote == "Refunds are accepted within 14 days."
    assert second.citations[0].quote == "Refunds are accepted within 30 days of purchase."


def test_a_changed_heading_gives_the_new_headings_terms() -> None:
    assert heading_terms(make_hit(OLD, heading="Refunds").chunk) == frozenset(
        analyze("Guide\nRefunds"))
    assert heading_terms(make_hit(OLD, heading="Shipping › Delays").chunk) == frozenset(
        analyze("Guide\nShipping › Delays"))
    assert heading_terms(make_hit(OLD).chunk) == frozenset(analyze("Guide\n"))
