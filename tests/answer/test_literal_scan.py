"""literals() scans a text with only the kinds of literal it can hold: the values found must be
exactly those of the scan with every kind."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.answer import values
from glassrag.answer.values import literals


def every_kind(text: str) -> tuple[str, ...]:
    """literals() as it was: one scan with the whole pattern."""
    if "](" in text or "://" in text:
        text = values._ADDRESS.sub(" ", text)
    found = (m.group().strip("`\"'\u201c\u201d\u300c\u300d").casefold()
             for m in values._LITERAL.finditer(text))
    return tuple(dict.fromkeys(v for v in found if not values._PLACEHOLDER.fullmatch(v)))


# Characters every kind of literal starts with, needs or is stopped by, and some prose.
_PIECES = st.sampled_from([
    "`", "``", "\"", "'", "\u201c", "\u201d", "\u300c", "\u300d", "-", "--", "_", ".", ",",
    ")", " ", "\n", "<", ">", "](", "://", "0", "42", "3.5", "\uff13", "a", "ab", "max",
    "Size", "X", "default", "默认", "です",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_the_values_found_are_those_of_the_scan_with_every_kind(text: str) -> None:
    assert literals(text) == every_kind(text)


def test_documentation_sentences_give_the_same_values() -> None:
    for text in (
        "* `max_age` - Sets a maximum time in seconds. Defaults to `600`.",
        "Use ``--force`` or set hide_input=True; see click.Choice and getX.",
        "The \"default\" value is 'utf-8' (see [CVE-2018-12121](https://example.com/1)).",
        "默认为 15000 毫秒，可通过「maxMessageSize」设置。",
        "Run `vite build` \u2014 \u201cthe fastest\u201d build, 2.5x; 1. Install <dir>.",
        "no literal at all here",
    ):
        assert literals(text) == every_kind(text)
