"""The sentence splitter's one-sentence shortcut gives what its general scan gives, and the
sentences chunker's chunks are built from the splitter's sentences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.ingest.chunking import ChunkOptions, chunk_text
from glassrag.text import sentences as splitter
from glassrag.text.sentences import split_sentences

_TEXT = st.text(alphabet=st.sampled_from(
    "ab Z9 \t\x0b\x0c\x1c\u2028\u3000\xa0`:/.!?\u3002\uff01\uff1f\uff1b\"')\u300d\n\u6587"),
    max_size=40)


@given(_TEXT, st.booleans())
@settings(max_examples=3000, deadline=None)
def test_one_sentence_is_what_split_sentences_gives(text: str, semicolons: bool) -> None:
    shortcut = splitter._one_sentence(text, semicolons)
    if shortcut is not None:
        assert shortcut == splitter._split(text, False, semicolons)


@given(st.text(max_size=80), st.integers(1, 3), st.integers(0, 5))
@settings(max_examples=2000, deadline=None)
def test_sentences_chunks_are_the_general_ones(text: str, per_chunk: int, offset: int) -> None:
    sentences = split_sentences(text)
    bounds = [(sentences[i][0], sentences[min(i + per_chunk, len(sentences)) - 1][1])
              for i in range(0, len(sentences), per_chunk)]
    spans = chunk_text(text, "sentences", line_offset=offset,
                       options=ChunkOptions(sentences_per_chunk=per_chunk))
    assert [(s.char_start, s.char_end) for s in spans] == bounds
    assert all(s.text == text[s.char_start:s.char_end] for s in spans)


def test_shortcut_taken_for_a_one_line_record() -> None:
    assert splitter._one_sentence("  refunds take three days  ", False) == [(2, 25)]
    assert splitter._one_sentence(" \t ", False) == []
    assert splitter._one_sentence("Done. Next", False) is None
    assert splitter._one_sentence("two\nlines", False) is None
