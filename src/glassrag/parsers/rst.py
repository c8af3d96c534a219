"""reStructuredText files: read as they are (:func:`read`), and cut into blocks line by line.

A ``.rst`` file is one document holding the file's own text (so lines stay exact), titled
by its first section title. Roles come from the roles rules file or the ingest call.

docutils would reject what Sphinx adds (``:func:``, ``autoclass``, ``click:example``) and
reports positions only for some nodes, so a small reader that knows the shapes of reST is
used instead: section titles (underlined, or over- and underlined, any adornment
character, levels in order of first appearance), directives with their indented bodies
(code, admonitions, autodoc), literal blocks after ``::``, lists, tables and paragraphs.
Every block is a range of the file's own lines.

:func:`index_text` is what gets analysed for search: roles reduced to their text
(:func:`click.echo` -> ``click.echo``), autodoc directives to the names they document,
version directives to the words Sphinx renders, a directive's option lines and labels
dropped (a field list elsewhere is text the page shows, and stays).
"""

from __future__ import annotations

import re

from glassrag.parsers.blocks import Block, body_end, clean_heading
from glassrag.parsers.comments import blank_rst_comments
from glassrag.parsers.reading import FileContext, ReadResult
from glassrag.text.sentences import indent_of

__all__ = ["index_text", "read", "rst_blocks", "rst_title"]

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")
_DIRECTIVE = re.compile(r"^([ \t]*)\.\.[ \t]+([\w:.-]+)::(.*)$")
_EXPLICIT = re.compile(r"^([ \t]*)\.\.(?:[ \t]|$)")  # comment, target, footnote
_BULLET = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d+[.)]|#\.|\(?[a-zA-Z0-9]\)|[a-zA-Z]\.)[ \t]+\S")
_OPTION = re.compile(r"^[ \t]*:[\w -]+:(?:[ \t].*)?$")
_GRID = re.compile(r"^[ \t]*\+[-=+]+\+[ \t]*$")
_SIMPLE_TABLE = re.compile(r"^[ \t]*=+(?:[ \t]+=+)+[ \t]*$")
_CODE_DIRECTIVES = re.compile(
    r"(?:code|code-block|sourcecode|literalinclude|highlight|parsed-literal|doctest|math|"
    r"[\w-]+:(?:example|run))$"
)
_AUTODOC = re.compile(r"(?:auto\w+|(?:py:)?(?:function|class|method|attribute|data|exception|"
                      r"module|currentmodule|decorator|option|envvar))$")


def _is_title(lines: list[str], i: int) -> tuple[int, tuple[str, bool]] | None:
    """A section title starting at line ``i``: (its last line, its adornment style)."""
    n = len(lines)
    line = lines[i]
    if _ADORNMENT.match(line) and i + 2 < n and lines[i + 1].strip() \
            and lines[i + 2].rstrip() == line.rstrip() and not _ADORNMENT.match(lines[i + 1]):
        return i + 2, (line.strip()[0], True)
    if i + 1 < n and line.strip() and indent_of(line) == 0 and not _ADORNMENT.match(line):
        under = lines[i + 1]
        long_enough = len(under.rstrip()) >= min(len(line.rstrip()), 3)
        if _ADORNMENT.match(under) and long_enough and (i == 0 or not lines[i - 1].strip()):
            return i + 1, (under.strip()[0], False)
    return None


def _paragraph_end(lines: list[str], i: int) -> int:
    j = i
    while j + 1 < len(lines) and lines[j + 1].strip() and not _DIRECTIVE.match(lines[j + 1]) \
            and not (_BULLET.match(lines[j + 1])
                     and indent_of(lines[j + 1]) <= indent_of(lines[i])):
        j += 1
    return j


#: Directive bodies are read as blocks this many levels deep; deeper ones are plain text.
MAX_NESTING = 20


def rst_blocks(text: str) -> list[Block]:
    """The blocks of a reST text, in line order; every non-blank line is in one block."""
    lines = text.split("\n")
    return _blocks(lines, 0, len(lines) - 1, {})


def _blocks(lines: list[str], start: int, stop: int, styles: dict[tuple[str, bool], int],
            depth: int = 0) -> list[Block]:
    blocks: list[Block] = []
    i = start
    while i <= stop:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        title = _is_title(lines, i) if depth == 0 else None
        if title is not None:
            end, style = title
            level = styles.setdefault(style, len(styles) + 1)
            text = lines[i + 1] if style[1] else line
            blocks.append(Block("heading", i, end, level=level, title=clean_heading(text)))
            i = end + 1
            continue
        block = _block_at(lines, i, stop, styles, depth)
        blocks.append(block)
        i = block.end + 1
    return blocks


def _block_at(lines: list[str], i: int, stop: int,
              styles: dict[tuple[str, bool], int], depth: int) -> Block:
    line = lines[i]
    indent = indent_of(line)
    if match := _DIRECTIVE.match(line):
        return _directive(lines, i, min(body_end(lines, i, indent), stop), match.group(2),
                          styles, depth)
    if _EXPLICIT.match(line):  # a label (.. _name:), comment or footnote
        return Block("marker", i, min(body_end(lines, i, indent), stop))
    if _GRID.match(line) or _SIMPLE_TABLE.match(line):
        end = i
        while end + 1 <= stop and lines[end + 1].strip():
            end += 1
        if _SIMPLE_TABLE.match(line) and end + 2 <= stop and _SIMPLE_TABLE.match(lines[end + 2]):
            end = _paragraph_end(lines, end + 2)  # a simple table's body after a blank row
        return Block("table", i, end, cuts=tuple(range(i + 3, end + 1)))
    if _BULLET.match(line):
        return _list(lines, i, stop, indent)
    end = min(_paragraph_end(lines, i), stop)
    if lines[end].rstrip().endswith("::"):
        literal_end = min(body_end(lines, end, indent_of(lines[i])), stop)
        if literal_end > end:
            # The paragraph introduces a literal block: prose, then its code, as two blocks
            # the chunker keeps together when they fit.
            return _intro_and_literal(i, end, literal_end)
    return Block("text", i, end)


def _intro_and_literal(start: int, intro_end: int, end: int) -> Block:
    return Block("container", start, end, children=(
        Block("text", start, intro_end),
        Block("code", intro_end + 1, end, cuts=tuple(range(intro_end + 2, end + 1))),
    ))


def _list(lines: list[str], i: int, stop: int, indent: int) -> Block:
    items = [i]
    end = _item_end(lines, i, stop, indent)
    while end + 1 <= stop:
        j = end + 1
        while j <= stop and not lines[j].strip():
            j += 1
        if j > stop or indent_of(lines[j]) != indent or not _BULLET.match(lines[j]):
            break
        items.append(j)
        end = _item_end(lines, j, stop, indent)
    return Block("list", i, end, cuts=tuple(items[1:]))


def _item_end(lines: list[str], i: int, stop: int, indent: int) -> int:
    end = i
    j = i + 1
    while j <= stop:
        if lines[j].strip():
            if indent_of(lines[j]) <= indent:
                break
            end = j
        j += 1
    return end


def _directive(lines: list[str], i: int, end: int, name: str,
               styles: dict[tuple[str, bool], int], depth: int) -> Block:
    header = i
    while header + 1 <= end and _OPTION.match(lines[header + 1]):
        header += 1  # ":caption:", ":members:": part of the directive line
    if _CODE_DIRECTIVES.match(name) or name in ("list-table", "csv-table", "table"):
        kind = "table" if "table" in name else "code"
        first = header + 1
        while first <= end and not lines[first].strip():
            first += 1
        return Block(kind, i, end, cuts=tuple(range(first + 1, end + 1)))
    if end == header:
        return Block("directive", i, end)
    if depth >= MAX_NESTING:
        return Block("text", i, end)
    children = _blocks(lines, header + 1, end, styles, depth + 1)
    return Block("container", i, end, children=(Block("marker", i, header), *children))


def read(text: str, stem: str, ctx: FileContext, result: ReadResult) -> None:
    """The document of a reST file (normalised ``text``) into ``result``, its comments
    blanked unless ``ctx.keep_hidden``."""
    if not ctx.keep_hidden:
        text, dropped = blank_rst_comments(text)
        result.hidden_dropped += dropped
        if not text.strip():
            result.errors.append(ctx.fail("empty document: only comments"))
            return
    result.documents.append(ctx.doc(text, title=rst_title(text) or stem, parser="rst"))


def rst_title(text: str) -> str | None:
    """The document title: the first section title, if any."""
    lines = text.split("\n")
    for i in range(len(lines)):
        found = _is_title(lines, i)
        if found is not None:
            title = clean_heading(lines[i + 1] if found[1][1] else lines[i])
            if title:
                return title
    return None


# -- what is analysed ------------------------------------------------------------------------

_ROLE = re.compile(r":[\w:.+-]+:`([^`]*)`")
_LINK = re.compile(r"`([^`<]*?)\s*(?:<[^>]*>)?`__?")
_LITERAL = re.compile(r"``([^`]+)``")
_SUBSTITUTION = re.compile(r"\|([\w -]+)\|")
_VERSIONS = {
    "versionadded": "New in version", "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version", "versionremoved": "Removed in version",
}


def _shown(inner: str) -> str:
    """What a role or a link shows: its label, else its target, without ``~`` or ``!``."""
    text = inner.strip()
    if text.endswith(">") and "<" in text:
        label, _, target = text[:-1].rpartition("<")
        text = label.strip() or target.strip()
    return text.lstrip("~!")


def _role_text(match: re.Match[str]) -> str:
    return _shown(match.group(1))


# A role, or a link, whose text a hard wrap splits over two or three lines.
_WRAPPED = r"([^`\n]*(?:\n[^`\n]*){1,2})"
_WRAPPED_ROLE = re.compile(rf":[\w:.+-]+:`{_WRAPPED}`|(?<![\w`])`{_WRAPPED}`__?")


def _wrapped_text(match: re.Match[str]) -> str:
    inner = match.group(1) if match.group(1) is not None else match.group(2)
    shown = _shown(inner)
    # Line for line: the lines the target took stay, empty.
    return shown + "\n" * (inner.count("\n") - shown.count("\n"))


def _directive_text(match: re.Match[str]) -> str:
    name, argument = match.group(2), match.group(3).strip()
    if name in _VERSIONS:
        return f"{match.group(1)}{_VERSIONS[name]} {argument}"
    if _AUTODOC.match(name) or name in ("note", "warning", "tip", "important", "caution",
                                        "danger", "attention", "hint", "error", "seealso",
                                        "admonition", "deprecated"):
        # autodoc: the name it documents ("click.Command"); admonitions: their kind and title.
        return f"{match.group(1)}{'' if _AUTODOC.match(name) else name} {argument}"
    return match.group(1) + argument  # code-block python, toctree, include: the argument


_SUBSTITUTION_DEF = re.compile(r"^\.\.[ \t]+\|([\w -]+)\|[ \t]+replace::[ \t]*(.*)$",
                               re.MULTILINE)


def substitutions(text: str) -> dict[str, str]:
    """The text of each ``.. |name| replace:: text`` definition of a document (first line)."""
    if "replace::" not in text:
        return {}
    return {m.group(1): m.group(2).strip() for m in _SUBSTITUTION_DEF.finditer(text)}


def index_text(text: str, replacements: dict[str, str] | None = None) -> str:
    """reST markup reduced to what a reader sees, line for line (see the module docstring);
    a substitution reference reads as its definition's text when ``replacements`` has it."""
    table = replacements or {}

    def replaced(match: re.Match[str]) -> str:
        return table.get(match.group(1), match.group(1))

    out: list[str] = []
    header = False  # on a directive's line or its options (":members:", ":caption:")
    for line in text.split("\n"):
        option = header and _OPTION.match(line) is not None
        if match := _DIRECTIVE.match(line):
            line = _directive_text(match)
        elif option or _EXPLICIT.match(line) or _ADORNMENT.match(line):
            line = ""  # the definitions themselves among them
        # A field list elsewhere (":Default port: 8088", ":param name: ...") is text a page
        # shows, and is searched as such.
        header = match is not None or option
        if table and "|" in line:  # before roles: a definition's text has markup of its own
            line = _SUBSTITUTION.sub(replaced, line)
        line = _ROLE.sub(_role_text, line)
        line = _LITERAL.sub(r"\1", line)
        line = _LINK.sub(r"\1", line)
        out.append(_SUBSTITUTION.sub(r"\1", line))
    reduced = "\n".join(out)
    if ":`" in reduced or "`_" in reduced:
        # A role or link that a hard wrap splits over two or three lines: the line-by-line
        # pass above saw neither half whole.
        reduced = _WRAPPED_ROLE.sub(_wrapped_text, reduced)
    return reduced
