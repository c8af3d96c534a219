"""Links and images in Markdown and reStructuredText text, as the documentation readers and
the answerer both see them: a link is said as its text, an image as nothing."""

from __future__ import annotations

import re

__all__ = ["ADDRESS", "IMAGE", "LINK", "link_text"]

# An image, inline or by reference: "![build status](https://…/badge.svg)",
# "![npm version][npm-image]" (READMEs' badges).
IMAGE = re.compile(r"!\[[^\]\n]*\](?:\([^)\n]*\)|\[[^\]\n]*\])")
# A link with its text in group 1 or 2: Markdown inline "[Options](#options)" or by
# reference "[the guide][guide]", reST "`Guide <https://…>`_".
LINK = re.compile(r"\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])|`([^`<\n]*?)\s*<[^>\n]+>`__?")
# An address written out: an autolink "<https://…>" or a bare URL.
ADDRESS = re.compile(r"<https?://[^>\s]+>|https?://[^\s<>()]+")


def link_text(match: re.Match[str]) -> str:
    """What a :data:`LINK` match says: its text."""
    return match.group(1) or match.group(2) or ""
