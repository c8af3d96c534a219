"""Content tabs: the tab's label is read with the lines inside it, and a one-line code block
under a label may be quoted."""

from __future__ import annotations

from tests.answer.test_answer import make_hit

from glassrag.answer.blocks import sentences
from glassrag.answer.extractive import extractive_answer
from glassrag.answer.structure import line_contexts, line_starts
from glassrag.answer.tabs import tab_bodies
from glassrag.records import ANSWERED

MYST = """\
### Where the spool lives

````{tab} Solaris
```
/var/spool/quayline
```

The daemon also reads `QUAYLINE_SPOOL`.
````

````{tab} FreeBSD
```
/usr/local/var/quayline
```
````
"""

MATERIAL = """\
=== "Solaris"

    ```
    /var/spool/quayline
    ```

=== "FreeBSD"

    ```
    /usr/local/var/quayline
    ```

After the tabs.
"""

SPHINX = """\
.. tabs::

   .. tab:: Solaris

      The spool is /var/spool/quayline.

   .. group-tab:: FreeBSD

      The spool is /usr/local/var/quayline.
"""

CODE_GROUP = """\
::: code-group

```sh [pkgsrc]
$ pkgin install quayline
```

```sh [ports]
$ make -C /usr/ports/net/quayline install
```

:::
"""


DOCUSAURUS = """\
<Tabs>
  <TabItem value="pkgsrc" label="pkgsrc (NetBSD)">

```bash
pkgin install quayline
```

  </TabItem>
  <TabItem value='ports'>

```bash
make install
```

  </TabItem>
</Tabs>
"""


def labels(text: str) -> dict[str, str]:
    """Each line inside a tab -> the tab's label as written."""
    lines = text.split("\n")
    return {lines[index].strip(): text[a:b]
            for index, (a, b) in tab_bodies(lines, line_starts(text))}


def test_myst_tabs_label_their_lines_up_to_the_closing_fence() -> None:
    found = labels(MYST)
    assert found["/var/spool/quayline"] == "Solaris"
    assert found["The daemon also reads `QUAYLINE_SPOOL`."] == "Solaris"
    assert found["/usr/local/var/quayline"] == "FreeBSD"
    assert "### Where the spool lives" not in found


def test_material_tabs_label_their_indented_body() -> None:
    found = labels(MATERIAL)
    assert found["/var/spool/quayline"] == "Solaris"
    assert found["/usr/local/var/quayline"] == "FreeBSD"
    assert "After the tabs." not in found


def test_sphinx_tabs_and_code_group_fences() -> None:
    found = labels(SPHINX)
    assert found["The spool is /var/spool/quayline."] == "Solaris"
    assert found["The spool is /usr/local/var/quayline."] == "FreeBSD"
    grouped = labels(CODE_GROUP)
    assert grouped["$ pkgin install quayline"] == "pkgsrc"
    assert grouped["$ make -C /usr/ports/net/quayline install"] == "ports"
    assert "```" not in {line for line, label in grouped.items() if label == "pkgsrc"}


def test_docusaurus_tab_items_by_label_else_value() -> None:
    found = labels(DOCUSAURUS)
    assert found["pkgin install quayline"] == "pkgsrc (NetBSD)"
    assert found["make install"] == "ports"
    assert "</TabItem>" not in found and "<Tabs>" not in found


def test_a_text_without_tabs_has_no_labels() -> None:
    assert line_contexts("A line with [a link](x.md) and no tab.\n") == {}


def test_the_label_is_the_context_of_the_sentences_in_the_tab() -> None:
    by_text = {MYST[s.start:s.end]: s for s in sentences(MYST)}
    assert by_text["/var/spool/quayline"].context == frozenset({"solari"})
    assert "freebsd" in by_text["/usr/local/var/quayline"].context


def test_a_one_line_code_block_under_a_label_answers() -> None:
    draft = extractive_answer("Where is the quayline spool on FreeBSD?",
                              [make_hit("spool.md#1", MYST)])
    assert draft.status == ANSWERED
    assert draft.citations[0].quote == "/usr/local/var/quayline"
    # Without a label, a one-line block is quoted only with the sentence introducing it.
    plain = MYST.replace("````{tab} FreeBSD", "````").replace("````{tab} Solaris", "````")
    assert all(c.quote != "/usr/local/var/quayline"
               for c in extractive_answer("Where is the quayline spool on FreeBSD?",
                                          [make_hit("spool.md#1", plain)]).citations)
