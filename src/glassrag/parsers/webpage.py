"""HTML via selectolax (lexbor): the main content as text, headings as ``#`` lines.

Scripts, styles, navigation, footers and forms are dropped (also as ARIA landmarks: a
``role="navigation"`` sidebar), and so are headings' permalink markers ("¶"); ``<main>`` (else
``role="main"``, else ``<article>``, else ``<body>``) is the content. Lexbor's tree building costs
time quadratic in nesting depth, in the number of distinct attributes of one element and in the
number of ``<option>`` s of one ``<select>``, so a linear pre-scan refuses input nested deeper than
browsers render (512) or with more than ``Limits.max_html_attributes`` attributes on one element,
and ``<select>`` blocks are cut out before parsing. The tree is walked with an explicit stack: no
recursion, whatever the depth.

Content a reader of the page never sees (the ``hidden`` attribute, ``aria-hidden="true"``,
an inline ``display: none`` or ``visibility: hidden``) is dropped unless
``ParseOptions.keep_hidden``, and counted in ``Parsed.hidden_dropped``: such text is where
prompt injections hide.

With ``ParseOptions.html_extractor == "trafilatura"`` web pages go through trafilatura's
main-content extraction instead (headings kept as ``#`` lines); the same pre-scan runs first.
HTML-only e-mail bodies always use the builtin path.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from glassrag.errors import InputFileError, needs_extra
from glassrag.parsers.base import Limits, Parsed, ParseOptions, TextBuilder
from glassrag.parsers.encoding import decode_bytes

LABEL = "HTML"
_DROP = frozenset({
    "script", "style", "noscript", "template", "nav", "footer", "aside", "form", "select",
    "button", "iframe", "svg", "math", "canvas", "object", "embed", "head",
})
_BLOCK = frozenset({
    "address", "article", "blockquote", "body", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "header", "hr", "li", "main", "ol", "p",
    "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul", "br",
})
# ARIA landmark roles of the parts dropped above (a documentation generator's
# ``<div role="navigation">`` sidebar is a ``<nav>``).
_DROP_ROLES = frozenset({"navigation", "contentinfo", "complementary", "search"})
_PARAGRAPH = frozenset({"p", "blockquote", "table", "ul", "ol", "dl", "pre", "figure"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# Elements that do not nest (void) or whose end tag may be left out: not counted as depth.
_FLAT = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr", "param", "keygen", "basefont", "bgsound", "frame", "p", "li", "dt", "dd",
    "option", "optgroup", "tr", "td", "th", "thead", "tbody", "tfoot", "colgroup", "rb", "rt",
    "rtc", "rp", "html", "head", "body", "caption",
})
# The attributes of a start tag, up to its ">". Quotes delimit only values (after "="); a
# stray quote is part of a name, as in the HTML tokenizer. Written as an unrolled loop (a
# run of plain characters, then any number of "=value or stray quote, plain run"): linear,
# and cheaper per tag than an alternation under a star.
_ATTRS = r"""([^>"'=]*(?:(?:=\s*"[^"]*"|=\s*'[^']*'|=|["'])[^>"'=]*)*)"""
_TAG = re.compile(
    r"<!--.*?(?:-->|\Z)"
    rf"|<(script|style)\b{_ATTRS}>?.*?(?:</\1\s*>|\Z)"
    rf"|<(/?)([a-zA-Z][\w:-]*){_ATTRS}",
    re.IGNORECASE | re.DOTALL,
)
_HIDDEN_SELECTOR = "[hidden], [aria-hidden], [style]"
_VALUE = re.compile(r"""=\s*(?:"[^"]*"|'[^']*'|[^\s>]*)""")
_NAME = re.compile(r"[^\s/>]+")
_SELECT = re.compile(r"<select\b.*?(?:</select\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_SNIFF = re.compile(r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|\?xml|[a-z])",
                    re.IGNORECASE | re.DOTALL)


def sniff(raw: bytes, limits: Limits) -> None:
    head = raw[:4096].decode("utf-8", "ignore").lstrip("\ufeff")
    if not _SNIFF.match(head):
        raise InputFileError("not HTML: the file does not begin with <!doctype html> or a tag")


def _check_attributes(html: str, match: re.Match[str], group: int, cap: int) -> None:
    count = len(_NAME.findall(_VALUE.sub(" ", match.group(group))))
    if count > cap:
        line = html.count("\n", 0, match.start()) + 1
        tag = (match.group(1) or match.group(4)).lower()
        raise InputFileError(
            f"HTML element <{tag}> at line {line} has {count:,} attributes, over the "
            f"{cap:,}-attribute cap"
        )


def check_markup(html: str, limits: Limits) -> None:
    """Refuse HTML that would make the tree builder super-linear, in one linear scan.

    Nesting deeper than ``limits.max_html_depth`` elements, or a start tag with more than
    ``limits.max_html_attributes`` attributes, is an :class:`InputFileError`.
    """
    depth_cap, attr_cap = limits.max_html_depth, limits.max_html_attributes
    depth = 0
    for match in _TAG.finditer(html):
        name = match.group(4)
        attrs = 5 if name is not None else 2  # a start or end tag, else script/style
        # Each attribute takes at least two characters: only long tags need counting.
        if match.end(attrs) - match.start(attrs) > 2 * attr_cap:
            _check_attributes(html, match, attrs, attr_cap)
        if name is None or name.lower() in _FLAT:
            continue
        if match.group(3):
            depth = max(0, depth - 1)
            continue
        depth += 1
        if depth > depth_cap:
            raise InputFileError(
                f"HTML is nested deeper than {depth_cap} elements; browsers stop there")


def _is_hidden(attributes: dict[str, str | None]) -> bool:
    """Whether an element's own attributes keep it from being shown (or read aloud)."""
    if "hidden" in attributes or (attributes.get("aria-hidden") or "").strip().lower() == "true":
        return True
    for declaration in (attributes.get("style") or "").lower().split(";"):
        name, _, value = declaration.partition(":")
        value = value.replace("!important", "").strip()
        if (name.strip(), value) in (("display", "none"), ("visibility", "hidden"),
                                     ("visibility", "collapse")):
            return True
    return False


def drop_hidden(tree: Any) -> int:
    """Remove hidden elements from a lexbor tree; return how many of them held text.

    Innermost first (the reverse of document order), so a hidden element inside another is
    counted once and no handle to an already removed node is ever used.
    """
    dropped = 0
    for node in reversed(tree.css(_HIDDEN_SELECTOR)):
        if _is_hidden(node.attributes):
            dropped += bool(node.text(deep=True).strip())
            node.decompose()
    return dropped


def _is_chrome(node: Any, tag: str) -> bool:
    """Page furniture that is not text: a navigation landmark given by its role, or a
    permalink marker, a link to an anchor of the page showing no word ("¶" after a Sphinx or
    MkDocs heading, "#"), which would otherwise end every heading."""
    attributes = node.attributes
    if not attributes:
        return False
    if tag == "a":
        return ((attributes.get("href") or "").startswith("#")
                and not any(ch.isalnum() for ch in node.text(deep=True)))
    role = attributes.get("role")
    return role is not None and role.strip().lower() in _DROP_ROLES


def _lexbor() -> Any:
    with needs_extra("parsers", "selectolax"):
        from selectolax.lexbor import LexborHTMLParser
    return LexborHTMLParser


class _Walker:
    """Turns a lexbor tree into lines: one per block, ``#`` lines for headings."""

    def __init__(self, out: TextBuilder) -> None:
        self.out = out
        self.parts: list[str] = []
        self.pre = 0
        self.cells = 0
        self.first_heading: str | None = None

    def flush(self) -> None:
        text = "".join(self.parts)
        self.parts.clear()
        if not text.strip():
            return
        if self.pre:
            self.out.add(text, keep_spaces=True)
        else:  # source line breaks in running text are just spaces
            self.out.add(" ".join(text.split()))

    def enter(self, tag: str) -> None:
        if tag in ("td", "th"):
            if self.cells:
                self.parts.append(" | ")
            self.cells += 1
        elif tag in _BLOCK or tag in _HEADINGS or tag == "pre":
            self.flush()
            self.cells = 0
            if tag in _PARAGRAPH or tag in _HEADINGS:
                self.out.blank()
            self.pre += tag == "pre"

    def leave(self, tag: str) -> None:
        level = _HEADINGS.get(tag)
        if level:
            text = " ".join("".join(self.parts).split())
            self.parts.clear()
            if text:
                self.first_heading = self.first_heading or text
                self.out.add(f"{'#' * level} {text}")
                self.out.blank()
        elif tag in _BLOCK or tag == "pre":
            self.flush()
            self.pre -= tag == "pre"
            if tag in _PARAGRAPH:
                self.out.blank()

    def walk(self, root: Any) -> None:
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            tag = node.tag or ""
            if done:
                self.leave(tag)
                continue
            if node.is_text_node:
                self.parts.append(node.text_content or "")
                continue
            if not node.is_element_node or tag in _DROP or _is_chrome(node, tag):
                continue
            self.enter(tag)
            stack.append((node, True))
            child = node.last_child
            while child is not None:  # pushed last-first, so popped in document order
                stack.append((child, False))
                child = child.prev
        self.flush()


def parse(raw: bytes, stem: str, options: ParseOptions) -> Parsed:
    if options.html_extractor == "trafilatura":
        html, encoding = decode_bytes(raw)
        parsed = trafilatura_to_text(html, stem, options)
    else:
        parser = _lexbor()
        html, encoding = decode_bytes(raw)
        parsed = html_to_text(html, stem, options, parser)
    return dataclasses.replace(parsed, encoding=encoding)


def html_to_text(html: str, stem: str, options: ParseOptions, parser: Any = None) -> Parsed:
    """Main text of an HTML string (also used for HTML-only e-mail bodies)."""
    parser = parser or _lexbor()
    check_markup(html, options.limits)
    tree = parser(_SELECT.sub(" ", html))
    hidden = 0 if options.keep_hidden else drop_hidden(tree)
    root = (tree.css_first("main") or tree.css_first('[role="main"]')
            or tree.css_first("article") or tree.body or tree.root)
    out = TextBuilder(options.limits)
    walker = _Walker(out)
    if root is not None:
        walker.walk(root)
    text, positions = out.build()
    if not text.strip():
        raise InputFileError("no text in the HTML (after dropping scripts, styles, navigation)")
    title_node = tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    metadata: dict[str, Any] = {}
    html_node = tree.css_first("html")
    if html_node is not None and html_node.attributes.get("lang"):
        metadata["lang"] = html_node.attributes["lang"]
    for meta in tree.css("meta[name]"):
        name = (meta.attributes.get("name") or "").lower()
        if name in ("description", "author") and meta.attributes.get("content"):
            metadata[name] = meta.attributes["content"]
    return Parsed(text=text, title=title or walker.first_heading or stem,
                  metadata=metadata, positions=positions, hidden_dropped=hidden)


def trafilatura_to_text(html: str, stem: str, options: ParseOptions) -> Parsed:
    """Main text of a web page by trafilatura: headings as ``#`` lines, boilerplate dropped."""
    with needs_extra("parsers", "trafilatura"):
        import trafilatura
        from trafilatura.metadata import extract_metadata
    check_markup(html, options.limits)
    html = _SELECT.sub(" ", html)
    hidden = 0
    if not options.keep_hidden:
        tree = _lexbor()(html)
        hidden = drop_hidden(tree)
        html = (tree.html or "") if hidden else html
    # "txt" with formatting is trafilatura's markdown (``# heading``, ``- item``, tables as
    # ``| a | b |``); it exists in every version the extra allows, unlike "markdown".
    extracted = trafilatura.extract(
        html, output_format="txt", include_formatting=True, include_tables=True,
        include_comments=False, include_images=False, include_links=False,
    )
    out = TextBuilder(options.limits)
    if extracted:
        out.add(extracted)
    text, positions = out.build()
    if not text.strip():
        raise InputFileError("no text in the HTML (trafilatura found no main content)")
    meta = extract_metadata(html)
    metadata: dict[str, Any] = {}
    for name in ("author", "description"):
        value = getattr(meta, name, None)
        if isinstance(value, str) and value.strip():
            metadata[name] = value.strip()
    lang = re.search(r"<html\b[^>]*\blang\s*=\s*[\"']?([\w-]+)", html[:4096], re.IGNORECASE)
    if lang:
        metadata["lang"] = lang.group(1)
    title = getattr(meta, "title", None)
    if not isinstance(title, str) or not title.strip():
        title = next((line.lstrip("#").strip() for line in text.split("\n")
                      if line.startswith("#")), "") or stem
    return Parsed(text=text, title=" ".join(title.split()), metadata=metadata,
                  positions=positions, hidden_dropped=hidden)
