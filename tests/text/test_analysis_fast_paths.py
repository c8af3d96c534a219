"""The analyser's fast paths give exactly what the regex definitions they replace give."""

from __future__ import annotations

import re
import string

import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.text import analysis as A

# ASCII with the characters that decide word and identifier boundaries over-represented.
_ASCII = st.text(alphabet=st.sampled_from(
    string.ascii_letters + string.digits + "_.=/-  \t\n\x0b\x0c\x1c\x1f\x7f:;,'\"()[]"),
    max_size=60)


@given(_ASCII)
@settings(max_examples=3000, deadline=None)
def test_ascii_words_are_the_regex_words(text: str) -> None:
    assert A._ascii_english(text) == A._english(text.lower(), A._ASCII_WORD_RE)


@given(st.one_of(_ASCII, st.text(max_size=40)))
@settings(max_examples=3000, deadline=None)
def test_identifier_hint_is_the_regex_hint(text: str) -> None:
    expected = (A._CONNECTOR_HINT.search(text) is not None
                or A._CAMEL_HINT.search(text) is not None)
    assert A._may_hold_identifier(text) is expected


def test_every_ascii_pair_and_triple_hints_as_the_regexes_do() -> None:
    chars = string.ascii_letters[::5] + "AZaz09" + "_.=/-" + " :#"
    for a in chars:
        for b in chars:
            for c in chars + "":
                text = a + b + c
                expected = (A._CONNECTOR_HINT.search(text) is not None
                            or A._CAMEL_HINT.search(text) is not None)
                assert A._may_hold_identifier(text) is expected, text


# _COMPOUND_RE as it was written before its leading lookahead (an acronym's plural, "URLs",
# is no capitals-led word in either).
_COMPOUND_WITHOUT_LOOKAHEAD = re.compile(
    r"(?<![A-Za-z0-9_\-])-{0,2}[A-Za-z0-9]+(?:[_.=/\-]+[A-Za-z0-9]+)+"
    r"|(?<![A-Za-z0-9_\-])--?[A-Za-z0-9][A-Za-z0-9]*"
    r"|(?<![A-Za-z0-9_])[A-Za-z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+"
    r"|(?<![A-Za-z0-9_])(?![A-Z]{2,}s(?![a-z0-9]))[A-Z]{2,}[a-z][A-Za-z0-9]*"
)


@given(st.one_of(_ASCII, st.text(max_size=40),
                 st.text(alphabet=st.sampled_from("aZ9_-.=/ 检索設定"), max_size=30)))
@settings(max_examples=3000, deadline=None)
def test_the_identifier_regex_finds_what_it_found_without_its_lookahead(text: str) -> None:
    assert [m.span() for m in A._COMPOUND_RE.finditer(text)] == [
        m.span() for m in _COMPOUND_WITHOUT_LOOKAHEAD.finditer(text)]


def test_identifiers_still_found() -> None:
    assert A.analyze("Set max_connections in starlette.config for getValue") == [
        "set", "max", "connect", "starlett", "config", "getvalu",
        "max_connections", "starlette.config", "get", "valu"]


def test_stem_cache_reset_keeps_stems_and_stop_words(monkeypatch) -> None:
    fresh = [f"glassragunseen{n}ings" for n in range(6)]  # misses, whatever ran before
    text = "The " + " of the ".join(fresh)
    expected = Stemmer.Stemmer("english").stemWords(fresh)
    monkeypatch.setattr(A, "_STEM_CACHE_MAX", len(A._stems) + 2)
    assert A.analyze(text) == expected  # the cache is cleared part-way through this text
    assert len(A._stems) <= len(A.ENGLISH_STOPWORDS) + len(fresh)
    assert A.analyze(text) == expected
    assert A.analyze("the of to") == []  # stop words still dropped after the reset
