"""bm25, dense and hybrid retrieval on the Qdrant index, with the role filter inside.

Every query carries the principal's roles as a ``must`` filter, so Qdrant ranks only
readable points and top-k is taken among them. Blocked evidence (for the status decision
and the audit trace; never shown to users) comes from the same queries with the filter
negated, and the bm25 blocked count from Qdrant's count API (chunks holding a query term
that the principal may not read). Hybrid is fused by Qdrant (Query API prefetch + DBSF or
RRF); the per-retriever lists come back in the same batch request, for ``inspect``.

Under ``conceal`` nothing returned may depend on unreadable chunks:

* IDF is computed over the readable points only (``SearchParams.idf`` with the readable
  filter as corpus, Qdrant 1.19+), and the stored weights use a fixed average length;
* dense search is exact (an HNSW graph's neighbourhoods include hidden points);
* equal scores are ordered by (doc_id, ordinal), never by point id, which hidden documents
  shift, with every tie at the cut fetched (always, so that ties come out in the embedded
  index's order);
* for the same reason hybrid lists are fused here, as the embedded index fuses them
  (``[dense] fusion``), not by Qdrant, whose fusion ranks equal scores by point id.

Hits are loaded from the truth by row id (as for the embedded index) and their roles checked
again there; a point whose chunk is gone (a concurrent delete) is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from glassrag.dense.embeddings import check_model
from glassrag.records import Fusion, Hit, Mode, Principal
from glassrag.retrieval.fusion import fuse
from glassrag.retrieval.qdrant_index import DENSE, SPARSE, QdrantIndex
from glassrag.retrieval.query_terms import MAX_QUERY_TERMS, rarest
from glassrag.retrieval.readable_bm25 import by_chunk_order
from glassrag.retrieval.sparse_bm25 import query_vector, term_index
from glassrag.settings import DenseSettings
from glassrag.store.database import Store
from glassrag.text.analysis import analyze, unique_terms

if TYPE_CHECKING:
    from glassrag.dense.retriever import DenseRetriever

Ranked = list[tuple[int, float]]  # (row id, score), best first


class Found(NamedTuple):
    """What a retrieval found, field for field a :class:`glassrag.retrieval.search.Retrieval`
    (which the caller builds: this module sits below that one)."""

    mode: Mode
    query_terms: tuple[str, ...]
    hits: list[Hit]
    blocked_count: int
    blocked: list[Hit]


class _Scope:
    """One principal's view of the collection: filters and search parameters."""

    def __init__(self, store: Store, index: QdrantIndex, principal: Principal,
                 conceal: bool) -> None:
        from qdrant_client import models as m

        self.store, self.index, self.principal, self.m = store, index, principal, m
        self.conceal = conceal and not principal.admin
        roles = None if principal.admin else m.FieldCondition(
            key="roles", match=m.MatchAny(any=list(principal.roles)))
        self.roles = roles
        self.filtered = roles is not None
        self.readable = m.Filter(must=[roles]) if roles is not None else None
        self.unreadable = m.Filter(must_not=[roles]) if roles is not None else None

    def params(self, exact: bool = False) -> Any:
        if not self.conceal:
            return None
        idf = self.m.IdfCorpusParams(corpus=self.readable) if self.readable else None
        return self.m.SearchParams(idf=idf, exact=exact)

    def sparse(self, terms: Sequence[str]) -> Any:
        indices, values = query_vector(terms)
        return self.m.SparseVector(indices=indices, values=values)

    def query(self, using: str, query: Any, flt: Any, limit: int, threshold: float | None = None,
              params: Any = None) -> Ranked:
        if limit < 1:
            return []
        found = self.index.call("query_points", self.index.alias, query=query, using=using,
                                query_filter=flt, limit=limit, score_threshold=threshold,
                                search_params=params, with_payload=False)
        return [(int(p.id), float(p.score)) for p in found.points]

    def ranked(self, using: str, query: Any, limit: int, threshold: float | None = None,
               exact: bool = False) -> Ranked:
        """The readable top-``limit``, equal scores ordered by (doc_id, ordinal) as the
        embedded index orders them (and never by point id, which hidden documents shift).
        Every tie at the cut is fetched first, so that order, not Qdrant's, decides which
        of them make the cut."""
        params = self.params(exact)
        found = self.query(using, query, self.readable, limit + 1, threshold, params)
        if len(found) > limit and found[limit][1] >= _floor(found[limit - 1][1]):
            found = self._with_ties(using, query, limit, found[limit - 1][1], threshold, params)
        return [(rowid, score) for score, rowid in
                by_chunk_order(self.store, [(score, rowid) for rowid, score in found])][:limit]

    def _with_ties(self, using: str, query: Any, limit: int, cut: float,
                   threshold: float | None, params: Any) -> Ranked:
        """Every readable point scoring at least (about) ``cut``, however many."""
        floor = _floor(cut)
        if threshold is not None:
            floor = max(floor, threshold)
        more = 2 * limit
        while True:
            found = self.query(using, query, self.readable, more, floor, params)
            if len(found) < more:
                return found
            more *= 2

    def count_blocked(self, terms: Sequence[str]) -> int:
        if self.roles is None or not terms:
            return 0
        m = self.m
        # The role condition first: local mode checks conditions in order, and the cheap
        # one rules out every readable chunk before the terms are compared.
        flt = m.Filter(must=[m.Filter(must_not=[self.roles]),
                             m.FieldCondition(key="terms", match=m.MatchAny(any=list(terms)))])
        return int(self.index.call("count", self.index.alias, count_filter=flt,
                                   exact=True).count)

    def doc_freq(self, term: str) -> int:
        """Readable chunks holding ``term``."""
        m = self.m
        must: list[Any] = [m.FieldCondition(key="terms", match=m.MatchValue(value=term))]
        flt = m.Filter(must=must + ([self.roles] if self.roles is not None else []))
        return int(self.index.call("count", self.index.alias, count_filter=flt,
                                   exact=True).count)


def readable_counts(store: Store, index: QdrantIndex,
                    principal: Principal) -> Callable[[list[str]], list[int]]:
    """How many chunks ``principal`` may read hold each of some terms (for the query's
    unknown and rare names, :func:`~glassrag.retrieval.search.with_name_counts`)."""
    scope = _Scope(store, index, principal, conceal=False)
    return lambda terms: [scope.doc_freq(t) for t in terms]


def _floor(cut: float) -> float:
    """The lowest score that ties with ``cut``: float32 scores of equal chunks are equal,
    the margin only absorbs rounding."""
    return cut - max(abs(cut) * 1e-6, 1e-9)


def search_terms(scope: _Scope, query: str) -> list[str]:
    """The query's distinct analysed terms; above :data:`MAX_QUERY_TERMS` the rarest among
    the chunks the principal may read (see :mod:`glassrag.retrieval.query_terms`)."""
    terms = unique_terms(analyze(query))
    if len(terms) <= MAX_QUERY_TERMS:
        return terms
    return rarest(terms, [scope.doc_freq(t) for t in terms])


def retrieve(store: Store, index: QdrantIndex, query: str, principal: Principal, top_k: int,
             mode: Mode, blocked_limit: int, dense: DenseRetriever | None,
             query_vector: np.ndarray | None, settings: DenseSettings, conceal: bool,
             ) -> Found:
    """``search.retrieve`` for bm25, dense and hybrid (``dense`` and the query's vector from
    its ``embed_query`` given for the latter two). Touches the store and Qdrant, never a
    model: the caller embeds the query first. A bm25 query without searchable terms finds
    nothing (no ``query_terms``), for the caller to refuse."""
    scope = _Scope(store, index, principal, conceal)
    terms = search_terms(scope, query)
    if mode == Mode.BM25:
        if not terms:
            return Found(Mode.BM25, (), [], 0, [])
        lists = {"bm25": scope.ranked(SPARSE, scope.sparse(terms), top_k)}
        blocked_count = scope.count_blocked(terms)
        blocked = scope.query(SPARSE, scope.sparse(terms), scope.unreadable,
                              blocked_limit) if blocked_count else []
        return _retrieval(store, scope, Mode.BM25, terms, lists, None, blocked_count,
                          {"bm25": blocked}, top_k, blocked_limit)
    assert dense is not None and query_vector is not None
    vector, floor = _dense_query(store, index, dense, query_vector, settings)
    if mode == Mode.DENSE or vector is None:
        lists = {"dense": scope.ranked(DENSE, vector, top_k, floor, exact=True)
                 if vector is not None else []}
        blocked = (scope.query(DENSE, vector, scope.unreadable, max(blocked_limit, top_k, 1),
                               floor) if vector is not None and scope.filtered else [])
        return _retrieval(store, scope, mode, terms, lists, None, len(blocked),
                          {"dense": blocked[:blocked_limit]}, top_k, blocked_limit)
    return _hybrid(store, scope, terms, vector, floor, settings, top_k, blocked_limit)


def _dense_query(store: Store, index: QdrantIndex, dense: DenseRetriever,
                 query_vector: np.ndarray, settings: DenseSettings,
                 ) -> tuple[list[float] | None, float]:
    """The query's vector as Qdrant takes it (None when the collection holds no dense
    vectors: nothing has been embedded yet) and the cosine below which a hit is not
    evidence."""
    embedder = dense.embedder
    check_model(store.db, embedder)
    floor = settings.min_cosine(dense.spec)
    if index.model != embedder.name:
        return None, floor
    return [float(x) for x in query_vector], floor


def _hybrid(store: Store, scope: _Scope, terms: list[str], vector: list[float], floor: float,
            settings: DenseSettings, top_k: int, blocked_limit: int) -> Found:
    pool = max(top_k, settings.candidates)
    if scope.conceal:
        lists = {"dense": scope.ranked(DENSE, vector, pool, floor, exact=True)}
        if terms:
            lists = {"bm25": scope.ranked(SPARSE, scope.sparse(terms), pool), **lists}
        method: str = Fusion(settings.fusion).value
        fused = [(f.key, f.score) for f in fuse(
            lists, method, k=settings.rrf_k,
            weights={"bm25": settings.bm25_weight, "dense": settings.dense_weight},
            floor=settings.fusion_floor)]
    else:
        lists, fused = _fused_by_qdrant(scope, terms, vector, floor, settings, pool, top_k,
                                        scope.readable)
        method = scope.index.config.fusion
    blocked_lists: dict[str, Ranked] = {}
    blocked_fused: Ranked = []
    dense_blocked = 0
    if scope.filtered:
        # Counted like the dense mode's: blocked rows at or above the floor among the best.
        blocked_lists, blocked_fused = _fused_by_qdrant(
            scope, terms, vector, floor, settings, max(blocked_limit, top_k, 1),
            max(blocked_limit, 1), scope.unreadable)
        dense_blocked = len(blocked_lists.get("dense", []))
    # As for the embedded index: the larger of the retrievers' counts.
    count = max(scope.count_blocked(terms), dense_blocked)
    return _retrieval(store, scope, Mode.HYBRID, terms, lists, (method, fused), count,
                      {**blocked_lists, method: blocked_fused}, top_k, blocked_limit,
                      blocked_method=method)


def _fused_by_qdrant(scope: _Scope, terms: list[str], vector: list[float], floor: float,
                     settings: DenseSettings, pool: int, limit: int,
                     flt: Any) -> tuple[dict[str, Ranked], Ranked]:
    """Each retriever's list and Qdrant's fusion of them, in one batch request."""
    m = scope.m
    if limit < 1:
        return {}, []
    legs: dict[str, Any] = {}
    if terms:
        legs["bm25"] = m.Prefetch(query=scope.sparse(terms), using=SPARSE, filter=flt, limit=pool)
    legs["dense"] = m.Prefetch(query=vector, using=DENSE, filter=flt, limit=pool,
                               score_threshold=floor)
    if scope.index.config.fusion == "rrf":
        weights = [settings.bm25_weight, settings.dense_weight][-len(legs):]
        # Qdrant's RRF is 1 / (k + rank - 1) (ranks from 1), glassrag's 1 / (k + rank): one
        # more k gives the embedded index's fused scores.
        fusion: Any = m.RrfQuery(rrf=m.Rrf(k=settings.rrf_k + 1, weights=None if set(
            weights) == {1.0} else weights))
    else:
        fusion = m.FusionQuery(fusion=m.Fusion.DBSF)
    requests = [m.QueryRequest(query=leg.query, using=leg.using, filter=flt, limit=pool,
                               score_threshold=leg.score_threshold) for leg in legs.values()]
    requests.append(m.QueryRequest(prefetch=list(legs.values()), query=fusion, filter=flt,
                                   limit=limit))
    answers = scope.index.call("query_batch_points", scope.index.alias, requests=requests)
    ranked = [[(int(p.id), float(p.score)) for p in a.points] for a in answers]
    return dict(zip(legs, ranked[:-1], strict=True)), ranked[-1]


def _retrieval(store: Store, scope: _Scope, mode: Mode, terms: list[str],
               lists: dict[str, Ranked], fused: tuple[str, Ranked] | None, blocked_count: int,
               blocked_lists: dict[str, Ranked], top_k: int, blocked_limit: int,
               blocked_method: str | None = None) -> Found:
    order = fused[1] if fused else next(iter(lists.values()))
    hits = _hits(store, terms, order, lists, fused[0] if fused else None, top_k)
    blocked_order = (blocked_lists.get(blocked_method, []) if blocked_method
                     else next(iter(blocked_lists.values()), []))
    blocked_legs = {n: r for n, r in blocked_lists.items() if n != blocked_method}
    blocked = _hits(store, terms, blocked_order, blocked_legs, blocked_method, blocked_limit)
    # The truth's roles decide again (defence in depth: Qdrant filtered inside its search).
    can_read = scope.principal.can_read
    return Found(mode, tuple(terms), [h for h in hits if can_read(h.chunk.roles)],
                 blocked_count, [h for h in blocked if not can_read(h.chunk.roles)])


def _hits(store: Store, terms: list[str], order: Ranked, lists: dict[str, Ranked],
          method: str | None, limit: int) -> list[Hit]:
    """Hits for the best ``limit`` of ``order`` loaded from the truth, with each retriever's
    score and rank."""
    if limit < 1 or not order:
        return []
    order = order[:limit]
    rows = store.chunks_with_tokens([rowid for rowid, _ in order])
    per = {name: {rowid: (score, rank) for rank, (rowid, score) in enumerate(ranked, 1)}
           for name, ranked in lists.items()}
    hits = []
    for rank, (rowid, score) in enumerate(order, start=1):
        row = rows.get(rowid)
        if row is None:  # the index is ahead of a concurrent delete: skip, never guess
            continue
        chunk, tokens = row
        present = set(tokens.split())
        scores = {n: p[rowid][0] for n, p in per.items() if rowid in p}
        ranks = {n: p[rowid][1] for n, p in per.items() if rowid in p}
        if method is not None:
            scores[method], ranks[method] = score, rank
        hits.append(Hit(chunk=chunk, score=score,
                        matched_terms=tuple(t for t in terms if t in present),
                        scores=scores, ranks=ranks))
    return hits


def explain(store: Store, index: QdrantIndex, terms: Sequence[str], rowid: int,
            principal: Principal, conceal: bool) -> dict[str, float]:
    """Each term's BM25 contribution to one chunk, as the search scored it (``inspect``)."""
    scope = _Scope(store, index, principal, conceal)
    m = scope.m
    if not terms:
        return {}
    only = m.Filter(must=[m.HasIdCondition(has_id=[rowid])])
    requests = [m.QueryRequest(query=m.SparseVector(indices=[term_index(t)], values=[1.0]),
                               using=SPARSE, filter=only, limit=1, params=scope.params())
                for t in terms]
    answers = index.call("query_batch_points", index.alias, requests=requests)
    return {t: float(a.points[0].score) for t, a in zip(terms, answers, strict=True)
            if a.points}
