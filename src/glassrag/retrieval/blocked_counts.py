"""The blocked count: how many chunks matching a query a principal may not read.

It is counted from the index's ``restricted`` postings: only chunks of a role set without
the public role have them (every principal reads public chunks), one per distinct term,
tagged with the chunk's role set ("refund\\x1e3"). A count walks the postings of the hidden
role sets' chunks only, never those of the chunks the principal may read.

A very common term (see :mod:`common_terms`) still has a long restricted list. For each set
of a query's common terms, the chunks holding all of them are counted per role set once and
kept until the index changes (a vocabulary has few common terms and queries share them);
by inclusion-exclusion that gives the hidden chunks holding any common term, and one
aggregation over the rare terms' restricted postings adds those holding a rare term but no
common one.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import tantivy

from glassrag.retrieval import common_terms

if TYPE_CHECKING:
    from glassrag.retrieval.lexical import LexicalIndex

Occur = tantivy.Occur
#: A term is common for counting when more than this share of the chunks hold it.
COUNT_SHARE = 0.25
#: Inclusion-exclusion over k common terms takes 2^k - 1 intersections; above this many
#: they are counted with the rare ones.
MAX_COMMON_TERMS = 3
#: More (term, hidden role set) clauses than this: count all matches per role set instead.
MAX_CLAUSES = 256
#: Intersection counts kept per index version (each is a few integers).
MAX_CACHED = 4096


def blocked_count(lexical: LexicalIndex, terms: Sequence[str], readable: Collection[int]
                  ) -> int:
    """How many chunks outside the role sets ``readable`` hold any of ``terms``."""
    hidden = [rid for rid in lexical.roleset_totals() if rid not in readable]
    if not hidden:
        return 0
    if len(terms) * len(hidden) > MAX_CLAUSES:
        found = lexical.counts_by_roleset(lexical.text_query(terms))
        return sum(n for rid, n in found.items() if rid not in readable)
    rare, common = common_terms.split(lexical, terms, COUNT_SHARE)
    if len(common) > MAX_COMMON_TERMS:
        rare, common = list(terms), []
    total = 0
    for size in range(1, len(common) + 1):
        for subset in itertools.combinations(common, size):
            found = _holding_all(lexical, subset)
            total += (1 if size % 2 else -1) * sum(found.get(rid, 0) for rid in hidden)
    if rare:
        query = tantivy.Query.boolean_query(
            [(Occur.Should, lexical.restricted_query(t, rid)) for t in rare for rid in hidden]
            + [(Occur.MustNot, lexical.restricted_query(t, rid))
               for t in common for rid in hidden])
        total += sum(lexical.counts_by_roleset(query).values())
    return total


def _holding_all(lexical: LexicalIndex, subset: Sequence[str]) -> dict[int, int]:
    """Chunks holding every term of ``subset``, per role set (kept until the index changes)."""
    state = common_terms.searcher_state(lexical)
    key = frozenset(subset)
    found = state.counts.get(key)
    if found is None:
        clauses = [lexical.term_query(t) for t in subset]
        query = clauses[0] if len(clauses) == 1 else tantivy.Query.boolean_query(
            [(Occur.Must, clause) for clause in clauses])
        found = lexical.counts_by_roleset(query)
        if len(state.counts) >= MAX_CACHED:
            state.counts.clear()
        state.counts[key] = found
    return found
