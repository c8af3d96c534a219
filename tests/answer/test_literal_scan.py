"""literals() tries the literal regex only where a literal can start: the matches must be
exactly those of the regex tried at every position."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.answer import values

# Characters every kind of literal starts with, needs or is stopped by, and some prose.
_PIECES = st.sampled_from([
    "`", "``", "\"", "'", "\u201c", "\u201d", "\u300c", "\u300d", "-", "--", "_", ".", ",",
    ")", " ", "\n", "<", ">", "0", "42", "3.5", "\uff13", "\u0663", "a", "ab", "max", "Size",
    "X", "default", "默认", "です",
])


def spans(matches: object) -> list[tuple[int, int]]:
    return [m.span() for m in matches]  # type: ignore[attr-defined]


@settings(max_examples=2000, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_the_matches_are_those_of_the_regex_tried_everywhere(text: str) -> None:
    assert spans(values._literal_matches(text)) == spans(values._LITERAL.finditer(text))


def test_documentation_sentences_give_the_same_matches() -> None:
    for text in (
        "* `max_age` - Sets a maximum time in seconds. Defaults to `600`.",
        "Use ``--force`` or set hide_input=True; see click.Choice and getX.",
        "The \"default\" value is 'utf-8' (see CVE-2018-12121), 1. Install <dir>.",
        "默认为 15000 毫秒，可通过「maxMessageSize」设置。",
        "Run `vite build` \u2014 \u201cthe fastest\u201d build, 2.5x; -v or --verbose.",
        "no literal at all here",
    ):
        assert spans(values._literal_matches(text)) == spans(values._LITERAL.finditer(text))
