"""Content tabs: the label a documentation site shows on a tab is what the lines inside it
are about.

Sites put the same step for several platforms or tools side by side, one tab each: MkDocs
Material and PyMdown's ``=== "Linux"``, MyST's ``{tab} Linux`` and ``{tab-item}``, Sphinx's
``.. tab:: Linux``, VitePress's code groups (a fence info string ending in ``[pnpm]``),
Docusaurus's ``<TabItem value="yarn" label="Yarn">``.
The lines inside never repeat the label: ``~/.cache/pip`` is the cache "on Linux" only
because the tab says so. The answerer reads the label with each of them, as it reads a
table row with its header (:func:`glassrag.answer.structure.line_contexts`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from glassrag.text.sentences import indent_of

# ``=== "Linux"`` (``===+`` opens the tab, ``===!`` starts a new set): the body is indented.
_TABBED = re.compile(r'([ \t]*)===[+!]?[ \t]+"([^"\n]+)"[ \t]*$')
# ````{tab} Linux``, ``:::{tab-item} macOS``: the body runs to the closing fence.
_MYST_TAB = re.compile(r"[ \t]*(`{3,}|:{3,})\{(?:tab|tab-item)\}[ \t]+(\S[^\n]*?)[ \t]*$")
# ``.. tab:: Linux``, ``.. group-tab:: Windows`` (sphinx-tabs): the body is indented.
_RST_TAB = re.compile(r"([ \t]*)\.\.[ \t]+(?:tab|group-tab)::[ \t]+(\S[^\n]*?)[ \t]*$")
# Docusaurus (MDX): ``<TabItem value="yarn" label="Yarn">`` up to ``</TabItem>``.
_TAB_ITEM = re.compile(r"[ \t]*<TabItem\b[^>\n]*>")
_TAB_ITEM_LABEL = re.compile(r"""\b(label|value)=(?:"([^"\n]+)"|'([^'\n]+)')""")
_TAB_ITEM_END = re.compile(r"[ \t]*</TabItem>")
# A VitePress code group's fence, "```sh [pnpm]": the label names the whole block.
_LABELLED_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})[\w+#.-]*[ \t]*\[([^\]\n]+)\][ \t]*$")


# What a line opening a tab holds (a labelled fence, the fourth kind, holds "[").
_MARKS = ("===", "{tab", "tab::", "<TabItem")


def may_hold_tabs(text: str) -> bool:
    """A cheap test that ``text`` may hold a content tab, without splitting it into lines."""
    return (any(mark in text for mark in _MARKS)
            or (("```" in text or "~~~" in text) and "[" in text))


def tab_bodies(lines: Sequence[str], starts: Sequence[int]) -> list[tuple[int, tuple[int, int]]]:
    """(line index, label span) for every non-blank line inside a content tab of ``lines``
    (``starts``: each line's offset in the text), the span being the tab label's offsets."""
    out: list[tuple[int, tuple[int, int]]] = []
    for index, line in enumerate(lines):
        if not _may_open(line):
            continue
        if "<TabItem" in line:
            out.extend(_tab_item(lines, starts, index))
            continue
        fenced = _MYST_TAB.match(line) or _LABELLED_FENCE.match(line)
        indented = None if fenced else (_TABBED.match(line) or _RST_TAB.match(line))
        found = fenced or indented
        if found is None:
            continue
        span = (starts[index] + found.start(2), starts[index] + found.end(2))
        body = (_fenced_body(lines, index, found.group(1)) if fenced
                else _indented_body(lines, index))
        out.extend((line_index, span) for line_index in body)
    return out


def _tab_item(lines: Sequence[str], starts: Sequence[int], top: int,
              ) -> list[tuple[int, tuple[int, int]]]:
    """The lines of the Docusaurus tab opened on line ``top`` with its label's span (the
    ``label`` attribute, else the ``value``), up to ``</TabItem>``; none without either."""
    line = lines[top]
    if not _TAB_ITEM.match(line):
        return []
    found = {m.group(1): m.span(2) if m.group(2) else m.span(3)
             for m in _TAB_ITEM_LABEL.finditer(line)}
    where = found.get("label") or found.get("value")
    if where is None:
        return []
    span = (starts[top] + where[0], starts[top] + where[1])
    out = []
    for index in range(top + 1, len(lines)):
        if _TAB_ITEM_END.match(lines[index]):
            break
        if lines[index].strip():
            out.append((index, span))
    return out


def _may_open(line: str) -> bool:
    """A cheap test that ``line`` may open a tab: most lines hold none of the marks."""
    return "[" in line or any(mark in line for mark in _MARKS)


def _fenced_body(lines: Sequence[str], top: int, fence: str) -> list[int]:
    """The non-blank lines after ``top`` up to the fence closing it: the same character, at
    least as many times, alone on its line."""
    closing = re.compile(rf"[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    out = []
    for index in range(top + 1, len(lines)):
        if closing.match(lines[index]):
            break
        if lines[index].strip():
            out.append(index)
    return out


def _indented_body(lines: Sequence[str], top: int) -> list[int]:
    """The non-blank lines after ``top`` indented deeper than it, blank lines between."""
    indent = indent_of(lines[top])
    out = []
    for index in range(top + 1, len(lines)):
        line = lines[index]
        if line.strip() and indent_of(line) <= indent:
            break
        if line.strip():
            out.append(index)
    return out
