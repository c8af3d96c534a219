"""Markdown files: read with their front matter (:func:`read`), and cut into blocks through a
real CommonMark parser (markdown-it-py, tables enabled) for the docs chunker.

Front matter (YAML between ``---`` lines at the top) may name the document's ``doc_id``,
``title``, ``source``, ``chunker`` and ``roles``; the rest of it is kept as metadata. The
title is otherwise the first heading outside code (``#``, a setext ``===`` or ``---``
underline, or ``<h1>``), else the file name.

markdown-it gives every top-level block its line range. It reads a *shadow* of the text
(:mod:`.markdown_shadow`), the same number of lines with the syntax documentation sites add
made plain (container markers and wrapper tags blank, MkDocs admonition bodies dedented, MyST
admonitions as containers). The blocks it finds are then mapped back onto the real lines,
where containers become blocks holding their inner blocks and wrapper lines become markers.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import yaml

from glassrag.errors import ChunkingError
from glassrag.parsers.blocks import Block, clean_heading, trim
from glassrag.parsers.comments import blank_markdown_comments
from glassrag.parsers.fields import jsonable, take_fields
from glassrag.parsers.front_matter import load_front_matter
from glassrag.parsers.markdown_shadow import FENCE, Container
from glassrag.parsers.markdown_shadow import shadow as read_shadow
from glassrag.parsers.reading import FileContext, ReadResult
from glassrag.text.sentences import TITLE_TAG_LINE

__all__ = ["markdown_blocks", "read"]

_TITLE_TAG = re.compile(TITLE_TAG_LINE, re.IGNORECASE)

_KINDS = {
    "paragraph_open": "text", "fence": "code", "code_block": "code", "table_open": "table",
    "bullet_list_open": "list", "ordered_list_open": "list", "blockquote_open": "quote",
    "html_block": "html", "hr": "marker",
}


@lru_cache(maxsize=1)
def _parser() -> Any:
    # Imported here: `import glassrag` must stay light, and only Markdown files need it.
    from markdown_it import MarkdownIt

    # Only block structure is needed: inline parsing (emphasis, links) is most of the cost.
    return MarkdownIt("commonmark", {"html": True}).enable("table").disable(
        ["inline", "text_join"]
    )


def _token_blocks(shadow: list[str]) -> list[Block]:
    try:
        tokens = _parser().parse("\n".join(shadow))
    except Exception as exc:  # noqa: BLE001 - a parser failure is this file's error, not a crash
        raise ChunkingError(f"cannot read the Markdown structure: {type(exc).__name__}") from exc
    blocks: list[Block] = []
    level = 0  # the last heading's
    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        start, end = trim(shadow, token.map[0], token.map[1] - 1)
        if token.type == "heading_open":
            title = clean_heading(tokens[i + 1].content if i + 1 < len(tokens) else "")
            level = int(token.tag[1])
            blocks.append(Block("heading", start, end, level=level, title=title))
        elif token.type == "html_block" and (tag := _title_tag(shadow[start])):
            # A <details> box's <summary> line titles what the box holds, as a heading one
            # level below the last one would ("<summary>3.5.0 release</summary>" under
            # "Latest news"): without it, each box reads as part of the section above. An
            # HTML heading ('<h2 id="install">Install</h2>') is a heading of its own level.
            tag_name, title = tag
            if tag_name != "summary":
                level = int(tag_name[1])
            blocks.append(Block("heading", start, start, title=title,
                                level=min(level + 1, 6) if tag_name == "summary" else level))
            if end > start:  # lines run on without a blank line: HTML to CommonMark too
                rest, _ = trim(shadow, start + 1, end)
                blocks.append(Block("html", rest, end, cuts=_cuts("html", tokens, i, rest, end)))
        elif token.type in _KINDS:
            kind = _KINDS[token.type]
            blocks.append(Block(kind, start, end, cuts=_cuts(kind, tokens, i, start, end)))
    return blocks


def _title_tag(line: str) -> tuple[str, str] | None:
    """The tag name and title of a line that is an HTML title (``<h1>``-``<h6>`` with some
    text, or ``<summary>``), else None."""
    match = _TITLE_TAG.fullmatch(line)
    if match is None:
        return None
    name, title = match.group(1).lower(), clean_heading(match.group(2))
    return (name, title) if title or name == "summary" else None


def _cuts(kind: str, tokens: list[Any], index: int, start: int, end: int) -> tuple[int, ...]:
    """Where a block too long for one chunk may be split, keeping fences and headers on."""
    if kind in ("code", "html", "quote"):
        # A fence line stays with the code line next to it.
        first = start + 2 if kind == "code" and tokens[index].type == "fence" else start + 1
        last = end if kind == "code" and tokens[index].type == "fence" else end + 1
        return tuple(range(first, last))
    if kind == "table":  # header and delimiter rows stay with the first body row
        return tuple(range(start + 3, end + 1))
    if kind == "list":
        depth = tokens[index].level + 1
        items = []
        for token in tokens[index + 1:]:
            if token.level < depth:
                break
            if token.type == "list_item_open" and token.level == depth and token.map:
                items.append(token.map[0])
        return tuple(line for line in items if line > start)
    return ()


def markdown_blocks(text: str) -> list[Block]:
    """The blocks of a Markdown text (front matter already removed), in line order.

    Every non-blank line belongs to exactly one top-level block (or to a container's
    children); lines markdown-it yields no token for (link reference definitions, wrapper
    tags) become ``text`` or ``marker`` blocks of their own.
    """
    lines = text.split("\n")
    shadow, containers, wrappers = read_shadow(lines)
    blocks = _token_blocks(shadow)
    blocks = _fill_gaps(blocks, lines, containers, wrappers)
    return _nest(blocks, containers)


def _fill_gaps(blocks: list[Block], lines: list[str], containers: list[Container],
               wrappers: set[int]) -> list[Block]:
    """Give every non-blank line markdown-it skipped a block of its own."""
    covered = [False] * len(lines)
    for block in blocks:
        for n in range(block.start, block.end + 1):
            covered[n] = True
    markers = wrappers | {c.start for c in containers} | {c.end for c in containers}
    out = list(blocks)
    n = 0
    while n < len(lines):
        if covered[n] or not lines[n].strip():
            n += 1
            continue
        if n in markers:
            out.append(Block("marker", n, n))
            n += 1
            continue
        start = n
        while n + 1 < len(lines) and not covered[n + 1] and lines[n + 1].strip() \
                and n + 1 not in markers:
            n += 1
        out.append(Block("text", start, n))
        n += 1
    out.sort(key=lambda b: b.start)
    return out


def _nest(blocks: list[Block], containers: list[Container]) -> list[Block]:
    """Move the blocks inside each container into it, in one pass over the blocks."""
    ends = {c.start: c.end for c in containers if c.end > c.start}
    out: list[Block] = []
    stack: list[tuple[int, int, list[Block]]] = []  # (start, end, children) of open ones

    def close() -> None:
        start, end, children = stack.pop()
        block = Block("container", start, max(end, children[-1].end), children=tuple(children))
        (stack[-1][2] if stack else out).append(block)

    for block in blocks:
        while stack and block.start > stack[-1][1]:
            close()
        if block.kind == "marker" and block.start in ends:
            stack.append((block.start, ends[block.start], [block]))
        else:
            (stack[-1][2] if stack else out).append(block)
    while stack:
        close()
    return out


# -- reading a file ------------------------------------------------------------------------

_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
# A setext heading's underline ("Kettle" over "======", or over "------" for level two), and
# the lines that cannot be the paragraph it makes a heading of: a list item, a quote, a table
# row, an ATX heading, a fence, indented code.
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^(?: {4}|\t| {0,3}(?:[>#|]|[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)"
                            r"|`{3}|~{3}))")


def _setext_title(lines: list[str], index: int) -> str | None:
    """The heading line ``index`` underlines: the paragraph right above it, its lines joined
    (CommonMark: a "---" under a paragraph makes it a heading, not a rule), else None."""
    if index == 0 or not _SETEXT_UNDERLINE.match(lines[index]):
        return None
    top = index
    while top > 0 and lines[top - 1].strip() and not _NOT_PARAGRAPH.match(lines[top - 1]):
        top -= 1
    if top == index or (top > 0 and lines[top - 1].strip()):
        return None  # nothing above, or the lines above belong to a list, quote or table
    return clean_heading(" ".join(line.strip() for line in lines[top:index])) or None


def read(text: str, stem: str, ctx: FileContext, result: ReadResult) -> None:
    """The document of a Markdown file (normalised ``text``) into ``result``, or why not.

    Bad front matter fails the whole file: ingesting it with its roles dropped could expose
    it."""
    lines = text.split("\n")
    meta: dict[str, Any] = {}
    offset = 0
    if lines[0].rstrip() == "---":
        close = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), 0)
        if not close:
            result.errors.append(ctx.fail("front matter opened at line 1 is never closed by '---'"))
            return
        front = "\n".join(lines[1:close])
        if len(front) > ctx.limits.max_front_matter_chars:
            cap = ctx.limits.max_front_matter_chars
            result.errors.append(ctx.fail(
                f"front matter is {len(front):,} characters, over the {cap:,}-character cap"))
            return
        try:
            loaded = load_front_matter(front, ctx.limits.max_metadata_depth)
        except RecursionError:  # PyYAML without libyaml composes recursively
            result.errors.append(ctx.fail("front matter: invalid YAML: nested too deeply"))
            return
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 2}" if mark is not None else ""  # file lines
            problem = getattr(exc, "problem", None) or str(exc)
            result.errors.append(ctx.fail(f"front matter: invalid YAML{where}: {problem}"))
            return
        if loaded is not None and not isinstance(loaded, dict):
            kind = type(loaded).__name__
            result.errors.append(ctx.fail(f"front matter must be a mapping, not {kind}"))
            return
        meta, offset = jsonable(loaded or {}), close + 1
    try:
        fields = take_fields(meta, csv_roles=True)
    except ValueError as exc:
        result.errors.append(ctx.fail(f"front matter: {exc}"))
        return
    body = "\n".join(lines[offset:])
    dropped = 0
    if not ctx.keep_hidden:
        body, dropped = blank_markdown_comments(body)
        result.hidden_dropped += dropped
    if not body.strip():
        what = "only comments" if dropped else "no text"
        result.errors.append(ctx.fail(f"empty document: {what} after the front matter"))
        return
    fields.setdefault("title", _first_heading(body.split("\n")) or stem)
    result.documents.append(
        ctx.doc(body, parser="markdown", line_offset=offset, metadata=meta, **fields)
    )


def _first_heading(lines: list[str]) -> str | None:
    in_fence = False
    for index, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence  # a "# comment" in a code block is not a heading
        elif not in_fence and (m := _HEADING_RE.match(line)):
            return clean_heading(m.group(1)) or None
        elif not in_fence and (title := _setext_title(lines, index)):
            return title
        elif not in_fence and (tag := _title_tag(line)) and tag[0] != "summary":
            return tag[1]  # '<h1 align="center">Kettle</h1>', as READMEs open
    return None
