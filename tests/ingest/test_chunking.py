"""Chunking: four named strategies, every chunk an exact slice with its file lines."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.errors import ChunkingError, InvalidInput
from glassrag.ingest.chunking import CHUNKERS, ChunkOptions, chunk_text
from glassrag.records import ChunkSpan


def lines_of(spans: list[ChunkSpan]) -> list[tuple[int, int]]:
    return [(s.line_start, s.line_end) for s in spans]


# --- structure (seed 001 rules) -------------------------------------------------------------

NOTE = (
    "# Garden log\n"
    "\n"
    "Water the tomatoes at dawn, then mulch the beds.\n"
    "\n"
    "Reminder: the frost date may shift, so check the forecast.\n"
)


def test_structure_note_gives_three_chunks_with_heading_everywhere() -> None:
    spans = chunk_text(NOTE)
    assert [s.text for s in spans] == [
        "# Garden log",
        "Water the tomatoes at dawn, then mulch the beds.",
        "Reminder: the frost date may shift, so check the forecast.",
    ]
    assert lines_of(spans) == [(1, 1), (3, 3), (5, 5)]
    assert [s.heading for s in spans] == ["Garden log"] * 3


def test_structure_heading_starts_a_chunk_without_a_blank_line() -> None:
    text = "loose intro\n## Setup ##\nstep one\nstep two\n#not a heading\n# Next\nbody"
    spans = chunk_text(text, line_offset=10)
    assert [s.text for s in spans] == [
        "loose intro",
        "## Setup ##\nstep one\nstep two\n#not a heading",
        "# Next\nbody",
    ]
    assert lines_of(spans) == [(11, 11), (12, 15), (16, 17)]
    assert [s.heading for s in spans] == [None, "Setup", "Next"]


def test_structure_whitespace_only_line_is_blank_and_trailing_spaces_trimmed() -> None:
    text = "alpha line   \n \t \nbeta line\n"
    spans = chunk_text(text)
    assert [s.text for s in spans] == ["alpha line", "beta line"]
    assert lines_of(spans) == [(1, 1), (3, 3)]


def test_structure_packs_lines_up_to_max_chars() -> None:
    text = "aaaaaaaaaaaa\nbbbbbbbbbbbb\ncccccccccccc\ndddd"
    spans = chunk_text(text, options=ChunkOptions(max_chars=30))
    assert [s.text for s in spans] == ["aaaaaaaaaaaa\nbbbbbbbbbbbb", "cccccccccccc\ndddd"]
    assert lines_of(spans) == [(1, 2), (3, 4)]
    assert all(len(s.text) <= 30 for s in spans)


def test_structure_over_long_line_is_an_error_naming_the_line() -> None:
    text = "short\n\nfine too\n" + "x" * 25 + "\nafter"
    with pytest.raises(ChunkingError) as caught:
        chunk_text(text, options=ChunkOptions(max_chars=20), line_offset=3)
    assert "line 7" in caught.value.message and "20" in caught.value.message
    assert caught.value.details == {"line": 7, "limit": 20}
    # exactly at the limit is fine and nothing is truncated
    spans = chunk_text("y" * 20, options=ChunkOptions(max_chars=20))
    assert spans[0].text == "y" * 20


# --- sentences (seed 000) -------------------------------------------------------------------


def test_sentences_two_on_one_line_equal_the_seed_join() -> None:
    text = "Parcels ship from the Lyon depot on Mondays. Tracking codes arrive by email!"
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    spans = chunk_text(text, "sentences")
    assert len(spans) == 1
    assert spans[0].text == " ".join(sentences) == text
    assert spans[0].heading is None


def test_sentences_grouped_with_line_numbers() -> None:
    text = "One is here.\nTwo follows? Three ends\nthe line. Four.\n\nFive"
    spans = chunk_text(text, "sentences", line_offset=2)
    assert [s.text for s in spans] == [
        "One is here.\nTwo follows?",
        "Three ends\nthe line. Four.",
        "Five",
    ]
    assert lines_of(spans) == [(3, 4), (4, 5), (7, 7)]
    single = chunk_text(text, "sentences", options=ChunkOptions(sentences_per_chunk=1))
    assert len(single) == 5


def test_sentences_cjk_terminators_need_no_space() -> None:
    one = ChunkOptions(sentences_per_chunk=1)
    spans = chunk_text("先检索。再生成！「对吗？」", "sentences", options=one)
    assert [s.text for s in spans] == ["先检索。", "再生成！", "「对吗？」"]


# --- punctuation (seed 002) -----------------------------------------------------------------

FARES = (
    "行李规则如下。\n"
    "手提行李不超过七公斤！托运行李每件不超过二十三公斤；超重部分按每公斤五十元收费。\n"
    "易碎物品请提前声明。"
)


def test_punctuation_packs_units_with_overlap() -> None:
    spans = chunk_text(FARES, "punctuation", options=ChunkOptions(size=30, overlap=6))
    assert [s.text for s in spans] == [
        "行李规则如下。\n手提行李不超过七公斤！",
        "超过七公斤！托运行李每件不超过二十三公斤；",
        "二十三公斤；超重部分按每公斤五十元收费。",
        "五十元收费。\n易碎物品请提前声明。",
    ]
    assert lines_of(spans) == [(1, 2), (2, 2), (2, 2), (2, 3)]
    # Han text needs no word snapping: each chunk re-reads exactly `overlap` characters
    assert [a.char_end - b.char_start for a, b in zip(spans, spans[1:], strict=False)] == [6, 6, 6]


def test_punctuation_defaults_keep_a_short_text_whole() -> None:
    assert [s.text for s in chunk_text(FARES, "punctuation")] == [FARES]


def test_punctuation_splits_an_over_long_unit() -> None:
    spans = chunk_text("字" * 75, "punctuation", options=ChunkOptions(size=30, overlap=0))
    assert [len(s.text) for s in spans] == [30, 30, 15]
    words = " ".join(["harbour"] * 12)  # 95 chars, no punctuation
    spans = chunk_text(words, "punctuation", options=ChunkOptions(size=40, overlap=8))
    assert all(len(s.text) <= 40 for s in spans)
    assert all(set(s.text.split()) == {"harbour"} for s in spans)  # no word cut in half


def test_punctuation_english_overlap_starts_on_a_word() -> None:
    text = "Ferries leave hourly. The last one sails at ten. Tickets are sold aboard."
    spans = chunk_text(text, "punctuation", options=ChunkOptions(size=50, overlap=12))
    assert [s.text for s in spans] == [
        "Ferries leave hourly. The last one sails at ten.",
        "at ten. Tickets are sold aboard.",
    ]


# --- window (seed 004) ----------------------------------------------------------------------


def test_window_fixed_steps_last_window_ends_at_text_end() -> None:
    text = "0123456789ABCDEFGHIJ"
    spans = chunk_text(text, "window", options=ChunkOptions(size=8, overlap=3))
    assert [s.text for s in spans] == ["01234567", "56789ABC", "ABCDEFGH", "FGHIJ"]
    assert [s.char_start for s in spans] == [0, 5, 10, 15]


def test_window_trims_whitespace_and_skips_blank_windows() -> None:
    text = "  abc\n" + " " * 20 + "\nxyz  "
    spans = chunk_text(text, "window", options=ChunkOptions(size=8, overlap=2))
    assert [s.text for s in spans] == ["abc", "xyz"]
    assert lines_of(spans) == [(1, 1), (3, 3)]


# --- options and errors ---------------------------------------------------------------------


def test_unknown_strategy_lists_the_valid_names() -> None:
    with pytest.raises(InvalidInput) as caught:
        chunk_text("text", "paragraphs")
    assert all(name in caught.value.message for name in CHUNKERS)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"size": 10, "overlap": 10}, "overlap"),
        ({"size": 0}, "size"),
        ({"overlap": -1}, "overlap"),
        ({"max_chars": 0}, "max_chars"),
        ({"sentences_per_chunk": 0}, "sentences_per_chunk"),
    ],
)
def test_bad_options_name_the_field(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        ChunkOptions(**kwargs)
    assert field in caught.value.message and caught.value.details["field"] == field


def test_default_sizes_and_overlap_resolution() -> None:
    assert ChunkOptions().size_and_overlap("punctuation") == (300, 50)
    assert ChunkOptions().size_and_overlap("window") == (200, 40)
    assert ChunkOptions(size=30).size_and_overlap("window") == (30, 6)
    with pytest.raises(InvalidInput, match="overlap"):
        chunk_text("abc", "window", options=ChunkOptions(overlap=250))


def test_empty_text_gives_no_chunks() -> None:
    for strategy in CHUNKERS:
        assert chunk_text(" \n\n \t", strategy) == []


# --- the invariant, for every strategy ------------------------------------------------------

_TEXT = st.text(
    alphabet=st.sampled_from(list("ab cd\n\n\t.!?。！？；、#字かx ")) | st.characters(),
    max_size=160,
)


@settings(max_examples=80, deadline=None)
@given(
    text=_TEXT,
    strategy=st.sampled_from(CHUNKERS),
    size=st.integers(1, 40),
    overlap_share=st.floats(0, 0.95),
    per_chunk=st.integers(1, 3),
    line_offset=st.integers(0, 5),
)
def test_chunks_are_slices_that_cover_the_text(
    text: str, strategy: str, size: int, overlap_share: float, per_chunk: int, line_offset: int
) -> None:
    text = text.replace("\r", "")  # chunkers get normalised text
    options = ChunkOptions(
        max_chars=max(size, 1) * 4,
        sentences_per_chunk=per_chunk,
        size=size,
        overlap=min(int(size * overlap_share), size - 1),
    )
    try:
        spans = chunk_text(text, strategy, line_offset=line_offset, options=options)
    except ChunkingError:
        assert strategy == "structure"
        assert any(len(line.rstrip()) > options.max_chars for line in text.split("\n"))
        return
    covered = [False] * len(text)
    for span in spans:
        assert span.text == text[span.char_start : span.char_end]
        assert span.text.strip()
        assert span.line_start == text.count("\n", 0, span.char_start) + 1 + line_offset
        assert span.line_end == text.count("\n", 0, span.char_end - 1) + 1 + line_offset
        if strategy == "structure":
            assert len(span.text) <= options.max_chars
        else:
            assert span.heading is None
        if strategy in ("punctuation", "window"):
            assert len(span.text) <= size
        covered[span.char_start : span.char_end] = [True] * len(span.text)
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))
    starts = [s.char_start for s in spans]
    ends = [s.char_end for s in spans]
    assert starts == sorted(starts) and ends == sorted(ends)
