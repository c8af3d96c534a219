"""Where cited lines went in a newer version of their document, and whether they changed.

A citation names lines of the version it quoted. An edit elsewhere in the document moves
those lines without changing them; an edit inside them changes what the answer rests on.
:func:`follow_lines` tells the two apart by aligning the two versions line by line
(:class:`difflib.SequenceMatcher`) and following the cited range through the alignment.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# Two lines at least this alike (difflib's ratio) are one line edited, not two lines.
SIMILAR = 0.6


@dataclass(frozen=True)
class FollowedLines:
    """Cited lines of the old text and the lines they became in the new one.

    Line numbers are 1-based and inclusive, counted in the texts given. ``new_end`` is
    ``new_start - 1`` when every cited line was deleted (``new_lines`` is then empty).
    """

    changed: bool
    old_start: int
    old_end: int
    new_start: int
    new_end: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]


def follow_lines(old_text: str, new_text: str, start: int, end: int) -> FollowedLines:
    """Follow lines ``start``..``end`` of ``old_text`` into ``new_text``.

    ``changed`` is True when any of those lines was replaced or deleted, or a line was
    inserted between two of them; lines inserted before or after the range only move it.
    """
    old, new = old_text.split("\n"), new_text.split("\n")
    a0, a1 = max(start - 1, 0), min(end, len(old))
    changed = False
    spans: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            lo, hi = max(i1, a0), min(i2, a1)
            if lo < hi:
                spans.append((j1 + lo - i1, j1 + hi - i1))
        elif tag == "insert":
            if a0 < i1 < a1:
                changed = True
                spans.append((j1, j2))
        elif i1 < a1 and i2 > a0:  # replace or delete touching the range
            changed = True
            spans.append(_closest(old[max(i1, a0):min(i2, a1)], new, j1, j2))
    b0 = min((s for s, _ in spans), default=0)
    b1 = max((e for _, e in spans), default=b0)
    return FollowedLines(
        changed=changed, old_start=a0 + 1, old_end=a1, new_start=b0 + 1, new_end=b1,
        old_lines=tuple(old[a0:a1]), new_lines=tuple(new[b0:b1]),
    )


def _closest(cited: list[str], new: list[str], j1: int, j2: int) -> tuple[int, int]:
    """The part of a replacement ``new[j1:j2]`` that the ``cited`` lines became: the lines
    most like them (an edited line is still mostly the same line), else the whole part.
    A block replaced as a whole can also hold new lines that were inserted next to them."""
    picked = []
    for line in cited:
        scored = [(difflib.SequenceMatcher(None, line, new[j], autojunk=False).ratio(), j)
                  for j in range(j1, j2)]
        ratio, j = max(scored, key=lambda s: (s[0], -s[1]), default=(0.0, j1))
        if ratio >= SIMILAR:
            picked.append(j)
    return (min(picked), max(picked) + 1) if picked else (j1, j2)


def unified_diff(old_lines: tuple[str, ...], new_lines: tuple[str, ...], old_label: str,
                 new_label: str) -> str:
    """The two line lists as one unified diff (every line shown, no context cut)."""
    return "\n".join(difflib.unified_diff(
        list(old_lines), list(new_lines), fromfile=old_label, tofile=new_label,
        lineterm="", n=max(len(old_lines), len(new_lines))))
