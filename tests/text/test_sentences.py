"""The one sentence splitter, and the properties that tie chunks and quotes to file lines."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag import KnowledgeBase
from glassrag.answer.extractive import extractive_answer
from glassrag.answer.verify import verify
from glassrag.ingest.chunking import ChunkOptions, chunk_text
from glassrag.parsers.blocks import is_marker_line
from glassrag.records import ANSWERED, Chunk, Hit
from glassrag.text.sentences import code_spans, sentence_texts, split_sentences


def test_a_hard_wrapped_sentence_is_one_sentence() -> None:
    text = "Compression is not enabled by default, because\nit costs CPU. Turn it on."
    assert sentence_texts(text) == [
        "Compression is not enabled by default, because\nit costs CPU.", "Turn it on.",
    ]


def test_structural_line_breaks_end_a_sentence() -> None:
    text = (
        "A paragraph without a full stop\n\n"
        "Options are\n- first item\n- second item\n"
        "| a | b |\n| c | d |\n"
        "# Heading\nprose after a heading.\n"
        "Run this\n```sh\nmake all. then\nmake install\n```\nand done"
    )
    assert sentence_texts(text) == [
        "A paragraph without a full stop", "Options are", "- first item", "- second item",
        "| a | b |", "| c | d |", "# Heading", "prose after a heading.", "Run this", "```sh",
        "make all. then", "make install", "```", "and done",
    ]


def test_abbreviations_list_numbers_inline_code_and_urls_do_not_end_sentences() -> None:
    text = ("Use a proxy, e.g. nginx, as Dr. Smith says. "
            "Call `app.run(). now` first. See https://example.com/a.b?x=1. Then stop.\n"
            "1. Install it\n2. Run it")
    assert sentence_texts(text) == [
        "Use a proxy, e.g. nginx, as Dr. Smith says.", "Call `app.run(). now` first.",
        "See https://example.com/a.b?x=1.", "Then stop.", "1. Install it", "2. Run it",
    ]


def test_cjk_terminators_need_no_space() -> None:
    assert sentence_texts("默认开启。可以关闭！是吗？設定します。") == [
        "默认开启。", "可以关闭！", "是吗？", "設定します。",
    ]
    text = "改期免费；退票收费。"
    assert sentence_texts(text) == [text]
    spans = split_sentences(text, semicolons=True)
    assert [text[a:b] for a, b in spans] == ["改期免费；", "退票收费。"]


def test_emphasis_closing_after_the_terminator_stays_with_its_sentence() -> None:
    # A bold FAQ question: the closing "**" is not a sentence of its own.
    assert sentence_texts("1. **多久过期？**\n\n   默认 7 天。") == [
        "1. **多久过期？**", "默认 7 天。"]
    assert sentence_texts("**Is it cached?** Yes, for an hour. _Really._ See e.g.** here.") == [
        "**Is it cached?**", "Yes, for an hour.", "_Really._", "See e.g.** here.",
    ]


def test_rst_literal_block_lines_stand_alone() -> None:
    text = "Example::\n\n    click.echo('a. b')\n    more(). code\n\nBack to\nprose."
    assert sentence_texts(text) == [
        "Example::", "click.echo('a. b')", "more(). code", "Back to\nprose.",
    ]


def test_a_myst_admonition_holds_prose_and_a_code_directive_holds_code() -> None:
    text = ("```{note}\nNotes are\nwrapped prose. Two sentences.\n```\n\n"
            ":::{tip}\n:class: dropdown\nTips too.\n:::\n\n"
            "````{tab} Linux\n```\nrun --fast. now\n```\nAfter the code.\n````\n\n"
            "```{code-block} python\nx = 1. y\n```")
    assert sentence_texts(text) == [
        "```{note}", "Notes are\nwrapped prose.", "Two sentences.", "```",
        ":::{tip}", ":class: dropdown", "Tips too.", ":::",
        "````{tab} Linux", "```", "run --fast. now", "```", "After the code.", "````",
        "```{code-block} python", "x = 1. y", "```",
    ]
    assert [text[a:b] for a, b in code_spans(text)] == ["run --fast. now", "```", "x = 1. y", "```"]


def test_each_item_of_an_option_list_is_a_sentence_with_its_wrapped_lines() -> None:
    # (option descriptions often end without a period)
    text = ("-a, --all        Show hidden kettles as well\n"
            "--depth=N        Descend at most N levels below\n"
            "                 the start folder\n"
            "--color <when>   Colorize\n\n"
            "A prose line that wraps\n-- not an option -- and goes on.")
    assert sentence_texts(text) == [
        "-a, --all        Show hidden kettles as well",
        "--depth=N        Descend at most N levels below\n                 the start folder",
        "--color <when>   Colorize",
        "A prose line that wraps\n-- not an option -- and goes on.",
    ]


def test_answer_quotes_a_wrapped_sentence_with_its_own_two_lines(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "server.md"
    page.parent.mkdir()
    page.write_text(
        "# Server\n\n"
        "The server listens on port 8000.\n\n"
        "Compression is not enabled by default, because it costs\n"
        "CPU time on every response.\n\n"
        "Keep-alive connections close after\n"
        "five seconds of inactivity.\n"
    )
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([page.parent])
        answer = kb.ask("Is compression enabled by default? What about keep-alive inactivity?")
    assert answer.status == ANSWERED
    lines = {c.quote: (c.line_start, c.line_end) for c in answer.citations}
    assert lines == {
        "Compression is not enabled by default, because it costs\nCPU time on every response.":
            (5, 6),
        "Keep-alive connections close after\nfive seconds of inactivity.": (8, 9),
    }
    assert all(c.heading == "Server" for c in answer.citations)


# -- properties ------------------------------------------------------------------------------

_WORDS = ["alpha", "beta", "gamma", "delta", "port", "timeout", "cache", "默认", "設定"]
_word = st.sampled_from(_WORDS)
_sentence = st.builds(lambda ws, end: " ".join(ws) + end, st.lists(_word, min_size=1, max_size=8),
                      st.sampled_from([".", "。", "!", "", ":"]))
_prose = st.builds(lambda ss, wrap: ("\n" if wrap else " ").join(ss),
                   st.lists(_sentence, min_size=1, max_size=4), st.booleans())
_code = st.builds(lambda ls: "```python\n" + "\n".join(ls) + "\n```",
                  st.lists(st.builds(lambda w: f"{w} = call({w})", _word), min_size=1, max_size=6))
_table = st.builds(lambda rows: "| k | v |\n|---|---|\n" + "\n".join(f"| {r} | 1 |" for r in rows),
                   st.lists(_word, min_size=1, max_size=5))
_items = st.builds(lambda xs: "\n".join(f"- {x}" for x in xs), st.lists(_sentence, min_size=1,
                                                                           max_size=4))
_heading = st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 3), _word)
_tip = st.builds(lambda body: f"::: tip\n{body}\n:::", _prose)
_block = st.one_of(_prose, _prose, _code, _table, _items, _heading, _tip)
_document = st.builds(lambda bs: "\n\n".join(bs) + "\n", st.lists(_block, min_size=1, max_size=10))


def _chunks(text: str, max_chars: int) -> list[Chunk]:
    spans = chunk_text(text, "docs", options=ChunkOptions(docs_max_chars=max_chars))
    return [
        Chunk(chunk_id=f"d#{n}", doc_id="d", ordinal=n, text=s.text, line_start=s.line_start,
              line_end=s.line_end, char_start=s.char_start, char_end=s.char_end,
              heading=s.heading, roles=("public",), doc_version=1, content_hash="h",
              title="d", source="d.md")
        for n, s in enumerate(spans, start=1)
    ]


@settings(max_examples=150, deadline=None)
@given(_document, st.integers(20, 400))
def test_every_docs_chunk_reproduces_its_original_lines(text: str, max_chars: int) -> None:
    lines = text.split("\n")
    chunks = _chunks(text, max_chars)
    for chunk in chunks:
        assert chunk.text == text[chunk.char_start : chunk.char_end]
        original = "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        assert chunk.text in original
        assert original.strip().startswith(chunk.text.split("\n")[0]) or \
            chunk.line_start == chunk.line_end or chunk.text.split("\n")[0] in original
    # together the chunks hold every non-blank character, in order, once
    assert "".join("".join(c.text.split()) for c in chunks) == "".join(text.split())


@settings(max_examples=150, deadline=None)
@given(_document, st.integers(20, 400))
def test_the_docs_chunker_never_makes_a_chunk_of_only_fence_lines(text: str,
                                                                 max_chars: int) -> None:
    for chunk in _chunks(text, max_chars):
        assert not all(is_marker_line(line) for line in chunk.text.split("\n") if line.strip())


@settings(max_examples=150, deadline=None)
@given(_document, st.lists(_word, min_size=1, max_size=4))
def test_every_quote_line_range_holds_the_quote(text: str, question: list[str]) -> None:
    lines = text.split("\n")
    chunks = _chunks(text, 300)
    hits = [Hit(chunk=c, score=1.0) for c in chunks]
    draft = extractive_answer(" ".join(question), hits)
    verdict = verify(draft, hits)
    assert verdict.ok
    for citation in verdict.citations:
        span = "\n".join(lines[citation.line_start - 1 : citation.line_end])
        assert citation.quote in span
        # the range is the quote's own: its first and last lines hold the quote's ends
        first, last = citation.quote.split("\n")[0], citation.quote.split("\n")[-1]
        assert first in lines[citation.line_start - 1] and last in lines[citation.line_end - 1]


def test_a_markdown_table_row_is_one_sentence_whatever_its_cells_say() -> None:
    # A flag's row: its description cell holds several sentences and inline code, and the
    # row is one record (the flag, its default, its description), also as a chunk's last line.
    row = ('| `--tag` | "latest" | String | If you ask for no version, the tag is used. '
           "It is added by `dist-tag add`. Used by `publish` too. |")
    text = "| Flag | Default | Type | Description |\n| --- | --- | --- | --- |\n" + row
    assert [text[s:e] for s, e in split_sentences(text)][-1] == row
    assert row in [text[s:e] for s, e in split_sentences(text + "\n| `--x` | 1 | N | Y. |\n")]


def test_a_simple_table_row_with_inline_code_is_one_sentence() -> None:
    text = ("=====  =========================\n"
            "name   meaning\n"
            "=====  =========================\n"
            "``a``  First. Then ``b.c`` more.\n"
            "=====  =========================\n")
    assert "``a``  First. Then ``b.c`` more." in [text[s:e] for s, e in split_sentences(text)]


def test_a_numbered_heading_is_one_sentence() -> None:
    for text in ("### 6. Publish the release\n\nTag it.", "## 2. 发布 Release\n\n打标签。"):
        spans = split_sentences(text)
        assert [text[a:b] for a, b in spans][0] == text.split("\n")[0]
    # a list item's number, as before
    assert sentence_texts("1. First step. Then more.") == ["1. First step.", "Then more."]
