"""The shadow of a Markdown text that markdown-it reads: the syntax of documentation sites
made plain, line for line.

CommonMark does not know what documentation sites add, and would misread it: an MkDocs
admonition's body indented by four spaces is not code, ``<div>`` swallows the Markdown after
it into an HTML block, and a MyST admonition fence is not code either. :func:`shadow` returns
a copy of the lines, as many as the text has, in which container markers (``::: tip`` …
``:::`` of VitePress, ``/// note | Title`` … ``///`` of PyMdown's blocks, ``:::{note}`` and
```` ```{note} ```` of MyST, with their option lines)
and wrapper tags (``<div …>``, ``</div>``) are blank and an MkDocs admonition's body
(``!!! note``) is dedented, with the containers and wrapper lines it found. The Markdown
reader (:mod:`.markdown`) maps the blocks markdown-it finds back onto the real lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from glassrag.parsers.blocks import body_end
from glassrag.text.sentences import (
    DIRECTIVE_FENCE,
    FIELD,
    closes_fence,
    indent_of,
    is_prose_directive,
)

__all__ = ["FENCE", "MAX_NESTING", "Container", "shadow"]

#: Containers nest at most this deep (markdown-it's own cap on nested blocks is 20).
MAX_NESTING = 20
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CONTAINER_OPEN = re.compile(r"^ {0,3}(:{3,}|/{3,})[ \t]*([\w-]+.*?|\{[\w:.-]+\}.*?)[ \t]*$")
_DIRECTIVE_FENCE = re.compile(rf"^ {{0,3}}{DIRECTIVE_FENCE}")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
# A directive's options: ":name: value" lines, or a YAML block between "---" lines.
_DIRECTIVE_OPTION = re.compile(rf"[ \t]*{FIELD}")
_CONTAINER_CLOSE = re.compile(r"^ {0,3}(:{3,}|/{3,})[ \t]*$")
# A PyMdown block's options: YAML lines indented by four spaces right under its header.
_BLOCK_OPTION = re.compile(r"^ {4,}\S")
# An MkDocs admonition ("!!! note", "??? tip") or content tab ('=== "pip"'): its body is the
# lines indented under it.
_ADMONITION = re.compile(
    r"^([ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+[\w-]+.*|={3}[!+]?[ \t]+\"[^\"\n]*\"[ \t]*)$")
# mkdocstrings' "::: package.module.Name" (with indented options below it): the API docs of
# an object are put here when the site is built. It opens nothing and is never closed.
_AUTODOC = re.compile(r"^ {0,3}:::[ \t]+[\w-]+(?:\.[\w-]+)+[ \t]*$")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
# Lines that only open or close a layout element: transparent to the text around them.
_WRAPPER = re.compile(
    r"^[ \t]*</?(?:div|section|article|aside|main|center|figure|details|span|p|template|"
    r"ClientOnly)\b[^>]*>[ \t]*$",
    re.IGNORECASE,
)


@dataclass
class Container:
    """A container's first and last line (its markers)."""

    start: int
    end: int = -1


def shadow(lines: list[str]) -> tuple[list[str], list[Container], set[int]]:
    """The text markdown-it reads, the containers found, and the wrapper lines blanked."""
    plain = list(lines)
    containers: list[Container] = []
    open_colons: list[tuple[str, Container]] = []  # (marker, container), open
    admonitions: list[tuple[int, Container]] = []  # (body indent, container)
    directives: list[tuple[str, Container]] = []  # (opening fence, container), open
    wrappers: set[int] = set()
    fence: str | None = None
    options_end = -1  # the last option line of the directive just opened
    headings: list[int] = []  # ATX heading lines outside code
    for index, line in enumerate(lines):
        dedent = 0
        while admonitions and line.strip() and indent_of(line) < admonitions[-1][0]:
            admonitions.pop()[1].end = _last_content(lines, index - 1)
        if admonitions:
            dedent = min(admonitions[-1][0], indent_of(line))
        body = line[dedent:]
        plain[index] = body
        if fence is not None:
            match = FENCE.match(body)
            if match and closes_fence(match.group(1), fence):
                fence = None
            continue
        if index <= options_end:
            wrappers.add(index)
            plain[index] = ""
        elif directives and (match := _FENCE_CLOSE.match(body)) \
                and closes_fence(match.group(1), directives[-1][0]):
            directives.pop()[1].end = index
            plain[index] = ""
        elif (match := _DIRECTIVE_FENCE.match(body)) and is_prose_directive(match.group(2)) \
                and len(open_colons) + len(admonitions) + len(directives) < MAX_NESTING:
            container = Container(index)
            containers.append(container)
            if match.group(1)[0] == ":":
                open_colons.append((match.group(1), container))
            else:
                directives.append((match.group(1), container))
            options_end = _options_end(lines, index, dedent)
            plain[index] = ""
        elif match := FENCE.match(body):
            fence = match.group(1)
        elif _AUTODOC.match(body):
            wrappers.add(index)
            plain[index] = ""
            options_end = body_end(lines, index, indent_of(lines[index]))
        elif match := _CONTAINER_CLOSE.match(body):
            if _close(open_colons, match.group(1), index):
                plain[index] = ""
        elif len(open_colons) + len(admonitions) >= MAX_NESTING:
            continue  # deeper containers are read as text, as markdown-it caps its nesting
        elif match := _CONTAINER_OPEN.match(body):
            container = Container(index)
            containers.append(container)
            open_colons.append((match.group(1), container))
            plain[index] = ""
            if match.group(1)[0] == "/":
                options_end = _block_options_end(lines, index, dedent)
        elif match := _ADMONITION.match(body):
            container = Container(index)
            containers.append(container)
            admonitions.append((indent_of(line) + 4, container))
            plain[index] = ""
        elif _WRAPPER.match(body):
            wrappers.add(index)
            plain[index] = ""
        elif _ATX_HEADING.match(body):
            headings.append(index)
    for _, container in admonitions:
        container.end = _last_content(lines, len(lines) - 1)
    for _, container in [*open_colons, *directives]:
        # Never closed (a typo, or a syntax not known here): it ends before the next heading,
        # never swallowing the sections after it.
        after = next((h for h in headings if h > container.start), len(lines))
        container.end = max(container.start, _last_content(lines, after - 1))
    return plain, containers, wrappers


def _options_end(lines: list[str], index: int, dedent: int) -> int:
    """The last option line of the directive opened at ``index`` (``index`` if none)."""
    end = index
    if index + 1 < len(lines) and lines[index + 1][dedent:].rstrip() == "---":
        close = next((n for n in range(index + 2, len(lines))
                      if lines[n][dedent:].rstrip() == "---"), None)
        return index if close is None else close
    while end + 1 < len(lines) and _DIRECTIVE_OPTION.match(lines[end + 1]):
        end += 1
    return end


def _close(open_markers: list[tuple[str, Container]], marker: str, index: int) -> bool:
    """Close, at ``index``, the innermost open container that ``marker`` closes, and any still
    open inside it; whether there was one. Any ``:::`` closes the innermost ``:::`` container
    (VitePress does not count colons); a PyMdown block closes with as many slashes as opened
    it, which is how its blocks nest."""
    for depth in range(len(open_markers) - 1, -1, -1):
        opened = open_markers[depth][0]
        if opened == marker or (marker[0] == ":" and opened[0] == ":"):
            for _, container in open_markers[depth:]:
                container.end = index
            del open_markers[depth:]
            return True
    return False


def _block_options_end(lines: list[str], index: int, dedent: int) -> int:
    """The last option line of the PyMdown block opened at ``index`` (``index`` if none)."""
    end = index
    while end + 1 < len(lines) and _BLOCK_OPTION.match(lines[end + 1][dedent:]):
        end += 1
    return end


def _last_content(lines: list[str], index: int) -> int:
    while index > 0 and not lines[index].strip():
        index -= 1
    return index
