"""The docs chunker on small Markdown and reStructuredText files written for these tests."""

from __future__ import annotations

from pathlib import Path

from glassrag.ingest.chunking import ChunkOptions, chunk_text
from glassrag.parsers.blocks import is_marker_line
from glassrag.parsers.readers import read_file
from glassrag.records import ChunkSpan


def docs(text: str, max_chars: int = 1000, syntax: str = "markdown",
         line_offset: int = 0) -> list[ChunkSpan]:
    spans = chunk_text(text, "docs", options=ChunkOptions(docs_max_chars=max_chars),
                       syntax=syntax, line_offset=line_offset)
    lines = text.split("\n")
    for span in spans:  # every chunk is an exact slice whose lines are the file's lines
        assert span.text == text[span.char_start : span.char_end]
        first, last = span.line_start - 1 - line_offset, span.line_end - 1 - line_offset
        assert span.text.strip() in "\n".join(lines[first : last + 1])
    return spans


GUIDE = """\
# Timeouts

Requests time out after a while.

## Setting a default

Pass the value when you build the client:

```python
client = Client(timeout=5.0)
client.get("/")
```

| option | default |
|--------|---------|
| timeout | 5.0 |
| retries | 3 |

## Per request

- first item
- second item
"""


def test_sections_carry_their_heading_path_and_never_mix() -> None:
    spans = docs(GUIDE, max_chars=400)
    assert [s.heading for s in spans] == [
        "Timeouts", "Timeouts \u203a Setting a default", "Timeouts \u203a Per request",
    ]
    assert spans[1].text.startswith("## Setting a default") and spans[1].text.endswith("| 3 |")
    assert (spans[1].line_start, spans[1].line_end) == (5, 17)
    # what search analyses: the heading path, then the text
    assert spans[1].index_text is not None
    assert spans[1].index_text.startswith("Timeouts \u203a Setting a default\n## Setting")


def test_a_heading_path_holds_what_a_reader_sees_not_badges_or_link_targets() -> None:
    readme = ("# kettle-lint [![build](https://ci.example.org/kettle/badge.svg)]"
              "(https://ci.example.org/kettle/runs)\n\n"
              "Checks kettle recipes.\n\n"
              "## [Options](#options)\n\n"
              "Set `maxSteam` to bound the steam level.\n")
    spans = docs(readme, max_chars=120)
    assert [s.heading for s in spans] == ["kettle-lint", "kettle-lint \u203a Options"]
    # the heading path is indexed before the text: without the badge's addresses
    assert spans[1].index_text is not None
    assert spans[1].index_text.startswith("kettle-lint \u203a Options\n## [Options](#options)")


def test_a_heading_path_leaves_out_anchors_and_attribute_lists() -> None:
    # "{#id}", Python-Markdown's "{: #id }" (after closing hashes) and docsify's ":id=" and
    # "{docsify-ignore}" name the anchor a link jumps to; no reader says them.
    page = ("# Kettle {#top}\n\nBoils water.\n\n"
            "## Steam limit (*required*) ## {: #steam-limit }\n\nBounds the steam.\n\n"
            "## \u63d2\u4ef6 :id=plugins\n\nPlugins add modes.\n\n"
            "## Changelog {docsify-ignore}\n\nNothing yet.\n")
    spans = docs(page, max_chars=60)
    assert [s.heading for s in spans] == [
        "Kettle", "Kettle \u203a Steam limit (required)", "Kettle \u203a \u63d2\u4ef6",
        "Kettle \u203a Changelog"]


def test_a_heading_path_says_escapes_code_entities_and_roles_as_a_reader_sees_them() -> None:
    # Escaped and code-span underscores are no emphasis ("__init__" stays), "&amp;" is "&",
    # and a reST role leaves its text (without the "~" that shortens it).
    page = ("# Kettle \\_\\_init\\_\\_ &amp; `__del__`\n\nBoils water.\n\n"
            "## The *steam* \\[limit] in `~/.kettle/<name>`\n\nBounds the steam.\n")
    spans = docs(page, max_chars=40)
    assert list(dict.fromkeys(s.heading for s in spans)) == [
        "Kettle __init__ & __del__",
        "Kettle __init__ & __del__ \u203a The steam [limit] in ~/.kettle/<name>"]
    rst = ("Boilers\n=======\n\nHeat.\n\n"
           ":class:`~kettle.boil.Boiler` and :ref:`steam <kettle-steam>`\n"
           "------------------------------------------------------------\n\nHot.\n")
    spans = docs(rst, max_chars=30, syntax="rst")
    assert spans[-1].heading == "Boilers \u203a kettle.boil.Boiler and steam"


def test_code_stays_with_the_sentence_that_introduces_it() -> None:
    spans = docs(GUIDE, max_chars=110)
    intro = "Pass the value when you build the client:"
    chunk = next(s.text for s in spans if intro in s.text)
    # the heading leads the chunk (it may pass the cap by its own line, never stand alone)
    assert chunk.startswith("## Setting a default\n\n" + intro)
    assert chunk.endswith('client.get("/")\n```')
    heading = len("## Setting a default\n\n")
    assert all(len(s.text) <= 110 + heading for s in spans)
    assert all(s.text.strip() not in ("# Timeouts", "## Setting a default") for s in spans)


def test_long_code_and_tables_split_between_lines_and_rows_never_a_bare_fence() -> None:
    code = "\n".join(f"value_{n} = compute({n})" for n in range(30))
    table = "\n".join(["| key | value |", "|-----|-------|"]
                      + [f"| k{n} | v{n} |" for n in range(30)])
    text = f"# Big\n\nThe code:\n\n```python\n{code}\n```\n\nThe table:\n\n{table}\n"
    spans = docs(text, max_chars=200)
    lines = text.split("\n")
    for span in spans:
        body = span.text.split("\n")
        assert not all(is_marker_line(line) for line in body), span.text
        # cut only between lines: a chunk's first and last lines are whole file lines
        assert body[0] == lines[span.line_start - 1].strip()
        assert body[-1] == lines[span.line_end - 1].strip()
    fenced = [s.text for s in spans if "value_" in s.text]
    assert fenced[0].startswith("# Big\n\nThe code:\n\n```python")
    assert "value_29 = compute(29)\n```" in fenced[-1]
    # the table's header rows stay with its first row and with the sentence introducing it
    assert "The table:\n\n| key | value |\n|-----|-------|\n| k0 | v0 |" in "\n".join(
        s.text for s in spans if "| k0 |" in s.text)
    assert all(len(s.text) <= 200 + len("# Big\n\n") for s in spans)


def test_a_table_cut_between_chunks_indexes_its_header_with_every_later_chunk() -> None:
    # The later chunks' rows are options under "Default" as much as the first chunk's: search
    # reads the header row with them (their text stays the file's lines).
    rows = [f"| kettle_{n} | boils at {90 + n} | `{n}` |" for n in range(12)]
    prose = "More prose after the table, " + "long enough to stand alone " * 5
    text = "# Options\n\nEach option:\n\n| Option | Meaning | Default |\n| :-- | :-- | - |\n" \
        + "\n".join(rows) + f"\n\n{prose}\n"
    spans = docs(text, max_chars=160)
    later = [s for s in spans if s.text.startswith("| kettle_")]
    assert len(later) >= 2
    for span in later:
        assert span.index_text is not None
        assert span.index_text.startswith(
            "Options\nOptions\n| Option | Meaning | Default |\n| kettle_")
        assert "| Option |" not in span.text
    # prose after the table, in a chunk of its own, is not under the header
    tail = next(s for s in spans if s.text.startswith("More prose"))
    assert "| Option |" not in (tail.index_text or "")


def test_long_cjk_line_splits_at_sentence_ends_without_error_or_loss() -> None:
    sentence = "这是一个很长的句子，用来测试文档分块在没有换行的中文段落中的行为。"
    line = sentence * 30  # about 1000 characters on one line
    text = f"# 说明\n\n{line}\n"
    spans = docs(text, max_chars=300)
    assert len(spans) > 3 and all(len(s.text) <= 300 for s in spans)
    assert all(s.text.endswith("。") for s in spans)
    assert "".join(s.text for s in spans).replace("# 说明\n\n", "") == line
    assert {(s.line_start, s.line_end) for s in spans[1:]} == {(3, 3)}


def test_an_unbreakable_line_is_cut_but_never_dropped() -> None:
    word = "x" * 2500
    spans = docs(word, max_chars=1000)
    assert [len(s.text) for s in spans] == [1000, 1000, 500]
    assert "".join(s.text for s in spans) == word


def test_a_details_box_is_a_section_titled_by_its_summary() -> None:
    text = (
        "# Changes\n\n"
        "## Latest\n\n"
        "Version 9 reads YAML.\n\n"
        "<details>\n"
        "<summary><strong>Version 8</strong></summary>\n\n"
        "- Dropped the INI reader.\n\n"
        "</details>\n\n"
        "<details>\n"
        "<summary>Version 7</summary>\n"
        "* Lines right after the summary are HTML to CommonMark.\n"
        "</details>\n\n"
        "## Install\n\n"
        "Run the installer.\n"
    )
    spans = docs(text, max_chars=100)
    assert [(s.text.split("\n")[-1], s.heading) for s in spans] == [
        ("Version 9 reads YAML.", "Changes › Latest"),
        ("</details>", "Changes › Latest › Version 8"),
        ("</details>", "Changes › Latest › Version 7"),
        ("Run the installer.", "Changes › Install")]
    # the <details> line goes with the summary it opens, even past a small cap
    assert all(not s.text.endswith("<details>") for s in docs(text, max_chars=40))


def test_vitepress_containers_and_html_wrappers_are_read_not_noise() -> None:
    text = (
        "# Config\n\n"
        '<div class="note">\n\n'
        "Wrapped **Markdown** stays Markdown.\n\n"
        "- a list item\n\n"
        "</div>\n\n"
        "::: tip Hot reload\n"
        "Edits apply without a restart.\n"
        ":::\n\n"
        "::: code-group\n\n"
        "```sh [npm]\n"
        "npm create app\n"
        "```\n\n"
        ":::\n"
    )
    [span] = docs(text)
    assert span.text == text.strip()
    spans = docs(text, max_chars=60)
    assert all(not all(is_marker_line(ln) for ln in s.text.split("\n") if ln.strip())
               for s in spans)
    tip = next(s for s in spans if "Edits apply" in s.text)
    assert tip.text.startswith("::: tip Hot reload") and tip.text.endswith(":::")
    # the wrapped list is a list, not an HTML block that swallowed it
    from glassrag.parsers.markdown import markdown_blocks

    kinds = [b.kind for b in markdown_blocks(text)]
    assert kinds[:5] == ["heading", "marker", "text", "list", "marker"]


def test_an_autodoc_line_or_an_unclosed_container_never_swallows_the_sections_after() -> None:
    text = ("# API\n\n::: kettle.Kettle\n    options:\n      show_source: false\n\n"
            "## Brewing\n\nA brew steeps for 180 seconds.\n\n"
            "## Cleaning\n\n::: tip\nNever closed.\n\n## Storing\n\nKeep it dry.\n")
    spans = docs(text)
    # (the API section holds only markers: they go with the next section's text)
    assert [(s.heading, s.line_start, s.line_end) for s in spans] == [
        ("API \u203a Brewing", 1, 9), ("API \u203a Cleaning", 11, 14),
        ("API \u203a Storing", 16, 18)]
    from glassrag.parsers.markdown import markdown_blocks

    assert [b.kind for b in markdown_blocks(text)][:4] == ["heading", "marker", "marker", "marker"]


def test_mkdocs_admonition_body_is_prose_not_indented_code() -> None:
    from glassrag.parsers.markdown import markdown_blocks

    text = '!!! note "Careful"\n\n    The body is indented\n    by four spaces.\n\nAfter.\n'
    [container, after] = markdown_blocks(text)
    assert container.kind == "container" and after.kind == "text"
    assert [b.kind for b in container.children] == ["marker", "text"]
    assert (container.start, container.end) == (0, 3)


def test_pymdown_blocks_are_containers_with_their_options_hidden() -> None:
    # "/// note | Title" opens a block, "///" closes it (nested blocks use more slashes);
    # YAML options indented by four spaces right under the header are not code.
    from glassrag.parsers.markdown import markdown_blocks

    text = ("Intro.\n\n/// warning | Deprecated 9.0\n    type: danger\n\n"
            "The old formatters are gone.\n///\n\n"
            "//// html | div.result\n/// tip\nInner tip.\n///\n////\n\nAfter.\n")
    blocks = markdown_blocks(text)
    assert [b.kind for b in blocks] == ["text", "container", "container", "text"]
    warning, result = blocks[1], blocks[2]
    assert (warning.start, warning.end) == (2, 6) and (result.start, result.end) == (8, 12)
    assert [b.kind for b in warning.children] == ["marker", "marker", "text", "marker"]
    assert any(b.kind == "container" and (b.start, b.end) == (9, 11) for b in result.children)
    spans = docs(text, max_chars=60)
    assert not any(all(is_marker_line(ln) for ln in s.text.split("\n") if ln.strip())
                   for s in spans)
    # the header line is a sentence of its own, never glued to the body's first
    from glassrag.text.sentences import sentence_texts

    assert "The old formatters are gone." in sentence_texts(text)

MYST = """\
# Cache

```{note}
The cache lives in the user's home.
```

````{tab} Linux
```
~/.cache/kettle
```

Kettle also honours `XDG_CACHE_HOME`.
````

:::{warning}
:class: dropdown
Never share one cache between users.
:::

```{admonition} Rotation
---
class: tip
---
Old entries are pruned weekly.
```

```{code-block} python
prune(days=7)
```

~~~{note}
Left open: it runs to the end.
"""


def test_myst_directives_are_containers_of_prose_and_code_directives_stay_code() -> None:
    from glassrag.parsers.markdown import markdown_blocks

    def shape(blocks: list) -> list:  # type: ignore[type-arg]
        return [(b.kind, b.start + 1, b.end + 1, shape(list(b.children))) for b in blocks]

    assert shape(markdown_blocks(MYST)) == [
        ("heading", 1, 1, []),
        ("container", 3, 5, [("marker", 3, 3, []), ("text", 4, 4, []), ("marker", 5, 5, [])]),
        # a longer fence holds a shorter one: the inner fence is code, the line after it prose
        ("container", 7, 13, [("marker", 7, 7, []), ("code", 8, 10, []), ("text", 12, 12, []),
                              ("marker", 13, 13, [])]),
        # options (":class:", or a YAML block between "---") are markers, not prose
        ("container", 15, 18, [("marker", 15, 15, []), ("marker", 16, 16, []),
                               ("text", 17, 17, []), ("marker", 18, 18, [])]),
        ("container", 20, 25, [("marker", 20, 20, []), ("marker", 21, 21, []),
                               ("marker", 22, 22, []), ("marker", 23, 23, []),
                               ("text", 24, 24, []), ("marker", 25, 25, [])]),
        ("code", 27, 29, []),
        ("container", 31, 32, [("marker", 31, 31, []), ("text", 32, 32, [])]),
    ]
    for span in docs(MYST, max_chars=80):  # never a chunk of markers alone
        assert not all(is_marker_line(ln) for ln in span.text.split("\n") if ln.strip())


def test_mkdocs_content_tab_body_is_prose_and_code_not_one_indented_code_block() -> None:
    from glassrag.parsers.markdown import markdown_blocks

    text = ('=== "pip"\n\n    Install the wheel. It needs Python 3.10.\n\n    ```bash\n'
            '    pip install kettle\n    ```\n\nAfter the tabs.\n')
    [tab, after] = markdown_blocks(text)
    assert (tab.kind, after.kind) == ("container", "text")
    assert [(b.kind, b.start, b.end) for b in tab.children] == [
        ("marker", 0, 0), ("text", 2, 2), ("code", 4, 6)]


def test_front_matter_keeps_file_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "page.md"
    path.write_text("---\ntitle: Page\nroles: [staff]\n---\n# Heading\n\nBody line.\n")
    [doc] = read_file(path).documents
    spans = docs(doc.text, line_offset=doc.line_offset)
    assert [(s.line_start, s.line_end, s.heading) for s in spans] == [(5, 7, "Heading")]


RST = """\
.. _intro:

Quickstart
==========

.. currentmodule:: click

Use :func:`option` to add an option, see :ref:`the guide <options-guide>`.
It is wrapped here.

Example::

    @click.command()
    def hello():
        pass

Setting a Default
-----------------

.. code-block:: python

    @click.option("--n", default=1)

.. note::

    Defaults are shown in ``--help``.

.. versionadded:: 8.0

API
---

.. autofunction:: click.echo
"""


def test_rst_titles_directives_and_literal_blocks() -> None:
    spans = docs(RST, syntax="rst")
    assert [s.heading for s in spans] == [
        "Quickstart", "Quickstart \u203a Setting a Default", "Quickstart \u203a API",
    ]
    first = spans[0]
    assert first.text.startswith(".. _intro:") and first.text.endswith("pass")
    assert (first.line_start, first.line_end) == (1, 15)
    assert first.index_text is not None
    # roles reduced to their text, labels dropped
    assert "Use option to add an option, see the guide." in first.index_text
    assert ":func:" not in first.index_text and "_intro" not in first.index_text
    default = spans[1].index_text or ""
    assert "New in version 8.0" in default and "Defaults are shown in --help." in default
    api = spans[2].index_text or ""
    assert "click.echo" in api and "autofunction" not in api


def test_an_html_heading_line_is_a_heading_and_titles_the_file(tmp_path: Path) -> None:
    text = ('<h1 align="center">Kettle</h1>\n\n<p align="center">\nA tea server.\n</p>\n\n'
            '<h2 id="install"><a href="#install">Install</a></h2>\n\nRun `pipx install kettle`.\n\n'
            '<h3><img src="logo.png"></h3>\n\nNo title in that one.\n')
    assert [(s.heading, s.line_start) for s in docs(text)] == [
        ("Kettle", 1), ("Kettle \u203a Install", 7)]
    path = tmp_path / "README.md"
    path.write_text(text)
    [doc] = read_file(path).documents
    assert doc.title == "Kettle"


def test_an_mdx_page_is_read_as_markdown(tmp_path: Path) -> None:
    path = tmp_path / "intro.mdx"
    path.write_text("import Tabs from '@theme/Tabs';\n\n# Quick start\n\n<Tabs>\n"
                    "<TabItem value=\"maven\">\n\nAdd the client with Maven.\n\n"
                    "</TabItem>\n</Tabs>\n")
    result = read_file(path)
    assert result.errors == []
    [doc] = result.documents
    assert (doc.parser, doc.title) == ("markdown", "Quick start")


def test_rst_field_lists_are_searched_and_directive_options_are_not() -> None:
    from glassrag.parsers.rst import index_text

    text = (".. autoclass:: kettle.Kettle\n   :members:\n   :noindex:\n\n"
            ":Default port: 8088\n:Config file: ``/etc/kettle.toml``\n")
    assert index_text(text).split("\n") == [
        " kettle.Kettle", "", "", "", ":Default port: 8088", ":Config file: /etc/kettle.toml", ""]


def test_rst_roles_and_links_split_by_a_hard_wrap_are_searched_as_their_text() -> None:
    from glassrag.parsers.rst import index_text

    text = ("Frozen builds skip discovery (:ref:`entry\npoints <pip-installable plugins>`),\n"
            "see :doc:`the notes\n<reference/loading>` and `Tox\n<https://tox.wiki>`_.\n"
            "Keep ``a\nliteral`` and *em\nphasis*.\n")
    assert index_text(text).split("\n") == [
        "Frozen builds skip discovery (entry", "points),", "see the notes", " and Tox",
        ".", "Keep ``a", "literal`` and *em", "phasis*.", ""]


def test_rst_any_adornment_and_overlines_set_levels_in_order() -> None:
    from glassrag.parsers.rst import rst_blocks, rst_title

    text = "#####\nPart\n#####\n\nChapter\n*******\n\nText.\n\nSection\n~~~~~~~\n\nMore.\n"
    headings = [(b.title, b.level, b.start, b.end) for b in rst_blocks(text) if b.kind == "heading"]
    assert headings == [("Part", 1, 0, 2), ("Chapter", 2, 4, 5), ("Section", 3, 9, 10)]
    assert rst_title(text) == "Part"


def test_rst_file_is_read_with_its_title(tmp_path: Path) -> None:
    path = tmp_path / "guide.rst"
    path.write_text(RST)
    [doc] = read_file(path).documents
    assert (doc.parser, doc.title, doc.text) == ("rst", "Quickstart", RST)


def test_deep_nesting_and_marker_floods_are_read_within_bounds() -> None:
    # Unclosed containers nested past Python's recursion limit, fences with nothing inside:
    # every line is still in exactly one chunk, and no chunk is far over the cap.
    for text, syntax in [
        ("::: tip\n" * 1500 + "body\n", "markdown"),
        ("".join("    " * i + "!!! note\n" for i in range(1200)) + "end\n", "markdown"),
        ("".join(" " * i + ".. note::\n\n" for i in range(1200)) + "end\n", "rst"),
        ("```\n" * 3000, "markdown"),
    ]:
        spans = docs(text, max_chars=500, syntax=syntax)
        assert "".join("".join(s.text.split()) for s in spans) == "".join(text.split())
        assert max(len(s.text) for s in spans) <= 1000


# A section long enough for three chunks; only the first holds its heading line.
RETRY_API = """\
# Client

## `client.retry(request[, options])`

Sends the request again when the server does not answer in time. The retry waits a
little longer after every failed attempt, up to a limit, and gives up after that.

* `options` {Object}
  * `attempts` {number} How many times to send the request in all.
    **Default:** `3`.
  * `backoff` {number} Milliseconds to wait before the second attempt; each later
    attempt waits twice as long as the one before. **Default:** `100`.
  * `jitter` {boolean} Add a random part to every wait. **Default:** `false`.

The returned promise settles with the last response, or rejects with the last error
when every attempt has failed. Requests that were already answered are never resent.
"""


def test_every_chunk_of_a_section_is_indexed_with_its_own_heading() -> None:
    spans = docs(RETRY_API, max_chars=260)
    section = [s for s in spans if s.heading == "Client \u203a client.retry(request[, options])"]
    assert len(section) >= 3
    path = "Client \u203a client.retry(request[, options])"
    opening, *later = section
    # the opening chunk has the heading line in its own text, after the heading path
    assert opening.index_text == f"{path}\n{opening.text}"
    for span in later:
        # the later ones hold the options and caveats of the same call: they get the
        # section's own heading before their text, so they weigh it as the opening one does
        assert span.index_text == f"{path}\nclient.retry(request[, options])\n{span.text}"
    # a chunk before any heading, or a document without headings, gets nothing added
    [plain] = docs("Just a paragraph.\n")
    assert plain.index_text == "Just a paragraph."


# A Sphinx include file: reST kept in a .txt, with a substitution defined at its top.
INCLUDED_OPTIONS = """\
.. |out| replace:: The listing is written to ``<path>`` when one is given.

.. option:: --list-plugins [<path>]

 Show every installed plugin and exit.
 |out|

.. option:: --quiet

 Say nothing unless something fails.
"""


def test_a_txt_file_written_in_rest_is_read_as_rest(tmp_path: Path) -> None:
    path = tmp_path / "OPTIONS.txt"
    path.write_text(INCLUDED_OPTIONS)
    [doc] = read_file(path).documents
    assert (doc.parser, doc.title, doc.text) == ("rst", "OPTIONS", INCLUDED_OPTIONS)
    # so it is cut as documentation: an option stays with what it says, not one chunk per
    # paragraph as the plain-text chunker cuts
    [span] = chunk_text(doc.text, "docs", syntax="rst")
    assert (span.line_start, span.line_end) == (1, 10)
    # plain text with none of reST's explicit markup stays plain text
    notes = tmp_path / "notes.txt"
    notes.write_text("Shopping list\n\n.. eggs, milk\n\nCall :Bob: back\n")
    assert read_file(notes).documents[0].parser == "text"


def test_rest_substitutions_are_searched_as_the_text_they_stand_for() -> None:
    [span] = docs(INCLUDED_OPTIONS, syntax="rst")
    index = span.index_text or ""
    # |out| reads as its definition's text, its own markup reduced too; the definition
    # line itself is not searched twice
    assert "Show every installed plugin and exit.\n The listing is written to <path> when" \
        in index
    assert index.count("The listing is written") == 1 and "replace::" not in index
    # a reference with no definition in the document keeps its name, as before
    [other] = docs("Title\n=====\n\nSee |undefined| here.\n", syntax="rst")
    assert "See undefined here." in (other.index_text or "")


LIMIT_SECTION = """\
## Listener limit

At most ten listeners may be added for one event name. The limit can be raised for a
single emitter.

This is not a hard limit. Going past it prints a warning about a possible leak. To add
more listeners without the warning, raise the limit first:

```js
emitter.setMaxListeners(emitter.getMaxListeners() + 1);
emitter.once('event', () => {});
```
"""


def test_a_paragraph_that_introduces_code_gives_its_leading_sentences_to_the_chunk_before() -> None:
    # The paragraph and its code (about 220 characters) do not fit after the first chunk's
    # 150, but its leading sentences do: they finish that chunk, and only the sentence that
    # introduces the code stays with it.
    first, second = docs(LIMIT_SECTION, max_chars=260)
    assert first.text.endswith("Going past it prints a warning about a possible leak.")
    assert second.text.startswith("To add\nmore listeners without the warning")
    assert second.text.endswith("```")
    # with room for all of it, the paragraph stays whole with its code, as before
    [whole] = docs(LIMIT_SECTION, max_chars=600)
    assert "leak. To add\nmore listeners" in whole.text
    # and a paragraph that opens a chunk is never split off its code
    alone = LIMIT_SECTION.replace(
        "At most ten listeners may be added for one event name. The limit can be raised for a"
        "\nsingle emitter.\n\n", "")
    [only] = docs(alone, max_chars=260)
    assert only.text.startswith("## Listener limit\n\nThis is not a hard limit.")


FAQ_PAGE = """<!doctype html><html><head><title>Keeping a system current</title></head><body>
<h1>Keeping a system current</h1>
<h2>Must I reboot to upgrade a package?</h2>
<p>No. Packages are replaced in place, even on a running machine.</p>
<p>Running services are stopped and started again around the upgrade.</p>
<h2>Can updates run on their own?</h2>
<p>Yes. A scheduled job can refresh the package lists every night.</p>
</body></html>
"""


def _html_chunks(tmp_path: Path, config: str = "") -> list[tuple[str | None, str]]:
    from glassrag.kb import KnowledgeBase

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "faq.html").write_text(FAQ_PAGE)
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    if config:
        (kb_dir / "glassrag.toml").write_text(config)
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([tmp_path / "docs"])
        assert report.failed == []
        return [(c.heading, c.text) for c in kb.chunks("faq.html")]


def test_an_html_page_is_chunked_along_its_headings(tmp_path: Path) -> None:
    chunks = _html_chunks(tmp_path)
    # Each section is one chunk under its heading path: no chunk holds only a heading, and
    # the answer is never cut off from the question its section asks.
    assert [h for h, _ in chunks] == [
        "Keeping a system current \u203a Must I reboot to upgrade a package?",
        "Keeping a system current \u203a Can updates run on their own?",
    ]
    reboot = dict(chunks)["Keeping a system current \u203a Must I reboot to upgrade a package?"]
    assert "No. Packages are replaced in place" in reboot and "stopped and started" in reboot
    assert all(t.strip().lstrip("#").strip() not in {"Must I reboot to upgrade a package?",
                                                      "Can updates run on their own?"}
               for _, t in chunks)


def test_html_chunking_can_be_set_back_to_the_structure_rules(tmp_path: Path) -> None:
    chunks = _html_chunks(tmp_path, '[chunking]\nhtml = "structure"\n')
    texts = [t.strip() for _, t in chunks]
    # one chunk per paragraph, each heading a chunk of its own
    assert texts == [
        "# Keeping a system current", "## Must I reboot to upgrade a package?",
        "No. Packages are replaced in place, even on a running machine.",
        "Running services are stopped and started again around the upgrade.",
        "## Can updates run on their own?",
        "Yes. A scheduled job can refresh the package lists every night.",
    ]
