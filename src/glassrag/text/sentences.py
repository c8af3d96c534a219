"""The one sentence splitter: chunkers, the parsers' line wrapper and the answerer all use it.

A sentence ends at ``. ! ?`` followed by whitespace (so ``3.5`` and ``example.com`` stay
whole), at the CJK terminators ``。！？`` (no space follows them), and at a structural line
break. A single newline inside prose is a hard wrap, not an end: a sentence written on lines
21-22 is one sentence. A line break does end a sentence when the next line is blank or
starts a block of its own (a list item, a table row, a heading, a code fence, a directive or
container marker, a heading underline), or when the line itself is such a block. Inside a
fenced code block every line stands alone, so a quote never glues two code lines or a code
line to prose.

Periods after common abbreviations (``e.g.``, ``Dr.``), after a list number at the start of
a line (``1. Install``) and inside inline code or a URL do not end a sentence.
"""

from __future__ import annotations

import re
from bisect import bisect_right

__all__ = ["FENCE_LINE", "closes_fence", "code_spans", "indent_of", "is_markup",
           "is_prose_directive", "opens_literal", "sentences_code_rows", "split_sentences",
           "sentence_texts"]

_CLOSERS = "\"'\u201d\u2019)]\u300d\u300f\uff09"
# A run of terminators and the quotes/brackets that close the sentence with them: Latin ones
# only before whitespace, CJK ones anywhere. One pattern, so the text is scanned once.
# (The leading lookahead lets the regex engine skip to a terminator quickly: it measured about
# twice as fast as the bare alternation.)
# Emphasis that closes around the terminator ("**Why?**", "_是多少？_") belongs to its sentence,
# so a bold FAQ question is one sentence and not a question plus a stray "**".
_EMPHASIS = r"(?:\*{1,3}|_{1,3})?"
_LATIN = rf"[.!?]+[\"'\u201d\u2019)\]]*{_EMPHASIS}(?=\s|\Z)"
_CJK_CLOSERS = rf"[\u300d\u300f\u201d\u2019\uff09)\]]*{_EMPHASIS}"
_END = re.compile(rf"(?=[.!?\u3002\uff01\uff1f])(?:{_LATIN}|[\u3002\uff01\uff1f]+{_CJK_CLOSERS})")
_END_SEMICOLON = re.compile(
    rf"(?=[.!?\u3002\uff01\uff1f\uff1b])(?:{_LATIN}|[\u3002\uff01\uff1f\uff1b]+{_CJK_CLOSERS})"
)
# Regions in which no terminator counts: `inline code` (any backtick run, closed by the same
# run, never across a blank line or a fence line) and URLs (minus the punctuation that ends
# the sentence around them).
_PROTECTED = re.compile(r"(`{1,16})(?!`)(?:(?!\1)(?!\n[ \t]*\n)(?!\n[ \t]*```).)+?\1|https?://[^\s<>()\[\]`]+[^\s<>()\[\]`.,;:!?'\"]",
                        re.DOTALL)
# Words whose period is not a sentence end. "etc." and "no." end sentences too often to list.
_ABBREVIATIONS = frozenset({
    "e.g", "i.e", "cf", "vs", "mr", "mrs", "ms", "dr", "prof", "approx", "fig", "figs", "eq",
    "resp", "incl", "esp", "jr", "sr",
})
_DOTTED = re.compile(r"(?:[a-z]\.)+[a-z]")  # u.s, e.g, a.m: the last period is not an end
# A list number, or a numbered heading's number ("### 6. Publish"): its period ends nothing.
_LIST_NUMBER = re.compile(r"[ \t]*(?:#{1,6}[ \t]+)?(?:\d{1,3}|[a-zA-Z]|#)\Z")
# A line that is a block of its own: nothing before it continues into it, nor it into
# whatever follows.
# reST structures, as patterns the answerer's table and directive readers share
# (answer/structure.py, answer/blocks.py). A field (":param retries: ...", ":returns:"): a
# role at the start of a line (":func:`echo` writes ...") is followed by a backtick, not a
# space.
FIELD = r":[^:\s`][^:`\n]*:(?:[ \t]|$)"
# An item of a reST option list ("-a, --all   Show everything."): options, then two spaces
# or more before the description.
OPTION_ITEM = (r"--?[A-Za-z0-9][^\s,]*(?:,[ \t]--?[A-Za-z0-9][^\s,]*)*(?:[ =]<?[\w.-]+>?)?"
               r"[ \t]{2,}\S")
# A simple table's border: columns of "=" (one column is a heading's underline).
SIMPLE_TABLE_BORDER = r"=+(?:[ \t]+=+)+[ \t]*$"
# A list or CSV table's directive line, and the line that starts a list table's row
# ("* - cell"): a row's cells ("  - cell") are one unit, not items of a list; a CSV table's
# row is a line.
LIST_TABLE = r"[ \t]*\.\.[ \t]+(list|csv)-table::"
LIST_TABLE_ROW = r"[ \t]*\*[ \t]+-(?:[ \t]|$)"
# A title written as HTML alone on a line: an HTML heading ('<h1 align="center">Kettle</h1>')
# or a <details> box's "<summary><b>Title</b></summary>". The Markdown reader makes it a
# heading (parsers/markdown.py), the answerer never quotes it (answer/blocks.py). Group 1 is
# the tag's name, group 2 its text between the tags.
TITLE_TAG_LINE = (r"[ \t]*<(summary|h[1-6])\b[^>\n]*>(?:<[^>\n]+>)*([^\n]*?)(?:<[^>\n]+>)*"
                  r"</\1>[ \t]*")
# The MyST directives whose body is prose: admonitions, version notes and layout boxes of
# Sphinx, docutils and sphinx-design. CommonMark reads any fenced block as code, so a
# directive of another name (``{code-block}``, ``{toctree}``, a site's own) stays code.
PROSE_DIRECTIVE = (
    r"(?:admonition|attention|caution|danger|error|hint|important|note|seealso|tip|todo|warning"
    r"|versionadded|versionchanged|versionremoved|deprecated"
    r"|tab|tab-item|tab-set|dropdown|card|grid-item-card|sidebar|topic|margin|div|container"
    r"|only|rubric|epigraph|highlights|pull-quote|glossary)"
)
# A MyST directive's opening fence ("```{note}", ":::{warning}"): group 1 is the fence,
# group 2 the directive's name.
DIRECTIVE_FENCE = r"(`{3,}|~{3,}|:{3,})[ \t]*\{([\w:.-]+)\}"
# A PyMdown block marker: slashes before a block's name ("/// note | Title") or alone ("///"),
# which closes one.
PYMDOWN_MARKER = r"/{3,}(?=[ \t]*(?:[\w-]|$))"
# Lines of a documentation site's markup that a reader never sees: a shortcode or include,
# an attribute list, an alert's marker, an MDX import, a content tab's label.
_MARKUP = (
    r"\{\{[<%].*[>%]\}\}[ \t]*$"                    # Hugo shortcode ({{< note >}})
    r"|\{%.*%\}[ \t]*$"                             # Liquid or Jinja tag ({% include x %})
    r"|\{:.*\}[ \t]*$"                              # kramdown attribute list ({: .note })
    r"|>[ \t]*\[![A-Za-z]+\][ \t]*$"                 # GitHub alert marker (> [!NOTE])
    r"|(?:import|export)[ \t][^\n]*[\"'];?[ \t]*$"  # MDX import or export
    r"|export[ \t]+(?:(?:const|let|var)[ \t]+[\w$]+[ \t]*="  # MDX export of a declaration
    r"|(?:default[ \t]+)?(?:async[ \t]+)?function[ \t]+[\w$]+[ \t]*\().*$"
    r"|={3}[!+]?[ \t]+\"[^\"\n]*\"[ \t]*$"          # MkDocs content tab (=== "Python")
    r"|\.\.[ \t]+_[^:\n]*:(?:[ \t]+\S+)?[ \t]*$"      # reST link target (.. _install:)
)
_MARKUP_LINE = re.compile(rf"[ \t]*(?:{_MARKUP})")
# A line that is a block of its own: nothing before it continues into it, nor it into
# whatever follows.
_BLOCK_LINE = re.compile(
    r"[ \t]*(?:"
    r"#{1,6}(?:[ \t]|$)"                     # Markdown ATX heading
    r"|(?:`{3,}|~{3,})"                      # code fence
    r"|\|"                                   # table row
    r"|[+][-=+]+[+][ \t]*$"                  # reST grid table border
    r"|:{3,}"                                # container marker (::: tip)
    rf"|{PYMDOWN_MARKER}"                     # PyMdown block marker (/// note | Title)
    r"|(?:!!!|\?\?\?\+?)[ \t]"               # MkDocs admonition
    r"|\.\.[ \t]"                            # reST directive, target or comment
    r"|</?[A-Za-z][^>]*>[ \t]*$"             # a line that is only an HTML or JSX tag
    rf"|{_MARKUP}"
    rf"|{SIMPLE_TABLE_BORDER}"               # reST simple table border (===  ====)
    r"|([=\-~^*#\"'`:.+_<>])\1{2,}[ \t]*$"   # heading underline, thematic break, table rule
    r")"
)
# Lines that start a block, so the line before them ends: the above plus list items, reST
# fields and option list items.
_STARTS_BLOCK = re.compile(
    rf"[ \t]*(?:[-*+\u2022][ \t]|\d{{1,9}}[.)][ \t]|[a-zA-Z#][.)][ \t]|{FIELD}|{OPTION_ITEM})")
# A code fence at any depth (a list item's code is code too): group 1 is the fence.
FENCE_LINE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_PIPE_ROW = re.compile(r"[ \t]*\|[^\n]*\|")
_GRID_ROW_BORDER = re.compile(r"[ \t]*[+][-=+]+[+]")
_TABLE_BORDER = re.compile(rf"[ \t]*{SIMPLE_TABLE_BORDER}")
_LIST_TABLE = re.compile(LIST_TABLE)
_ROW_START = re.compile(LIST_TABLE_ROW)
_FIELD = re.compile(rf"[ \t]*{FIELD}")
_DIRECTIVE_FENCE = re.compile(rf"[ \t]*{DIRECTIVE_FENCE}")
_PROSE_DIRECTIVE = re.compile(PROSE_DIRECTIVE)


# Directives whose body is code or program output: its lines are never joined as prose.
_LITERAL_DIRECTIVE = re.compile(
    r"[ \t]*\.\.[ \t]+[\w:.-]*(?:code|literal|example|run|doctest|highlight|math)[\w-]*::"
)


def _protected(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _PROTECTED.finditer(text)]


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` in order with overlapping ones joined: inline code inside a table row is
    part of the row's span, so a lookup by start finds the row."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _inside(spans: list[tuple[int, int]], starts: list[int], pos: int) -> bool:
    index = bisect_right(starts, pos) - 1
    return index >= 0 and pos < spans[index][1]


def indent_of(line: str) -> int:
    """How many spaces and tabs ``line`` starts with."""
    return len(line) - len(line.lstrip(" \t"))


def is_prose_directive(name: str) -> bool:
    """Whether a MyST directive's body is prose to read (an admonition, a tab), not code."""
    return _PROSE_DIRECTIVE.fullmatch(name) is not None


def _prose_directive(line: str) -> str | None:
    """The fence of a MyST directive whose body is prose (```` ```{note} ````), or None: its
    lines are read as prose, not as code."""
    match = _DIRECTIVE_FENCE.match(line)
    if match is None or not is_prose_directive(match.group(2)):
        return None
    return match.group(1)


def opens_literal(line: str) -> bool:
    """A reST line after which a more indented block is code: ``Example::`` or a code
    directive (``.. code-block:: python``)."""
    stripped = line.rstrip()
    if _LITERAL_DIRECTIVE.match(line):
        return True
    return stripped.endswith("::") and not stripped.lstrip().startswith("..")


def closes_fence(fence: str, opening: str) -> bool:
    """Whether a fence closes the block ``opening`` opened (CommonMark: the same character,
    at least as many)."""
    return fence[0] == opening[0] and len(fence) >= len(opening)


def _is_abbreviation(text: str, line_start: int, dot: int) -> bool:
    """Whether the period at ``dot`` closes an abbreviation or a list number, not a sentence."""
    if dot - line_start <= 8 and _LIST_NUMBER.fullmatch(text, line_start, dot):
        return True
    # Only the word before the period matters; look no further back than a long one.
    word = text[max(line_start, dot - 16) : dot]
    word = word[word.rfind(" ") + 1 :].lstrip("([{\"'*_\t").lower()
    if not word:
        return False
    return word in _ABBREVIATIONS or _DOTTED.fullmatch(word) is not None


def _hard_breaks(text: str, every_line: bool,
                 ) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Offsets of the newlines that end a sentence whatever precedes them, the spans of
    code lines and the spans of table rows (inside both, no terminator counts)."""
    breaks: list[int] = []
    code: list[tuple[int, int]] = []
    rows: list[tuple[int, int]] = []
    lines = text.split("\n")
    fence: str | None = None
    literal: int | None = None  # indentation of the line that opened a reST literal block
    table = False  # inside a reST simple table: each row is a unit of its own
    list_table: int | None = None  # indentation of a list or CSV table's directive line
    csv = False
    directives: list[str] = []  # the fences of the MyST prose directives open
    options = False  # on an option line right under a directive's opening line
    pos = 0
    for index, line in enumerate(lines[:-1]):
        end = pos + len(line)
        following = lines[index + 1]
        options = options and _FIELD.match(line) is not None
        if literal is not None and line.strip() and indent_of(line) <= literal:
            literal = None
        if list_table is not None and line.strip() and indent_of(line) <= list_table:
            list_table = None
        fence_match = FENCE_LINE.match(line)
        if fence is None and literal is None and _TABLE_BORDER.match(line):
            # A border opens a table after a blank line and closes it before one.
            table = not (table and not following.strip())
            breaks.append(end)
        elif table and line.strip():
            breaks.append(end)
            rows.append((pos, end))
        elif list_table is not None and line.strip() and not _FIELD.match(line):
            rows.append((pos, end))  # a line of a row: it ends with the row
            if (csv or not following.strip() or indent_of(following) <= list_table
                    or _ROW_START.match(following)):
                breaks.append(end)
        elif literal is not None and line.strip():
            breaks.append(end)  # a line of a literal block is its own unit
            code.append((pos, end))
        elif fence is not None:  # inside a code block: every line is its own unit
            breaks.append(end)
            code.append((pos, end))
            if fence_match and closes_fence(fence_match.group(1), fence):
                fence = None
        elif options:
            breaks.append(end)  # a directive's option (":class: tip") is a unit of its own
        elif fence_match and directives and not line[fence_match.end():].strip() \
                and closes_fence(fence_match.group(1), directives[-1]):
            directives.pop()
            breaks.append(end)
        elif fence_match and (opened := _prose_directive(line)) is not None:
            directives.append(opened)  # a MyST admonition: prose between two markers
            breaks.append(end)
        elif fence_match:
            fence = fence_match.group(1)
            breaks.append(end)
        # A Markdown table row: its cells are one record. A line above a grid border is a
        # reST grid table's row, split as before.
        elif _PIPE_ROW.match(line) and not _GRID_ROW_BORDER.match(following):
            breaks.append(end)
            rows.append((pos, end))
        elif (
            every_line
            or not line.strip()
            or not following.strip()
            or _BLOCK_LINE.match(line)
            or _BLOCK_LINE.match(following)
            or _STARTS_BLOCK.match(following)
        ):
            breaks.append(end)
        # (Every directive fence holds "{": most lines are passed over without the regex.)
        options = options or (fence is None and "{" in line
                              and _DIRECTIVE_FENCE.match(line) is not None)
        if fence is None and literal is None and opens_literal(line):
            literal = indent_of(line)
        table_match = _LIST_TABLE.match(line) if fence is None and literal is None else None
        if table_match is not None:
            list_table, csv = indent_of(line), table_match.group(1) == "csv"
        pos = end + 1
    if (fence is not None or (literal is not None and indent_of(lines[-1]) > literal)) and lines:
        code.append((pos, len(text)))  # the last line is still inside the code block
    elif (table and not _TABLE_BORDER.match(lines[-1])) or (
            fence is None and literal is None and _PIPE_ROW.match(lines[-1])) or (
            list_table is not None and indent_of(lines[-1]) > list_table):
        rows.append((pos, len(text)))
    return breaks, code, rows


def split_sentences(
    text: str, *, every_line: bool = False, semicolons: bool = False
) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``, trimmed of whitespace, in order.

    ``every_line`` makes each newline a sentence end (the punctuation chunker's units);
    ``semicolons`` adds the full-width ``；`` as a terminator. Every non-whitespace character
    of ``text`` is in exactly one span.

    >>> split_sentences("Refunds take 3.5 days. Ask us!\\n退票。改签")
    [(0, 22), (23, 30), (31, 34), (34, 36)]
    """
    one = _one_sentence(text, semicolons)
    if one is not None:
        return one
    return _split(text, every_line, semicolons)


def _one_sentence(text: str, semicolons: bool) -> list[tuple[int, int]] | None:
    """What :func:`_split` gives a one-line text holding no sentence terminator (a short
    record, a title-like paragraph): its one sentence, the text trimmed, found without the
    regex scan. None when the text needs the general splitter."""
    # Every sentence end found without a newline starts at one of these.
    if ("\n" in text or "." in text or "!" in text or "?" in text
            or "\u3002" in text or "\uff01" in text or "\uff1f" in text
            or (semicolons and "\uff1b" in text)):
        return None
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    return [(start, end)] if start < end else []


def _split(text: str, every_line: bool, semicolons: bool,
           hard: tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]] | None = None,
           ) -> list[tuple[int, int]]:
    """:func:`split_sentences`, by the general scan (``hard``: :func:`_hard_breaks` of the
    text, when the caller has it)."""
    if hard is None:
        hard = _hard_breaks(text, every_line) if "\n" in text else ([], [], [])
    breaks, code, rows = hard
    ends: set[int] = set(breaks)
    protected = _protected(text) if ("`" in text or "://" in text) else []
    if code or rows:
        protected = _merged(protected + code + rows)
    starts = [start for start, _ in protected]
    for match in (_END_SEMICOLON if semicolons else _END).finditer(text):
        dot = match.start()
        if protected and _inside(protected, starts, dot):
            continue
        if not dot or text[dot - 1] in " \t\n":  # a word before it is the common case
            line_start = text.rfind("\n", 0, dot) + 1
            if not text[line_start:dot].strip():
                continue  # punctuation opening a line (".. note::", "... and so on") ends nothing
        if text[dot] == "." and match.group().rstrip(_CLOSERS + "*_") == "." and _is_abbreviation(
            text, text.rfind("\n", 0, dot) + 1, dot
        ):
            continue
        ends.add(match.end())
    spans: list[tuple[int, int]] = []
    start = 0
    for end in sorted(ends):
        _add(text, start, end, spans)
        start = end
    _add(text, start, len(text), spans)
    return spans


def code_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the lines inside fenced code blocks and reST literal blocks (the
    lines :func:`split_sentences` keeps one to a sentence), in order."""
    return _hard_breaks(text, False)[1] if "\n" in text else []


def sentences_code_rows(text: str, *, semicolons: bool = False,
                        ) -> tuple[list[tuple[int, int]], list[tuple[int, int]],
                                   list[tuple[int, int]]]:
    """:func:`split_sentences`, :func:`code_spans` and the table rows (Markdown pipe rows,
    reST simple, list and CSV table rows) of ``text`` together, its lines read once (the
    answerer reads all three of every chunk it quotes from)."""
    one = _one_sentence(text, semicolons)
    if one is not None:
        return one, [], []  # one line: no code block, no table
    hard = _hard_breaks(text, False) if "\n" in text else ([], [], [])
    return _split(text, False, semicolons, hard), hard[1], hard[2]


def is_markup(sentence: str) -> bool:
    """Whether ``sentence`` is a line of a documentation site's markup (a shortcode, an
    include, an attribute list, an alert marker, an MDX import, a content tab's label): a
    block of its own that says nothing to quote."""
    return _MARKUP_LINE.fullmatch(sentence) is not None


def sentence_texts(text: str) -> list[str]:
    """The sentences of ``text`` as strings (see :func:`split_sentences`)."""
    return [text[start:end] for start, end in split_sentences(text)]


def _add(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        spans.append((start, end))
