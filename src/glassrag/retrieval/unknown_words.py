"""The uncommon words of a question that no document the principal may read uses.

A name no readable document mentions already makes a question unanswerable from them
(:func:`~glassrag.retrieval.search.with_name_counts`); so does a word that everyday English
rarely uses (:func:`~glassrag.text.vocabulary.uncommon_words`: "keyring", "coroutines")
when no readable chunk holds it in any form: documentation that never says "keyring" cannot
say whether the password goes there. Everyday words missing from the documents decide
nothing: they are only the question's phrasing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from glassrag.records import Hit
from glassrag.text.analysis import analyze
from glassrag.text.vocabulary import (
    MIN_TYPO_CHARS,
    one_edit_away,
    uncommon_words,
    written_short_or_long,
)


def unknown_words(query: str, hits: Sequence[Hit], names: Collection[tuple[str, ...]],
                  readable_counts: Callable[[list[str]], list[int]]) -> tuple[str, ...]:
    """The uncommon words of ``query`` (as written, lower-cased) that ``readable_counts``
    (how many chunks the principal may read hold each term) finds in no chunk, and that no
    permitted hit writes short or long ("config" where the documents say "configuration").
    A word that is one of ``names`` by itself (the query's names, counted already) is left
    to that count; one word of a longer name ("Bazel" of "Bazel BUILD") is not, since a name
    is known by any of its words."""
    # A word a permitted hit holds is known without counting.
    matched = {t for hit in hits for t in hit.matched_terms}
    words = [(word, terms) for word, terms in uncommon_words(query)
             if terms[:1] not in names and terms not in names  # a name: its first term
             and matched.isdisjoint(terms)]
    if not words:
        return ()
    tokens = list(dict.fromkeys(t for _, terms in words for t in terms))
    counts = dict(zip(tokens, readable_counts(tokens), strict=True))
    missing = [(word, terms) for word, terms in words if not any(counts[t] for t in terms)]
    if not missing:
        return ()
    # A word the permitted hits write short or long ("config", "configuration"), or one
    # letter away (a misspelling: "ctenohore" for "ctenophore"), is theirs.
    held = {t for hit in hits for t in analyze(hit.chunk.text)}
    return tuple(word for word, terms in missing
                 if not written_short_or_long(terms, held)
                 and not any(len(t) >= MIN_TYPO_CHARS and one_edit_away(t, held) for t in terms))
