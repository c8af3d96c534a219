"""BM25 from precomputed per-(term, chunk) scores, for large indexes of CJK text.

Chinese, Japanese and Korean text drawn from a few thousand common words gives most query
terms long posting lists, and Tantivy's block-max WAND cannot skip them (short chunks of
similar length: every block's best score is competitive), so a query costs a walk of every
posting of every term. Here each term's score in each chunk holding it (its *impact*) is
computed once per index version as a numpy row, exactly as Tantivy scores it (its BM25
with the fieldnorm quantised to one byte, float32 throughout), and a query is the sum of
its terms' rows in query order, as Tantivy's union adds them, over the chunks of the
readable role sets (chunks are grouped by role set). Equal scores are ordered by index
address, as Tantivy orders them.

The rows are built from the analysed tokens in the store, for the searcher of one index
version, in a background thread: until they are ready (and whenever the index has changed
since), searches take the Tantivy path and nothing waits for the build. A build that does
not match the index exactly (a chunk missing, another length or role set, a term whose
score differs from Tantivy's own explanation of it) is discarded, and Tantivy goes on
answering alone.

This module imports numpy; only a CJK search on a large index loads it.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import threading
import time
import weakref
from array import array
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import tantivy

if TYPE_CHECKING:
    from glassrag.retrieval.lexical import LexicalIndex, LexicalMatch
    from glassrag.store.database import Store

#: Above this many (chunk, term) postings the rows would take too much memory.
MAX_POSTINGS = 60_000_000
#: A term held by more than this share of the chunks is kept as a dense row.
DENSE_SHARE = 1 / 16
#: One score in this many is sampled to bound the best ones from below.
SAMPLE_STRIDE = 16
#: Each term's best-scoring chunks kept, to bound a query's best scores from below.
TOP_CHUNKS = 32
#: Bytes of dense rows kept per index version (the longest lists first).
MAX_DENSE_BYTES = 256 * 1024 * 1024
#: A new build starts no sooner than this many build durations after the last one ended,
#: so an index that changes constantly spends at most a small share of a core on builds.
REBUILD_PAUSE = 4.0
# Tantivy's BM25 constants (K1, B) and the characters Python's str.split() treats as
# whitespace while Tantivy's whitespace tokenizer does not (U+001C..U+001F).
_K1 = np.float32(1.2)
_B = np.float32(0.75)
_SPLIT_ONLY = re.compile("[\x1c-\x1f]")

Found = tuple[list["LexicalMatch"], int, list["LexicalMatch"]]
log = logging.getLogger("glassrag.retrieval.impacts")


def fieldnorm_table() -> np.ndarray:
    """The 256 field lengths a one-byte fieldnorm id stands for (Lucene's scheme, as
    Tantivy uses it): 0..23 exactly, then 3 bits of mantissa over a growing exponent."""
    values = []
    for code in range(256):
        if code < 24:
            values.append(code)
            continue
        bits, shift = (code - 24) & 7, (code - 24) >> 3
        values.append(24 + (bits if shift == 0 else (bits | 8) << (shift - 1)))
    return np.array(values, dtype=np.int64)


_TABLE = fieldnorm_table()


def fieldnorm_ids(lengths: np.ndarray) -> np.ndarray:
    """Each length's fieldnorm id: the largest table entry not above it."""
    return (np.searchsorted(_TABLE, lengths, side="right") - 1).astype(np.uint8)


@dataclass
class Impacts:
    """Every alive chunk's term scores for one searcher (one version of the index)."""

    searcher: Any
    ranks: np.ndarray           # position -> rank in address order (Tantivy's tie order)
    rowids: np.ndarray          # position -> chunk rowid
    rolesets: np.ndarray        # position -> role-set id (chunks are grouped by role set)
    terms: dict[str, int]       # term -> term id
    starts: np.ndarray          # term id -> first posting (CSR offsets, one extra at the end)
    positions: np.ndarray       # postings: chunk positions, by term then position
    values: np.ndarray          # postings: the term's float32 BM25 score in that chunk
    dense: dict[int, np.ndarray]  # term id -> a score per chunk, for common terms
    top_starts: np.ndarray      # term id -> first of its best chunks in ``tops``
    tops: np.ndarray            # each term's TOP_CHUNKS best-scoring chunk positions
    spans: dict[frozenset[int] | None, tuple[list[tuple[int, int]], list[tuple[int, int]]]] = (
        field(default_factory=dict))

    @property
    def size(self) -> int:
        return len(self.rowids)

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """Every chunk's BM25 score for ``terms``, added in query order in float32 (as
        Tantivy's union adds its clauses' scores)."""
        total = None
        for term in terms:
            tid = self.terms.get(term)
            if tid is None:
                continue  # held by no alive chunk: adds nothing anywhere
            dense = self.dense.get(tid)
            if total is None and dense is not None:
                total = dense.copy()  # 0 + x is x: the same floats as adding to zeros
                continue
            if total is None:
                total = np.zeros(self.size, dtype=np.float32)
            if dense is not None:
                np.add(total, dense, out=total)
            else:
                # A term's positions are distinct: each chunk gets one float32 add, as
                # with ``total[p] += v``, without its gather and scatter copies.
                lo, hi = self.starts[tid], self.starts[tid + 1]
                np.add.at(total, self.positions[lo:hi], self.values[lo:hi])
        return total if total is not None else np.zeros(self.size, dtype=np.float32)

    def seeds(self, terms: Sequence[str]) -> np.ndarray:
        """The distinct positions of each term's best-scoring chunks."""
        found = [self.tops[self.top_starts[tid]:self.top_starts[tid + 1]]
                 for tid in map(self.terms.get, terms) if tid is not None]
        if not found:
            return np.zeros(0, dtype=np.int32)
        ordered = np.sort(np.concatenate(found))  # a few hundred: cheaper than np.unique
        return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]

    def ranges(self, readable: Collection[int] | None
               ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The position ranges of the chunks ``readable`` lets a principal read, and of
        the others (chunks are grouped by role set; kept per set)."""
        key = frozenset(readable) if readable is not None else None
        found = self.spans.get(key)
        if found is None:
            sets, firsts = np.unique(self.rolesets, return_index=True)
            ends = [*firsts[1:].tolist(), self.size]
            spans = list(zip(sets.tolist(), firsts.tolist(), ends, strict=True))
            found = self.spans[key] = (
                [(a, b) for rid, a, b in spans if key is None or rid in key],
                [(a, b) for rid, a, b in spans if key is not None and rid not in key])
        return found

    def best(self, scores: np.ndarray, spans: Sequence[tuple[int, int]], limit: int,
             seeds: np.ndarray) -> np.ndarray:
        """Positions of the best ``limit`` chunks scoring above 0 within ``spans``, best
        first, equal scores in address order. ``seeds`` are positions likely to score
        high (each query term's best chunks)."""
        if limit < 1 or not spans:
            return np.zeros(0, dtype=np.int64)
        parts = [scores[a:b] for a, b in spans]
        cut = self._cut(scores, spans, limit, seeds)
        chosen = np.concatenate([
            (np.flatnonzero(part >= cut) if cut > 0 else np.flatnonzero(part)) + a
            for part, (a, _) in zip(parts, spans, strict=True)])
        order = np.lexsort((self.ranks[chosen], -scores[chosen]))
        return chosen[order[:limit]]

    @staticmethod
    def _cut(scores: np.ndarray, spans: Sequence[tuple[int, int]], limit: int,
             seeds: np.ndarray) -> np.float32:
        """A score the best ``limit`` chunks within ``spans`` all reach: the limit-th best
        of some of them (any subset's is at most the whole set's), the seeds' when enough
        are inside ``spans``, else a regular sample's; 0 when too few score at all. Only
        chunks at or above it are sorted (a sort or partition of the whole array, mostly
        zeros, costs far more)."""
        inside = np.zeros(len(seeds), dtype=bool)
        for a, b in spans:
            inside |= (seeds >= a) & (seeds < b)
        values = scores[seeds[inside]]
        values = values[values > 0]
        if len(values) < limit:
            values = np.concatenate([scores[a:b:SAMPLE_STRIDE] for a, b in spans])
        if len(values) < limit:
            return np.float32(0)
        return np.float32(np.partition(values, len(values) - limit)[len(values) - limit])

    def matches(self, scores: np.ndarray, positions: np.ndarray) -> list[LexicalMatch]:
        from glassrag.retrieval.lexical import LexicalMatch

        return [LexicalMatch(rowid=int(r), score=float(s))
                for r, s in zip(self.rowids[positions].tolist(),
                                scores[positions].tolist(), strict=True)]

    def search(self, terms: Sequence[str], readable: Collection[int] | None, limit: int,
               blocked_limit: int) -> Found:
        """What :meth:`LexicalIndex.search` returns, from the rows."""
        scores = self.scores(terms)
        mine, others = self.ranges(readable)
        seeds = self.seeds(terms)
        allowed = self.matches(scores, self.best(scores, mine, limit, seeds))
        # A float32 score is 0 exactly when its bits are (scores are never negative).
        blocked = sum(int(np.count_nonzero(scores[a:b].view(np.int32))) for a, b in others)
        outside = (self.matches(scores, self.best(scores, others, blocked_limit, seeds))
                   if blocked and blocked_limit else [])
        return allowed, blocked, outside


def _values(explained: dict[str, Any]) -> tuple[np.float32, np.float32] | None:
    """``idf`` and ``avgdl`` from a Tantivy term-query explanation (None without them)."""
    out: dict[str, float] = {}
    stack = [explained]
    while stack:
        node = stack.pop()
        description = str(node.get("description", ""))
        if description.startswith("idf"):
            out["idf"] = float(node["value"])
        elif description.startswith("avgdl"):
            out["avgdl"] = float(node["value"])
        stack.extend(node.get("details") or [])
    if set(out) != {"idf", "avgdl"}:
        return None
    return np.float32(out["idf"]), np.float32(out["avgdl"])


def build(store: Store, lexical: LexicalIndex, searcher: Any) -> Impacts | None:
    """The rows for ``searcher`` (one version of ``lexical``), or None when the store's
    tokens do not match what that version indexed or there are too many postings."""
    size = int(searcher.num_docs)
    if size == 0:
        return None
    hits = searcher.search(tantivy.Query.all_query(), limit=size, count=False).hits
    in_order = [a for _, a in hits]  # equal scores: in address order
    # Grouped by role set (a principal's readable chunks are a few ranges), and in address
    # order within each.
    ranks = np.argsort(np.array(searcher.fast_field_values("roleset", in_order),
                                dtype=np.int64), kind="stable")
    addresses = [in_order[i] for i in ranks.tolist()]
    rowids = np.array(searcher.fast_field_values("rowid", addresses), dtype=np.int64)
    rolesets = np.array(searcher.fast_field_values("roleset", addresses), dtype=np.int64)
    indexed_lengths = np.array(searcher.fast_field_values("length", addresses), dtype=np.int64)
    found = _token_ids(store, rowids.tolist(), rolesets.tolist())
    if found is None:
        return None
    vocabulary, ids, chunk, lengths = found
    if not np.array_equal(lengths, indexed_lengths):
        return None
    keys = ids * size + chunk
    del ids, chunk
    keys.sort()
    firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    freqs = np.diff(np.append(firsts, len(keys))).astype(np.float32)
    keys = keys[firsts]
    term_ids = keys // size
    positions = (keys % size).astype(np.int32)
    del keys
    starts = np.searchsorted(term_ids, np.arange(len(vocabulary) + 1))
    fieldnorms = fieldnorm_ids(lengths)
    found_weights = _weights(lexical, searcher, vocabulary, starts, positions, freqs,
                             fieldnorms, [addresses[int(positions[i])] for i in starts[:-1]])
    if found_weights is None:
        return None
    weights, norms = found_weights
    # The same float32 operations, in the same order, as Tantivy's Bm25Weight::score.
    values = weights[term_ids] * (freqs / (freqs + norms[fieldnorms[positions]]))
    dense: dict[int, np.ndarray] = {}
    budget = MAX_DENSE_BYTES
    for tid in np.argsort(-np.diff(starts), kind="stable").tolist():
        lo, hi = int(starts[tid]), int(starts[tid + 1])
        if hi - lo <= DENSE_SHARE * size or budget < 4 * size:
            break
        full = dense[tid] = np.zeros(size, dtype=np.float32)
        full[positions[lo:hi]] = values[lo:hi]
        budget -= full.nbytes
    top_starts, tops = _tops(starts, positions, values)
    return Impacts(searcher=searcher, ranks=ranks, rowids=rowids, rolesets=rolesets,
                   terms=vocabulary, starts=starts, positions=positions,
                   values=values, dense=dense, top_starts=top_starts, tops=tops)


def _tops(starts: np.ndarray, positions: np.ndarray, values: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """Each term's :data:`TOP_CHUNKS` best-scoring positions, as CSR offsets and values."""
    found = []
    for tid in range(len(starts) - 1):
        lo, hi = int(starts[tid]), int(starts[tid + 1])
        if hi - lo <= TOP_CHUNKS:
            found.append(positions[lo:hi])
        else:
            best = np.argpartition(values[lo:hi], hi - lo - TOP_CHUNKS)[hi - lo - TOP_CHUNKS:]
            found.append(positions[lo + best])
    offsets = np.zeros(len(found) + 1, dtype=np.int64)
    np.cumsum([len(f) for f in found], out=offsets[1:])
    return offsets, np.concatenate(found) if found else np.zeros(0, dtype=np.int32)


def _token_ids(store: Store, rowids: list[int], rolesets: list[int]
               ) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray] | None:
    """Every stored token as ``(vocabulary, term ids, chunk positions, chunk lengths)``,
    or None when the stored chunks are not exactly the indexed ones (``rowids`` and
    ``rolesets`` by position) or hold too many tokens.

    Read row by row through a connection of its own (the build runs beside the searches
    and ingests on the store's connection), keeping only small integers per token, so the
    searches running meanwhile are never held up long and no copy of the text is kept.
    """
    where = {rowid: i for i, rowid in enumerate(rowids)}
    vocabulary: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    ids = array("i")
    chunks: list[int] = []
    counts: list[int] = []
    reader = store.reader()
    try:
        for rowid, _, roleset, tokens in store.index_rows(db=reader):
            i = where.get(rowid)
            if i is None or rolesets[i] != roleset or _SPLIT_ONLY.search(tokens):
                return None
            words = tokens.split()
            ids.extend(map(vocabulary.__getitem__, words))
            chunks.append(i)
            counts.append(len(words))
            if len(ids) > MAX_POSTINGS:
                return None
    finally:
        reader.close()
    if len(chunks) != len(rowids):
        return None
    lengths = np.zeros(len(rowids), dtype=np.int64)
    lengths[chunks] = counts
    chunk = np.repeat(np.array(chunks, dtype=np.int64), counts)
    return dict(vocabulary), np.frombuffer(ids, dtype=np.int32).astype(np.int64), chunk, lengths


def _weights(lexical: LexicalIndex, searcher: Any, vocabulary: dict[str, Any],
             starts: np.ndarray, positions: np.ndarray, freqs: np.ndarray,
             fieldnorms: np.ndarray, firsts: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """Each term's ``idf * (K1 + 1)`` and the per-fieldnorm length factor, as Tantivy has
    them: from its explanation of the term's score in the first chunk holding it, after
    checking that the formula here gives exactly that score (None if it does not)."""
    weights = np.zeros(len(vocabulary), dtype=np.float32)
    norms = None
    for tid, (term, address) in enumerate(zip(vocabulary, firsts, strict=True)):
        explained = json.loads(
            lexical.term_query(term).explain(searcher, address).to_json())
        values = _values(explained)
        if values is None:
            return None
        idf, avgdl = values
        if norms is None:
            lengths = _TABLE.astype(np.float32)
            norms = _K1 * ((np.float32(1) - _B) + (_B * lengths) / avgdl)
        weights[tid] = idf * (np.float32(1) + _K1)
        first = int(starts[tid])
        freq = freqs[first]
        mine = weights[tid] * (freq / (freq + norms[fieldnorms[positions[first]]]))
        if mine != np.float32(explained["value"]):
            return None
    return (weights, norms) if norms is not None else None


@dataclass
class _Slot:
    """The rows of one index, and the build under way."""

    impacts: Impacts | None = None
    thread: threading.Thread | None = None
    last_end: float = 0.0
    last_duration: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


_slots: weakref.WeakKeyDictionary[LexicalIndex, _Slot] = weakref.WeakKeyDictionary()


def _slot(lexical: LexicalIndex) -> _Slot:
    slot = _slots.get(lexical)
    if slot is None:
        slot = _slots.setdefault(lexical, _Slot())
    return slot


def search(store: Store, lexical: LexicalIndex, terms: Sequence[str],
           readable: Collection[int] | None, limit: int, blocked_limit: int) -> Found | None:
    """The search from the rows of the current index version, or None (use Tantivy) while
    they are not built; a build is started in the background if none is under way."""
    slot = _slot(lexical)
    searcher = lexical.searcher
    impacts = slot.impacts
    if impacts is not None and impacts.searcher is searcher:
        return impacts.search(terms, readable, limit, blocked_limit)
    _start(slot, store, lexical, searcher)
    return None


def _start(slot: _Slot, store: Store, lexical: LexicalIndex, searcher: Any) -> None:
    with slot.lock:
        if slot.thread is not None and slot.thread.is_alive():
            return
        if time.monotonic() - slot.last_end < REBUILD_PAUSE * slot.last_duration:
            return
        index = weakref.ref(lexical)
        slot.thread = threading.Thread(target=_run, args=(slot, store, index, searcher),
                                       name="glassrag-impacts", daemon=True)
        slot.thread.start()


def _run(slot: _Slot, store: Store, index: weakref.ref[LexicalIndex], searcher: Any) -> None:
    started = time.monotonic()
    lexical = index()
    built = None
    if lexical is not None:
        try:
            built = build(store, lexical, searcher)
        except Exception:  # noqa: BLE001 - the store closed or changed under the build:
            # the rows are an optimisation, Tantivy answers without them; say why in the log
            log.warning("precomputed term scores not built; Tantivy answers", exc_info=True)
            built = None
    with slot.lock:
        slot.impacts = built
        slot.last_end = time.monotonic()
        slot.last_duration = slot.last_end - started


def settle(lexical: LexicalIndex, timeout: float | None = None) -> bool:
    """Wait for a build under way; whether rows for the current index version are ready."""
    slot = _slot(lexical)
    thread = slot.thread
    if thread is not None:
        thread.join(timeout)
    impacts = slot.impacts
    return impacts is not None and impacts.searcher is lexical.searcher


def build_seconds(lexical: LexicalIndex) -> float:
    """How long the last build for ``lexical`` took (0 before any)."""
    return _slot(lexical).last_duration
