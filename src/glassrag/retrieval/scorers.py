"""Two plain scorers whose results a person can check by hand, exactly as specified.

* ``overlap``: keyword overlap — lowercase ``[a-z0-9]+`` tokens, a crude plural
  fold, a small stop list; a chunk scores the occurrences of the query's distinct tokens
  in its title and text.
* ``terms``: explicit ``--terms`` — 1 to 5 casefolded keywords, substring match,
  one point per distinct term found.

The main retrievers use :mod:`glassrag.text.analysis` instead; these stay deliberately simple.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from glassrag.errors import InvalidInput

# The overlap scorer's stop list, word for word: its documented results depend on it.
OVERLAP_STOPWORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "before", "by", "do", "does",
        "for", "from", "has", "have", "how", "in", "is", "it", "of", "on", "or",
        "should", "the", "they", "to", "what", "when", "where", "which", "with",
    }
)  # fmt: skip

MAX_TERMS = 5
MAX_TERM_CHARS = 30

_OVERLAP_TOKEN_RE = re.compile(r"[a-z0-9]+")


def overlap_terms(text: str) -> list[str]:
    """The overlap scorer's tokens of ``text`` in order, duplicates kept.

    The plural ``s`` is stripped *before* the stop-word check, as specified, so e.g.
    ``"has"`` (3 chars) stays a stop word while ``"does"`` becomes ``"doe"`` and survives.
    """
    tokens: list[str] = []
    for token in _OVERLAP_TOKEN_RE.findall(text.lower()):
        if len(token) > 3 and token.endswith("s"):
            token = token[:-1]
        if token not in OVERLAP_STOPWORDS:
            tokens.append(token)
    return tokens


def overlap_score(query: str, title: str, text: str) -> tuple[int, list[str]]:
    """The overlap score of a chunk plus the terms that produced it.

    The score sums, over the query's distinct tokens, how often each occurs in
    ``title + " " + text``; matched terms are those distinct tokens found, in query order.
    """
    counts = Counter(overlap_terms(title + " " + text))
    matched = [term for term in dict.fromkeys(overlap_terms(query)) if counts[term]]
    return sum(counts[term] for term in matched), matched


def validate_terms(terms: Sequence[str]) -> list[str]:
    """Check and normalise explicit ``--terms``: 1–5 terms of 1–30 chars after stripping.

    Returns the casefolded terms with duplicates merged (first occurrence wins), e.g.
    ``["RAG", "rag", " 检索 "]`` -> ``["rag", "检索"]``. Raises
    :class:`~glassrag.errors.InvalidInput` naming the count or the offending term.
    """
    if not 1 <= len(terms) <= MAX_TERMS:
        raise InvalidInput(
            f"give 1 to {MAX_TERMS} terms, got {len(terms)}", field="terms", count=len(terms)
        )
    cleaned: list[str] = []
    for position, term in enumerate(terms, start=1):
        stripped = term.strip() if isinstance(term, str) else ""
        if not 1 <= len(stripped) <= MAX_TERM_CHARS:
            raise InvalidInput(
                f"term {position} ({term!r}) must be 1 to {MAX_TERM_CHARS} characters after"
                f" stripping spaces, got {len(stripped)}",
                field="terms",
                term=term if isinstance(term, str) else repr(term),
            )
        cleaned.append(stripped.casefold())
    return list(dict.fromkeys(cleaned))


def terms_score(terms: Sequence[str], text: str) -> tuple[int, list[str]]:
    """The terms score of already validated ``terms``: one point per distinct term that
    occurs (casefolded substring) in ``text``. Matched terms come back in term order."""
    folded = text.casefold()
    matched = [term for term in dict.fromkeys(terms) if term in folded]
    return len(matched), matched
