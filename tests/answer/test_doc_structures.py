"""Documentation structures the answerer reads: reST directives, fields and simple tables,
table headers, object directives' names, and documentation-site markup lines."""

from __future__ import annotations

from pathlib import Path

from glassrag import KnowledgeBase, Principal
from glassrag.answer.blocks import sentences, title_span
from glassrag.answer.structure import directive_argument, line_contexts
from glassrag.answer.values import signature_default, states_default
from glassrag.text.sentences import is_markup, sentence_texts

REFERENCE = """\
Environment
===========

.. envvar:: QUAYLINE_HOME

   Where the tool keeps its state. See also :ref:`state-dir`.

.. envvar:: QUAYLINE_SPOOL

   Where the tool keeps its state when it runs as a service. Alternative to
   :envvar:`QUAYLINE_HOME`.

.. versionadded:: 2.4
   The ``--dry-run`` flag.

.. function:: dock(ship, *, berth=None)

   Moor *ship* at a free berth.

   :param ship: the vessel to moor
   :returns: the berth number
   :raises HarbourFull: when no berth is free

Supported tides
---------------

==========  ==============
release     lowest tide
==========  ==============
2.4         0.8 metres
2.3         1.1 metres
==========  ==============
"""

MARKDOWN = """\
---
title: Spooling
---

import Tabs from '@theme/Tabs';

# Spooling

{{< note >}}
The spool keeps at most 400 manifests before it rotates.
{{< /note >}}

> [!WARNING]
> A manifest over 2 MB is refused with `E_TOO_LARGE`.

| Setting | Default | Meaning |
|---|---|---|
| `spool_depth` | `400` | manifests kept |
| `spool_age` | `7d` | age of the oldest kept manifest |

=== "Linux"

    Run `quayctl spool --start` to start it.

Rotation happens at midnight.
{: .note }
"""


def _kb(tmp_path: Path) -> KnowledgeBase:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "reference.rst").write_text(REFERENCE, encoding="utf-8")
    (docs / "spooling.md").write_text(MARKDOWN, encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kb")
    kb.ingest([docs])
    return kb


def test_a_directive_line_keeps_its_dots_and_fields_are_items_of_their_own() -> None:
    found = sentence_texts(REFERENCE)
    assert ".. versionadded:: 2.4" in found
    assert ":param ship: the vessel to moor" in found
    assert ":raises HarbourFull: when no berth is free" in found
    # A role at the start of a line is text, not a field.
    assert sentence_texts(":func:`dock` moors a ship\nat a free berth.") == [
        ":func:`dock` moors a ship\nat a free berth."]


def test_simple_table_rows_stand_alone_and_keep_their_periods() -> None:
    found = sentence_texts(REFERENCE)
    assert "2.4         0.8 metres" in found
    assert "release     lowest tide" in found
    text = "=====  =====\nmin. size\n=====  =====\nx. y   z\n=====  ====="
    assert sentence_texts(text) == ["=====  =====", "min. size", "=====  =====", "x. y   z",
                                    "=====  ====="]


def test_site_markup_lines_are_blocks_of_their_own_without_terms() -> None:
    for line in ("{{< note >}}", "{% include 'x.md' %}", "{: .note }", "> [!WARNING]",
                 "import Tabs from '@theme/Tabs';", '=== "Linux"',
                 "export const Chip = ({children}) => <b>{children}</b>;",
                 "export default async function Layout({children}) {"):
        assert is_markup(line), line
        assert line in sentence_texts(f"Before it.\n{line}\nAfter it.")
    assert not is_markup("import os") and not is_markup("Import the module.")
    assert not is_markup("export the data to CSV before you upgrade.")
    parts = sentences(MARKDOWN)
    assert all(not s.terms for s in parts if is_markup(MARKDOWN[s.start:s.end]))


def test_rows_are_read_with_their_header_and_bodies_with_their_directive() -> None:
    contexts = line_contexts(REFERENCE)
    lines = REFERENCE.split("\n")
    row = lines.index("2.4         0.8 metres")
    assert [REFERENCE[a:b] for a, b in contexts[row].about] == ["release     lowest tide"]
    body = next(i for i, line in enumerate(lines) if "when it runs as a service" in line)
    assert contexts[body].title == lines.index(".. envvar:: QUAYLINE_SPOOL")
    assert row not in {i for i, c in contexts.items() if c.title >= 0}
    # Admonitions, version notes and code blocks are not object descriptions.
    assert directive_argument(".. versionadded:: 2.4") is None
    assert directive_argument(".. code-block:: python") is None
    parts = sentences(MARKDOWN)
    spooled = next(s for s in parts if "`spool_age`" in MARKDOWN[s.start:s.end])
    assert {"set", "default", "mean"} <= spooled.context


def test_a_sphinx_class_documents_its_class_and_a_version_note_is_read_with_its_body() -> None:
    text = (".. class:: Manifest(entries=None)\n\n    Lists the cargo of one berth.\n\n"
            "    .. deprecated:: 4.2\n        Goes away in the next major release.\n\n"
            ".. rst-class:: wide\n\nA paragraph styled wide.\n")
    lines = text.split("\n")
    contexts = line_contexts(text)
    note = lines.index("        Goes away in the next major release.")
    # Under Sphinx, ``class`` is the Python domain's: its body is about the class.
    assert contexts[note].title == 0
    assert [text[a:b] for a, b in contexts[note].about] == [
        "Manifest(entries=None)", "deprecated:: 4.2"]
    # docutils' class directive, which Sphinx calls rst-class, names no thing.
    assert directive_argument(".. rst-class:: wide") is None
    assert lines.index("A paragraph styled wide.") not in contexts
    body = next(s for s in sentences(text) if text[s.start:s.end].startswith("Goes away"))
    assert body.title == "Manifest(entries=None)" and {"deprec", "manifest"} <= body.context


def test_an_object_directive_is_a_title_and_never_a_quote_of_its_own() -> None:
    parts = sentences(REFERENCE)
    directive = next(s for s in parts if REFERENCE[s.start:s.end] == ".. envvar:: QUAYLINE_SPOOL")
    assert directive.heading
    span = title_span(REFERENCE, directive)
    assert span is not None and REFERENCE[span[0]:span[1]] == "QUAYLINE_SPOOL"
    body = next(s for s in parts if REFERENCE[s.start:s.end].startswith(
        "Where the tool keeps its state when"))
    assert body.title == "QUAYLINE_SPOOL" and "quayline_spool" in body.context


SIGNATURES = """\
Ledger stores
=============

.. autoclass:: HarbourStore(db=0, berths_key='harbour.berths', ledger_key='harbour.ledger')
    :show-inheritance:

Introduction
------------

HarbourStore saves berths in a database of your choice.
"""


def test_a_directive_signature_giving_defaults_is_quoted_not_a_title(tmp_path: Path) -> None:
    # The signature is the only place the defaults are stated (autodoc pulls the body from
    # docstrings the documentation does not hold): it is content, not the body's title.
    line = SIGNATURES.splitlines()[3]
    parts = sentences(SIGNATURES)
    signature = next(s for s in parts if SIGNATURES[s.start:s.end] == line)
    assert not signature.heading and "ledger_key" in signature.terms
    assert signature_default(line) and states_default(line)
    assert not signature_default(".. autoclass:: HarbourStore") and not signature_default(
        ".. function:: dock(ship)")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "stores.rst").write_text(SIGNATURES, encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([docs])
        answer = kb.ask("Which key does HarbourStore keep the ledger under by default?",
                        principal=Principal("reader", roles=["public"]))
    assert answer.status == "answered" and "harbour.ledger" in answer.answer
    assert answer.citations[0].line_start == 4


def test_answers_name_the_variable_a_body_describes_and_read_rows_with_headers(
        tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    anyone = Principal("reader", roles=["public"])
    answer = kb.ask("Apart from QUAYLINE_HOME, which environment variable sets where the "
                    "tool keeps its state?", principal=anyone)
    assert answer.status == "answered"
    assert "QUAYLINE_SPOOL" in answer.answer
    answer = kb.ask("What is the lowest tide for release 2.3?", principal=anyone)
    assert answer.status == "answered" and "1.1 metres" in answer.answer
    assert answer.citations[0].line_start == answer.citations[0].line_end == 31
    answer = kb.ask("What is the default spool_age setting?", principal=anyone)
    assert answer.status == "answered" and "`7d`" in answer.answer
    answer = kb.ask("How many manifests does the spool keep before it rotates?",
                    principal=anyone)
    assert answer.status == "answered" and "400" in answer.answer
    for citation in answer.citations:
        assert "{{<" not in citation.quote
    kb.close()


LIST_TABLES = """\
Limits
======

.. list-table:: Berth limits
   :header-rows: 1

   * - Setting
     - Default
     - Meaning
   * - ``max_draught``
     - ``11.5``
     - Deepest keel accepted. Ships over it wait outside.
   * - ``max_beam``
     - ``32``
     - Widest hull accepted.

.. csv-table:: Pilot fees
   :header: "Zone", "Fee per hour"

   "inner harbour", "40 crowns"
   "outer roads", "65 crowns"
"""


def test_list_and_csv_table_rows_are_units_read_with_their_header(tmp_path: Path) -> None:
    found = sentence_texts(LIST_TABLES)
    row = ("* - ``max_draught``\n     - ``11.5``\n     - Deepest keel accepted. "
           "Ships over it wait outside.")
    assert row in found and '"outer roads", "65 crowns"' in found
    parts = sentences(LIST_TABLES)
    beam = next(s for s in parts if "max_beam" in LIST_TABLES[s.start:s.end])
    assert {"set", "default", "mean"} <= beam.context
    fee = next(s for s in parts if "outer roads" in LIST_TABLES[s.start:s.end])
    assert {"zone", "fee", "hour"} <= fee.context
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "limits.rst").write_text(LIST_TABLES, encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([docs])
        anyone = Principal("reader", roles=["public"])
        answer = kb.ask("What is the default max_beam?", principal=anyone)
        assert answer.status == "answered" and "``32``" in answer.answer
        assert (answer.citations[0].line_start, answer.citations[0].line_end) == (13, 15)
        answer = kb.ask("What is the pilot fee per hour in the outer roads zone?",
                        principal=anyone)
        assert answer.status == "answered" and "65 crowns" in answer.answer


def test_a_line_of_the_block_a_quote_introduces_is_not_quoted_again() -> None:
    from glassrag.answer.extractive import extractive_answer
    from glassrag.records import ANSWERED, Chunk, Hit

    text = ("## Alternatives\n\nSeveral programs can provide one command.\n\n"
            "To check which programs provide x-window-manager, run:\n\n"
            "    update-alternatives --display x-window-manager\n\n"
            "Which news reader to install is left to the user.\n")
    chunk = Chunk(chunk_id="alt.md#1", doc_id="alt.md", ordinal=1, text=text, line_start=1,
                  line_end=1 + text.count("\n"), char_start=0, char_end=len(text),
                  heading="Alternatives", roles=("public",), doc_version=1, content_hash="h",
                  title="Alternatives", source="alt.md")
    draft = extractive_answer("How do I change which program provides x-window-manager?",
                              [Hit(chunk=chunk, score=1.0)])
    assert draft.status == ANSWERED, draft.notes
    quotes = [c.quote for c in draft.citations]
    assert quotes[0].endswith("update-alternatives --display x-window-manager")
    # the command line is in the first quote already (it ends in ":"), not a second time
    assert draft.text.count("update-alternatives --display") == 1, draft.text


def test_a_delimiter_row_of_one_or_two_hyphens_still_makes_a_header() -> None:
    # GFM asks only for hyphens in each delimiter cell: "| :-- | - |" heads a table as
    # "| --- | --- |" does, and its rows are read with the header's words ("默认值").
    for delimiter in ("| :-- | :-- | :-- |", "|-|-|-|", "| :-: | --: | --- |"):
        text = f"| 参数 | 说明 | 默认值 |\n{delimiter}\n| size | 码的边长 | 160 |\n"
        contexts = line_contexts(text)
        assert set(contexts) == {2}, delimiter
        (about,) = contexts[2].about
        assert text[about[0]:about[1]] == "| 参数 | 说明 | 默认值 |"
    # A line of hyphens under a sentence with a pipe in it is no table.
    assert line_contexts("Run a | b.\n- item\n") == {}
