"""Scoring's shortcuts give exactly what the definitions they stand for give."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.answer.passages import Unit
from glassrag.answer.scoring import _Asked
from glassrag.records import Chunk
from glassrag.text.vocabulary import written_short_or_long

# Words sharing their first letters, so that some are written short or long of others.
_WORDS = st.lists(st.sampled_from([
    "async", "asynchron", "asynchronous", "config", "configur", "configuration", "conf",
    "middlewar", "middleware", "max_age", "starlett", "respons", "response", "请求",
    "設定", "café", "cafés", "12345", "abcde",
]), max_size=8)


def _unit(words: list[str]) -> Unit:
    chunk = Chunk(chunk_id="c#1", doc_id="c", ordinal=1, text="x", line_start=1, line_end=1,
                  char_start=0, char_end=1, heading=None, roles=("public",), doc_version=1,
                  content_hash="h", title="", source="c")
    return Unit(0, 0, chunk, 0, 1, frozenset(words), 0, False, (), 1)


@settings(max_examples=500, deadline=None)
@given(_WORDS, st.lists(_WORDS, min_size=1, max_size=4))
def test_a_units_words_written_short_or_long_are_the_definitions(
        terms: list[str], units: list[list[str]]) -> None:
    terms = list(dict.fromkeys(terms))
    candidates = [_unit(words) for words in units]
    asked = _Asked.of(terms, dict.fromkeys(terms, 1.0), frozenset(), candidates)
    for unit in candidates:
        assert asked.short_or_long(unit.terms) == written_short_or_long(terms, unit.terms)
