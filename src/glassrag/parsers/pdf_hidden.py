"""Invisible PDF text: found in the content stream and removed before text extraction.

Text a reader of the page never sees is where prompt injections hide: text drawn in render
mode 3 (invisible) or 7 (clip only), text painted white (or nearly: every component within 5%
of white) and text painted fully transparent (``/ca 0`` in an ExtGState). The page's content
operators are replayed with the part of the graphics state that decides this (``q``/``Q``,
``Tr``, fill and stroke colours, ``gs``), including form XObjects drawn with ``Do``; the
text-showing operators that paint nothing visible are dropped (their line moves kept), and
pypdf then extracts the text of what is left.

White text on a dark shape is dropped too: telling it from white text on a white page would
mean rendering the page. ``[ingest] keep_hidden = true`` keeps everything.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["drop_invisible_text"]

_SHOW = frozenset({b"Tj", b"TJ", b"'", b'"'})
_BLACK = {1: (0.0,), 3: (0.0, 0.0, 0.0), 4: (0.0, 0.0, 0.0, 1.0)}
_SPACES = {"/DeviceGray": 1, "/CalGray": 1, "/G": 1, "/DeviceRGB": 3, "/CalRGB": 3,
           "/RGB": 3, "/DeviceCMYK": 4, "/CMYK": 4}
_NEAR = 0.05
_MAX_FORM_DEPTH = 12


@dataclasses.dataclass
class _Paint:
    """The colour of one painting operation: components (gray, RGB or CMYK) and alpha."""

    components: tuple[float, ...] = (0.0,)
    alpha: float = 1.0

    def invisible(self) -> bool:
        c = self.components
        if self.alpha <= 0.0:
            return True
        if len(c) == 4:
            return max(c) <= _NEAR
        return len(c) in (1, 3) and min(c) >= 1.0 - _NEAR


@dataclasses.dataclass
class _State:
    fill: _Paint = dataclasses.field(default_factory=_Paint)
    stroke: _Paint = dataclasses.field(default_factory=_Paint)
    mode: int = 0

    def copy(self) -> _State:
        return _State(dataclasses.replace(self.fill), dataclasses.replace(self.stroke), self.mode)

    def hides_text(self) -> bool:
        """Whether text shown now paints nothing a reader could see."""
        mode = self.mode
        if mode in (3, 7):
            return True
        fills, strokes = mode in (0, 2, 4, 6), mode in (1, 2, 5, 6)
        return (not fills or self.fill.invisible()) and (not strokes or self.stroke.invisible())


def _numbers(operands: list[Any]) -> tuple[float, ...] | None:
    """Finite numbers, or None (a pattern name, or garbage: then a visible colour)."""
    try:
        values = tuple(float(x) for x in operands)
    except (TypeError, ValueError):
        return None
    return values if values and all(math.isfinite(v) for v in values) else None


def _resolved(value: Any, default: Any) -> Any:
    return value.get_object() if value is not None else default


def _set_colour(paint: _Paint, operands: list[Any]) -> None:
    values = _numbers(operands)
    paint.components = values if values is not None and len(values) in (1, 3, 4) else (0.5,)


def _set_space(paint: _Paint, operands: list[Any]) -> None:
    count = _SPACES.get(str(operands[0]) if operands else "")
    paint.components = _BLACK[count] if count else (0.5,)  # other spaces: "some colour"


def _has_text(operator: bytes, operands: list[Any]) -> bool:
    strings = operands[0] if operator == b"TJ" and operands else operands
    return any(isinstance(s, (str, bytes)) and s.strip() for s in strings or [])


def _alpha(resources: Any, operands: list[Any], state: _State) -> None:
    try:
        gstate = _resolved(_resolved(resources["/ExtGState"], {})[operands[0]], {})
    except (KeyError, TypeError, IndexError, AttributeError):
        return
    for key, paint in (("/ca", state.fill), ("/CA", state.stroke)):
        value = _numbers([gstate[key]]) if key in gstate else None
        if value:
            paint.alpha = value[0]


class _Filter:
    """Replays content streams, dropping invisible text; counts the runs of it.

    A run ends at visible text or at the end of a text object (``ET``).
    """

    def __init__(self, pdf: Any) -> None:
        self.pdf = pdf
        self.dropped = 0
        self.forms: set[int] = set()

    def operations(self, ops: list[Any], resources: Any, state: _State, depth: int) -> list[Any]:
        stack: list[_State] = []
        kept: list[Any] = []
        hit = False
        for operands, operator in ops:
            if operator in _SHOW and state.hides_text():
                hit = hit or _has_text(operator, operands)
                if operator == b'"' and len(operands) >= 3:
                    kept += [([operands[0]], b"Tw"), ([operands[1]], b"Tc")]
                if operator in (b"'", b'"'):
                    kept.append(([], b"T*"))
                continue
            kept.append((operands, operator))
            if operator in _SHOW and hit and _has_text(operator, operands):
                self.dropped += 1  # visible text ends a run of hidden text
                hit = False
            elif operator == b"q":
                stack.append(state.copy())
            elif operator == b"Q" and stack:
                state = stack.pop()
            elif operator == b"ET":
                self.dropped += hit
                hit = False
            elif operator == b"Tr":
                mode = _numbers(operands[:1])
                state.mode = int(mode[0]) if mode else 0
            elif operator in (b"g", b"rg", b"k", b"sc", b"scn"):
                _set_colour(state.fill, operands)
            elif operator in (b"G", b"RG", b"K", b"SC", b"SCN"):
                _set_colour(state.stroke, operands)
            elif operator == b"cs":
                _set_space(state.fill, operands)
            elif operator == b"CS":
                _set_space(state.stroke, operands)
            elif operator == b"gs" and operands:
                _alpha(resources, operands, state)
            elif operator == b"Do" and operands and depth < _MAX_FORM_DEPTH:
                self.form(resources, operands[0], state, depth)
        self.dropped += hit
        return kept

    def form(self, resources: Any, name: Any, state: _State, depth: int) -> None:
        """Filter a form XObject in place, with the state it is drawn in (first use)."""
        from pypdf.generic import ContentStream, NameObject

        try:
            xobjects = _resolved(resources["/XObject"], {})
            xform = _resolved(xobjects[name], None)
        except (KeyError, TypeError, AttributeError):
            return
        if not hasattr(xform, "get_data"):
            return
        if id(xform) in self.forms or xform.get("/Subtype") != "/Form":
            return
        self.forms.add(id(xform))
        inner = ContentStream(xform, self.pdf, "bytes")
        before = self.dropped
        ops = self.operations(inner.operations, _resolved(xform.get("/Resources"), resources),
                              state.copy(), depth + 1)
        if self.dropped > before:
            inner.operations = ops
            for key, value in xform.items():
                if key not in ("/Length", "/Filter", "/DecodeParms"):
                    inner[NameObject(key)] = value
            xobjects[NameObject(str(name))] = inner
            self.forms.add(id(inner))


def drop_invisible_text(page: Any, pdf: Any) -> int:
    """Remove invisible text from ``page`` (in memory); return how many runs it dropped."""
    from pypdf.generic import NameObject

    content = page.get_contents()
    if content is None:
        return 0
    resources = _resolved(page.get("/Resources"), {})
    found = _Filter(pdf)
    ops = found.operations(content.operations, resources, _State(), 0)
    if found.dropped:
        content.operations = ops
        page[NameObject("/Contents")] = content
    return found.dropped
