"""BM25 with the statistics of one principal's readable chunks (the ``conceal`` path).

Tantivy scores with statistics of the whole index: the number of chunks, each term's
document frequency and the average chunk length all count chunks the principal may not
read, so a public user could read hidden chunk counts back out of a public chunk's score.
Under ``conceal`` a non-admin is scored here instead, with N, df and the average length of
its readable chunks only: its scores, ranking and per-term contributions are then exactly
those of a knowledge base that holds only the chunks it may read.

Every readable chunk holding a query term is scored, so the top-k is exact. Everything
comes from the Tantivy index, with the role filter inside each query: which chunks hold a
term (its postings), how often (the ``repeats`` field), chunk lengths (a fast field), and
chunk and token totals per role set (one aggregation, kept until the index changes).
Reading the chunks' tokens from SQLite instead cost ten times as much (random page reads).
Ties are broken by (doc_id, ordinal), never by row id: hidden documents ingested earlier
shift the row ids of readable ones.

The formula is Lucene's BM25 (as Tantivy and bm25s use it) with exact lengths: Tantivy
quantises lengths to one byte, so its scores differ from these in later decimals.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from glassrag.retrieval.lexical import LexicalIndex, LexicalMatch
from glassrag.store.database import Store

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs to know about the corpus it scores against: its number of chunks,
    their total number of tokens and each query term's document frequency."""

    chunks: int
    tokens: int
    doc_freq: tuple[int, ...]

    @property
    def avgdl(self) -> float:
        return self.tokens / self.chunks if self.chunks else 0.0

    def idf(self) -> np.ndarray:
        """Each term's IDF, in query-term order."""
        return np.array([idf(df, self.chunks) for df in self.doc_freq], dtype=np.float64)


def idf(df: int, n: int) -> float:
    """Lucene's BM25 IDF, always positive: ``ln(1 + (n - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (max(n - df, 0) + 0.5) / (df + 0.5))


def contributions(tf: np.ndarray, length: np.ndarray, stats: CorpusStats) -> np.ndarray:
    """BM25 contribution of each term (rows, query-term order) to each chunk (columns),
    from term frequencies ``tf`` (terms x chunks) and chunk lengths in tokens."""
    avgdl = stats.avgdl or 1.0
    norm = K1 * (1.0 - B + B * length / avgdl)
    weight: np.ndarray = stats.idf()[:, None] * (K1 + 1.0)
    return weight * tf / (tf + norm[None, :])


def bm25(tf: np.ndarray, length: np.ndarray, stats: CorpusStats) -> np.ndarray:
    """Each chunk's BM25 score: its terms' :func:`contributions` added in query-term order
    (one row at a time, so a chunk's score never depends on how many chunks are scored)."""
    parts = contributions(tf, length, stats)
    scores = np.zeros(parts.shape[1], dtype=np.float64)
    for row in parts:
        scores += row
    return scores


def readable_stats(lexical: LexicalIndex, terms: Sequence[str],
                   readable: Collection[int]) -> CorpusStats:
    """N, token total and per-term df over the chunks whose role set is in ``readable``."""
    totals = lexical.roleset_totals()
    chunks = sum(totals[r][0] for r in readable if r in totals)
    tokens = sum(totals[r][1] for r in readable if r in totals)
    doc_freq = tuple(
        sum(n for rid, n in lexical.counts_by_roleset(lexical.term_query(t)).items()
            if rid in readable)
        for t in terms)
    return CorpusStats(chunks, tokens, doc_freq)


def frequencies(lexical: LexicalIndex, terms: Sequence[str], within: Any,
                limits: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row ids, term frequencies (terms x chunks) and lengths of the chunks matching
    ``within`` that hold a term (at most ``limits[i]`` of them hold term i)."""
    column: dict[int, int] = {}
    addresses: list[Any] = []
    cells: list[tuple[int, list[int], int]] = []  # (term row, row ids, frequency)
    for row, (term, limit) in enumerate(zip(terms, limits, strict=True)):
        rowids, found = lexical.postings(lexical.both(lexical.term_query(term), within), limit)
        for rowid, address in zip(rowids, found, strict=True):
            if rowid not in column:
                column[rowid] = len(column)
                addresses.append(address)
        cells.append((row, rowids, 1))
        for tf, query, count in lexical.repeats(term, within):
            cells.append((row, lexical.postings(lexical.both(query, within), count)[0], tf))
    tf_matrix = np.zeros((len(terms), len(column)), dtype=np.float64)
    for row, rowids, tf in cells:  # frequencies above 1 come after, and overwrite, the 1s
        tf_matrix[row, [column[r] for r in rowids if r in column]] = tf
    return (np.fromiter(column, dtype=np.int64, count=len(column)), tf_matrix,
            np.array(lexical.lengths(addresses), dtype=np.float64))


def by_chunk_order(store: Store, scored: Sequence[tuple[float, int]]) -> list[tuple[float, int]]:
    """(score, rowid) pairs best first, equal scores by (doc_id, ordinal), never by row id."""
    order = store.chunk_order([rowid for _, rowid in scored])
    # A chunk deleted since the index was read has no key; it is dropped when loaded.
    return sorted(scored, key=lambda sr: (-sr[0], order.get(sr[1], ("", 0))))


def _top(store: Store, ids: np.ndarray, scores: np.ndarray, limit: int) -> list[LexicalMatch]:
    """The best ``limit`` by score, ties at the cut decided by chunk order too."""
    if limit < 1 or not len(ids):
        return []
    if len(ids) > limit:
        # Everything scoring at least the limit-th best, ties at the cut included.
        cut = -np.partition(-scores, limit - 1)[limit - 1]
        keep = np.flatnonzero(scores >= cut)
        ids, scores = ids[keep], scores[keep]
    ranked = by_chunk_order(store, list(zip(scores.tolist(), ids.tolist(), strict=True)))
    return [LexicalMatch(rowid=rowid, score=score) for score, rowid in ranked[:limit]]


def search(store: Store, lexical: LexicalIndex, terms: Sequence[str],
           readable: Collection[int], limit: int, blocked_limit: int = 0,
           ) -> tuple[list[LexicalMatch], int, list[LexicalMatch]]:
    """``LexicalIndex.search``'s contract, scored with the readable set's statistics.

    The blocked count and the best blocked matches (for the status decision and the audit
    trace only) come from the index's own scoring as before.
    """
    if not terms:
        return [], 0, []
    query = lexical.text_query(terms)
    counts = lexical.counts_by_roleset(query)
    blocked_count = sum(n for rid, n in counts.items() if rid not in readable)
    blocked = lexical.blocked_matches(query, readable, blocked_limit)
    if not readable:
        return [], blocked_count, blocked
    stats = readable_stats(lexical, terms, readable)
    ids, tf, length = frequencies(lexical, terms, lexical.roleset_query(readable),
                                  stats.doc_freq)
    return _top(store, ids, bm25(tf, length, stats), limit), blocked_count, blocked


def explain(lexical: LexicalIndex, terms: Sequence[str], rowid: int,
            readable: Collection[int]) -> dict[str, float]:
    """Per-term contributions for one chunk, with the readable set's statistics (inspect)."""
    ids, tf, length = frequencies(lexical, terms, lexical.rowid_query(rowid), [1] * len(terms))
    if not len(ids):
        return {}
    parts = contributions(tf, length, readable_stats(lexical, terms, readable))[:, 0]
    return {t: float(v) for t, v, f in zip(terms, parts, tf[:, 0], strict=True) if f}
