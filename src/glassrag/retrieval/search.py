"""Retrieval: BM25 over Tantivy, dense and hybrid, and the two plain scorers (overlap, terms).

Every mode applies the principal's roles while ranking, before top-k, and returns the
permitted hits with only a *count* of matching chunks the principal may not read.

With ``conceal`` (the policy applied to a non-admin) nothing a principal gets back may
depend on chunks it cannot read: BM25 is scored with the readable set's statistics (see
:mod:`glassrag.readable_bm25`) and equal scores are ordered by (doc_id, ordinal), never by
row ids, which hidden documents shift.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Union

from glassrag.errors import EmptyQuery, InvalidInput
from glassrag.records import DENSE_MODES, Fusion, Hit, Mode, Principal
from glassrag.retrieval.fusion import fuse
from glassrag.retrieval.lexical import LexicalIndex, LexicalMatch
from glassrag.retrieval.query_terms import doc_freqs, query_terms
from glassrag.retrieval.scorers import overlap_score, overlap_terms, terms_score, validate_terms
from glassrag.retrieval.unknown_words import unknown_words
from glassrag.settings import MAX_TOP_K, DenseSettings
from glassrag.store.database import Store
from glassrag.text.analysis import has_cjk, identifiers, name_terms, unique_terms

if TYPE_CHECKING:
    import numpy as np

    from glassrag.dense.retriever import DenseRetriever
    from glassrag.retrieval.qdrant_index import QdrantIndex
    from glassrag.vectors.index import VectorMatch

# The one limit on the length of a query or question, on every surface.
MAX_QUERY_CHARS = 20_000
_SURROGATE = re.compile("[\ud800-\udfff]")
# Below this many chunks Tantivy's posting walks are short: no precomputed term scores.
IMPACTS_MIN_DOCS = 20_000
# A name that only this many readable chunks hold is the thing a question is about: a quote
# from none of them answers something else (the page size of Node's SQLite module, asked of
# a sentence on REPL defaults, when one page is all that names SQLite). Measured on the docs
# QA sets, the names that a right answer's chunks lacked were held by 13 chunks or more
# (the project's own name, a platform), those of the near misses by one.
RARE_NAME_CHUNKS = 2
# Settings for a single retriever's list, where no fusion applies.
_SINGLE = DenseSettings()
# The engine behind bm25, dense and hybrid: ``[index] backend`` embedded or qdrant.
SearchIndex = Union[LexicalIndex, "QdrantIndex"]


@dataclass(frozen=True)
class Retrieval:
    """What a retriever found: permitted hits (best first) and the true blocked count.

    ``blocked`` holds the best blocked candidates. It exists for the status decision and the
    audit trace only; nothing that reaches a non-admin principal is built from it.
    """

    mode: Mode
    query_terms: tuple[str, ...]
    hits: list[Hit]
    blocked_count: int
    blocked: list[Hit] = field(default_factory=list)
    #: Names in the query (identifiers, Latin words in CJK text: see
    #: :func:`~glassrag.text.analysis.name_terms`) that no chunk the principal may read holds.
    unknown_names: tuple[str, ...] = ()
    #: bm25: words of the query that everyday English rarely uses and that no chunk the
    #: principal may read holds in any form (:mod:`glassrag.retrieval.unknown_words`). A word
    #: has synonyms that an embedder or a rewritten query may bridge, a name has none.
    unknown_words: tuple[str, ...] = ()
    #: Names in the query that only a few chunks the principal may read hold (at most
    #: :data:`RARE_NAME_CHUNKS`), each as the forms it may appear as: an answer must quote one
    #: of those chunks (:mod:`glassrag.answer.named`).
    rare_names: tuple[tuple[str, ...], ...] = ()
    #: Dense and hybrid: how far the best permitted dense cosine stands above the median of
    #: the query's permitted dense candidates, and the margin it needs (``[dense]
    #: min_margin``) for dense evidence to count; None in the other modes.
    dense_margin: float | None = None
    dense_min_margin: float | None = None
    #: Hybrid: each retriever's weight in the fusion of this query (``bm25_weight`` and
    #: ``dense_weight``, BM25's multiplied by ``identifier_bm25_factor`` when the query names
    #: an identifier); None in the other modes.
    fusion_weights: dict[str, float] | None = None
    #: Dense and hybrid: the query's own vector, so that the answer stage can compare the
    #: query with what it quotes without running the model on the query again.
    query_vector: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def unknown(self) -> tuple[str, ...]:
        """What the query names or says that no readable chunk holds: no answer quotes
        anything for such a query."""
        return self.unknown_names + self.unknown_words

    @property
    def dense_stands_out(self) -> bool:
        """Whether the dense evidence reaches its margin (always, outside dense modes)."""
        return (self.dense_margin is None or self.dense_min_margin is None
                or self.dense_margin >= self.dense_min_margin)


def check_text(value: str, field: str) -> str:
    """``value`` unchanged, or InvalidInput naming ``field`` if it is not valid Unicode.

    A lone UTF-16 surrogate ("\\ud800", from a JSON escape or from undecodable bytes on a
    command line) cannot be encoded as UTF-8, so the index, SQLite and every JSON reply
    would fail on it; it is refused here, at the edge, with its position (never echoed).
    """
    found = _SURROGATE.search(value)
    if found is not None:
        position = found.start() + 1
        raise InvalidInput(
            f"{field}: character {position} is a lone surrogate (U+{ord(found.group()):04X}),"
            " which is not valid Unicode", field=field, position=position,
        )
    return value


def check_top_k(top_k: int) -> int:
    """``top_k`` if it is an integer from 1 to :data:`MAX_TOP_K`, else InvalidInput."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        # The value is not echoed: str() of a huge int is itself an error (over 4300 digits).
        raise InvalidInput(f"top_k must be an integer from 1 to {MAX_TOP_K}", field="top_k",
                           limit=MAX_TOP_K)
    return top_k


def check_query(query: str, field: str = "query") -> str:
    """The stripped query; EmptyQuery or InvalidInput (naming ``field``) if it is unusable."""
    if not isinstance(query, str) or not query.strip():
        raise EmptyQuery(f"the {field} is empty", field=field)
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"the {field} is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}",
            field=field,
        )
    return check_text(query, field).strip()


def fusion_settings(settings: DenseSettings, query: str) -> DenseSettings:
    """``settings`` as hybrid search fuses for ``query``: one naming an identifier
    (:func:`~glassrag.text.analysis.identifiers`) weighs BM25 ``identifier_bm25_factor``
    times ``bm25_weight``. Only BM25 matches ``fs.createReadStream`` as that exact name; to
    an embedder it reads like every other stream function."""
    factor = settings.identifier_bm25_factor
    if factor == 1.0 or not identifiers(query):
        return settings
    return settings.model_copy(update={"bm25_weight": settings.bm25_weight * factor})


def _with_weights(found: Retrieval, settings: DenseSettings, weighed: bool) -> Retrieval:
    """``found`` with the fusion weights it was ranked with, when it is a hybrid search whose
    fusion ``weighed`` its retrievers (reciprocal rank fusion takes no weights)."""
    if found.mode != Mode.HYBRID or not weighed:
        return found
    return dataclasses.replace(found, fusion_weights={"bm25": settings.bm25_weight,
                                                      "dense": settings.dense_weight})


def _needs_embedder(mode: str) -> InvalidInput:
    """The error for a dense mode on a knowledge base without an embedder; it names the
    setting and the command, which every caller can act on (not a CLI flag)."""
    return InvalidInput(
        f"mode {mode!r} needs an embedder, and this knowledge base has none: set [dense] "
        "embedder in glassrag.toml or embed it (`glassrag embed --embedder SPEC`)",
        field="mode")


def retrieve(
    store: Store,
    lexical: SearchIndex,
    query: str,
    principal: Principal,
    top_k: int,
    mode: str = Mode.BM25,
    terms: Sequence[str] | None = None,
    blocked_limit: int = 0,
    dense: DenseRetriever | None = None,
    dense_settings: DenseSettings | None = None,
    rerank: str = "",
    conceal: bool = False,
    field: str = "query",
    guard: AbstractContextManager[object] | None = None,
    words: bool = False,
) -> Retrieval:
    """Rank chunks for ``query`` with the principal's roles applied inside the ranking.

    ``conceal``: score and order with nothing but what ``principal`` may read (see the
    module docstring); admins are never concealed from, so it does nothing for them.
    ``field`` is the caller's name for the text (``question`` for an ask), named by an
    error about it. ``words``: in bm25 mode, also find the query's uncommon words that no
    readable chunk holds (:attr:`Retrieval.unknown_words`), which only an answer reads.

    ``guard`` (e.g. the knowledge base's lock) is held around the store and index access
    and around nothing else: the query is embedded before it is taken (the embedder may be a
    remote call with retries) and a reranker (possibly a cross-encoder) runs after it is
    released, so other requests go on while a model runs.
    """
    guard = guard if guard is not None else nullcontext()
    conceal = conceal and not principal.admin
    query = check_query(query, field)
    check_top_k(top_k)
    if terms:
        terms = [check_text(t, "terms") if isinstance(t, str) else t for t in terms]
        mode = Mode.TERMS
    dense_settings = dense_settings or DenseSettings()
    if mode == Mode.HYBRID:
        dense_settings = fusion_settings(dense_settings, query)
    if not isinstance(lexical, LexicalIndex):
        found = _on_qdrant(store, lexical, query, principal, top_k, mode, terms, blocked_limit,
                           dense, dense_settings, rerank, conceal, field, guard, words)
        # Under conceal glassrag fuses as on the embedded index; otherwise Qdrant does, and
        # of its fusions only rrf is sent the weights (dbsf takes none).
        weighed = (dense_settings.fusion == Fusion.WEIGHTED if conceal
                   else lexical.config.fusion == Fusion.RRF)
        return _with_weights(found, dense_settings, weighed)
    if mode in DENSE_MODES:
        if dense is None:
            raise _needs_embedder(mode)
        vector = dense.embed_query(query)
        with guard:
            found = _hybrid(store, lexical, dense, dense_settings, query,
                            vector, principal, top_k, blocked_limit,
                            only_dense=mode == Mode.DENSE, conceal=conceal)
            found = _with_name_counts(found, store, lexical, query, principal, words=False)
        return _with_weights(_reranked(found, query, rerank or dense_settings.rerank, top_k),
                             dense_settings, dense_settings.fusion == Fusion.WEIGHTED)
    if mode == Mode.BM25:
        with guard:
            found = _bm25(store, lexical, query, principal, top_k, blocked_limit, conceal,
                          field)
            found = _with_name_counts(found, store, lexical, query, principal, words=words)
        return _reranked(found, query, rerank, top_k)
    return _scanned(store, query, principal, top_k, mode, terms, blocked_limit, field, guard)


def _scanned(store: Store, query: str, principal: Principal, top_k: int, mode: str,
             terms: Sequence[str] | None, blocked_limit: int, field: str,
             guard: AbstractContextManager[object]) -> Retrieval:
    """The modes that scan the truth and use no index: overlap and terms."""
    if mode == Mode.OVERLAP:
        with guard:
            return _overlap(store, query, principal, top_k, blocked_limit, field)
    if mode == Mode.TERMS:
        if not terms:
            raise InvalidInput("mode 'terms' needs explicit terms (--terms)", field="terms")
        checked = validate_terms(list(terms))
        with guard:
            return _terms(store, checked, principal, top_k, blocked_limit)
    raise InvalidInput(f"unknown mode {mode!r}; choose one of {', '.join(Mode)}", field="mode")


def _on_qdrant(store: Store, index: QdrantIndex, query: str, principal: Principal, top_k: int,
               mode: str, terms: Sequence[str] | None, blocked_limit: int,
               dense: DenseRetriever | None, dense_settings: DenseSettings, rerank: str,
               conceal: bool, field: str, guard: AbstractContextManager[object],
               words: bool) -> Retrieval:
    """bm25, dense and hybrid on the Qdrant index (see :mod:`glassrag.retrieval.qdrant_search`),
    with ``guard`` held as for the embedded index: not while the query is embedded or the
    hits reranked."""
    from glassrag.retrieval import qdrant_search

    if mode not in (Mode.BM25, *DENSE_MODES):
        return _scanned(store, query, principal, top_k, mode, terms, blocked_limit, field,
                        guard)
    vector = None
    if mode in DENSE_MODES:
        if dense is None:
            raise _needs_embedder(mode)
        vector = dense.embed_query(query)
    with guard:
        found = qdrant_search.retrieve(store, index, query, principal, top_k, Mode(mode),
                                       blocked_limit, dense, vector, dense_settings, conceal)
        if mode == Mode.BM25 and not found.query_terms:
            raise _no_terms(field)
        retrieval = with_name_counts(Retrieval(*found), query,
                                     qdrant_search.readable_counts(store, index, principal),
                                     words=words and mode == Mode.BM25)
    if mode != Mode.BM25 and not rerank:
        rerank = dense_settings.rerank
    return _reranked(retrieval, query, rerank, top_k)


def _bm25(store: Store, lexical: LexicalIndex, query: str, principal: Principal,
          top_k: int, blocked_limit: int, conceal: bool = False,
          field: str = "query") -> Retrieval:
    readable = readable_sets(store, principal)
    terms = query_terms(query, store, lexical, readable)
    if not terms:
        raise _no_terms(field)
    matches, blocked_count, blocked_matches = _lexical(
        store, lexical, terms, readable, top_k, blocked_limit, conceal
    )
    return _load_retrieval(store, principal, Mode.BM25, terms,
                           {"bm25": Matches(matches, blocked_count, blocked_matches)},
                           _SINGLE, top_k, blocked_limit)


def _lexical(store: Store, lexical: LexicalIndex, terms: list[str], readable: set[int] | None,
             limit: int, blocked_limit: int, conceal: bool,
             ) -> tuple[list[LexicalMatch], int, list[LexicalMatch]]:
    """BM25 with the index's statistics, or with the readable set's under ``conceal``."""
    if conceal and readable is not None:
        from glassrag.retrieval import readable_bm25

        return readable_bm25.search(store, lexical, terms, readable, limit, blocked_limit)
    if _impacts_apply(lexical, terms):
        # numpy is loaded here, for CJK searches on large indexes only (see impacts).
        from glassrag.retrieval import impacts

        found = impacts.search(store, lexical, terms, readable, limit, blocked_limit)
        if found is not None:
            return found
    return lexical.search(terms, readable, limit, blocked_limit)


def _impacts_apply(lexical: LexicalIndex, terms: Sequence[str]) -> bool:
    """Whether a search goes through the precomputed term scores of
    :mod:`~glassrag.retrieval.impacts`: a query with a CJK term on a large index, where
    Tantivy walks long posting lists that block-max WAND cannot skip."""
    return any(map(has_cjk, terms)) and lexical.num_docs() >= IMPACTS_MIN_DOCS


def _with_name_counts(found: Retrieval, store: Store, lexical: LexicalIndex, query: str,
                      principal: Principal, *, words: bool) -> Retrieval:
    """``found`` with the query's names that no readable chunk holds, and those only a few
    hold (counted among the chunks ``principal`` may read, so hidden documents never decide
    it)."""
    return with_name_counts(found, query, lambda tokens: doc_freqs(
        lexical, tokens, readable_sets(store, principal), set(store.rolesets())), words=words)


def with_name_counts(found: Retrieval, query: str,
                     readable_counts: Callable[[list[str]], list[int]], *,
                     words: bool) -> Retrieval:
    """``found`` with the query's names (:func:`~glassrag.text.analysis.name_terms`) of
    which ``readable_counts`` (how many chunks the principal may read hold each term, from
    whichever index serves the search) finds no form at all, and those it finds in at most
    :data:`RARE_NAME_CHUNKS` chunks. With ``words`` (bm25 mode), also the uncommon words
    that no readable chunk holds (:func:`~glassrag.retrieval.unknown_words.unknown_words`):
    a word has synonyms that an embedder may bridge ("reimbursed" for "refund"), a name has
    none, so in dense and hybrid modes only names decide it."""
    names = name_terms(query)
    tokens = list(dict.fromkeys(t for name in names for t in name))
    counts = dict(zip(tokens, readable_counts(tokens), strict=True)) if tokens else {}
    held = {name: max(counts[t] for t in name) for name in names}
    unknown = tuple(name[0] for name, most in held.items() if not most)
    said = unknown_words(query, found.hits, set(names), readable_counts) if words else ()
    rare = tuple(name for name, most in held.items() if 0 < most <= RARE_NAME_CHUNKS)
    if not unknown and not said and not rare:
        return found
    return dataclasses.replace(found, unknown_names=unknown, unknown_words=said,
                               rare_names=rare)


def readable_sets(store: Store, principal: Principal) -> set[int] | None:
    """The role-set ids ``principal`` may read (None: an admin, no filter)."""
    if principal.admin:
        return None
    return {rid for rid, roles in store.rolesets().items() if principal.can_read(roles)}


def _hybrid(store: Store, lexical: LexicalIndex, dense: DenseRetriever,
            settings: DenseSettings, query: str, vector: np.ndarray, principal: Principal,
            top_k: int, blocked_limit: int, only_dense: bool, conceal: bool = False,
            ) -> Retrieval:
    """Dense retrieval, or dense and BM25 fused. Both filter inside their own search.

    Fusion works on row ids and scores; only the fused top-k (and the few blocked
    candidates the status needs) are loaded from SQLite.
    """
    # Dense mode reads as many candidates as hybrid too: they are the baseline its margin is
    # measured against (only the best top_k become hits).
    pool = max(top_k, settings.candidates)
    readable = readable_sets(store, principal)
    terms = query_terms(query, store, lexical, readable)
    permitted, blocked_count, blocked = dense.search(
        vector, readable, pool, blocked_limit, settings.min_cosine(dense.spec), exact=conceal)
    if conceal:
        permitted = _by_chunk_order(store, permitted)
    dense_found = Matches(permitted, blocked_count, blocked)
    margin, needed = dense_margin(permitted), settings.margin(dense.spec)
    if only_dense:
        found = _load_retrieval(store, principal, Mode.DENSE, terms, {"dense": dense_found},
                                settings, top_k, blocked_limit)
    else:
        lexical_found = (Matches(*_lexical(store, lexical, terms, readable, pool,
                                           blocked_limit, conceal))
                         if terms else Matches([], 0, []))
        found = _load_retrieval(store, principal, Mode.HYBRID, terms,
                                {"bm25": lexical_found, "dense": dense_found}, settings,
                                top_k, blocked_limit)
    return dataclasses.replace(found, dense_margin=margin, dense_min_margin=needed,
                               query_vector=vector)


def dense_margin(matches: Sequence[VectorMatch]) -> float | None:
    """The best cosine minus the median cosine of ``matches`` (the query's dense candidates),
    or None with fewer than two. A cosine relative to the query's own candidates: embedders
    differ in where unrelated text scores (e5 puts it at 0.8-0.93), not in the passage that
    answers standing out from the rest."""
    return cosine_margin([m.score for m in matches])


def cosine_margin(cosines: Sequence[float]) -> float | None:
    """:func:`dense_margin` of the cosines themselves."""
    if len(cosines) < 2:
        return None
    return max(cosines) - float(statistics.median(cosines))


class Matches(NamedTuple):
    """One retriever's answer before the chunks are loaded: permitted (rowid, score)
    matches best first, how many matching chunks were not readable, and the best of those."""

    permitted: Sequence[LexicalMatch | VectorMatch]
    blocked_count: int
    blocked: Sequence[LexicalMatch | VectorMatch]


def _by_chunk_order(store: Store, matches: Sequence[VectorMatch]) -> list[VectorMatch]:
    """Equal cosines ordered by (doc_id, ordinal) rather than by row position."""
    from glassrag.retrieval.readable_bm25 import by_chunk_order
    from glassrag.vectors.index import VectorMatch

    return [VectorMatch(rowid, score)
            for score, rowid in by_chunk_order(store, [(m.score, m.rowid) for m in matches])]


def _load_retrieval(store: Store, principal: Principal, mode: Mode, terms: list[str],
                    found: dict[str, Matches], settings: DenseSettings, top_k: int,
                    blocked_limit: int) -> Retrieval:
    """Fuse the retrievers' matches, load the best permitted and blocked candidates and
    re-check their roles against SQLite (defence in depth: each index already filtered
    inside its search)."""
    permitted = _fused_hits(store, terms, {n: f.permitted for n, f in found.items()}, settings,
                            top_k)
    blocked = _fused_hits(store, terms, {n: f.blocked for n, f in found.items()}, settings,
                          blocked_limit)
    # "Matching chunks the principal may not read": the larger of the retrievers' counts, a
    # lower bound on their union (which no single index can count).
    return Retrieval(mode, tuple(terms),
                     [h for h in permitted if principal.can_read(h.chunk.roles)],
                     max(f.blocked_count for f in found.values()),
                     [h for h in blocked if not principal.can_read(h.chunk.roles)])


def _fused_hits(store: Store, terms: list[str],
                lists: dict[str, Sequence[LexicalMatch | VectorMatch]],
                settings: DenseSettings, limit: int) -> list[Hit]:
    """Fuse ranked (rowid, score) lists, then load only the best ``limit`` chunks."""
    if limit < 1:
        return []
    method = Fusion(settings.fusion)
    fused = fuse({name: [(m.rowid, m.score) for m in matches] for name, matches in lists.items()},
                 method, k=settings.rrf_k,
                 weights={"bm25": settings.bm25_weight, "dense": settings.dense_weight},
                 limit=limit, floor=settings.fusion_floor)
    rows = store.chunks_with_tokens([f.key for f in fused])
    # Stored tokens are joined by single spaces and no token holds a space, so a term is
    # present exactly when " term " occurs in " tokens " (cheaper than a set per chunk).
    needles = [(t, f" {t} ") for t in terms]
    hits = []
    for f in fused:
        row = rows.get(f.key)
        if row is None:  # index ahead of a concurrent delete; skip, never guess
            continue
        chunk, tokens = row
        padded = f" {tokens} "
        per_scores, per_ranks = dict(f.scores), dict(f.ranks)
        if len(lists) > 1:
            per_scores[method.value], per_ranks[method.value] = f.score, f.rank
        hits.append(Hit(chunk=chunk, score=f.score,
                        matched_terms=tuple(t for t, n in needles if n in padded),
                        scores=per_scores, ranks=per_ranks))
    return hits


def _reranked(found: Retrieval, query: str, rerank: str, top_k: int) -> Retrieval:
    """Apply the optional rerank stage to permitted and blocked candidates alike."""
    if not rerank:
        return found
    from glassrag.retrieval.rerank import (
        CrossEncoderReranker,
        LexicalCoverageReranker,
        cross_encoder,
    )

    reranker: LexicalCoverageReranker | CrossEncoderReranker
    if rerank == "lexical":
        reranker = LexicalCoverageReranker()
    elif rerank.startswith("cross:"):
        reranker = cross_encoder(rerank.removeprefix("cross:"))
    else:
        raise InvalidInput(f"unknown rerank {rerank!r}; use lexical or cross:PATH",
                           field="rerank")
    return dataclasses.replace(
        found, hits=reranker.rerank(query, found.hits)[:top_k],
        blocked=reranker.rerank(query, found.blocked) if found.blocked else [])


def _no_terms(field: str) -> EmptyQuery:
    return EmptyQuery(f"the {field} has no searchable terms (only stop words or punctuation)",
                      field=field)


def _overlap(store: Store, query: str, principal: Principal, top_k: int,
             blocked_limit: int, field: str = "query") -> Retrieval:
    terms = unique_terms(overlap_terms(query))
    if not terms:
        raise _no_terms(field)
    allowed: list[Hit] = []
    blocked: list[Hit] = []
    for chunk in store.iter_chunks():
        score, matched = overlap_score(query, chunk.title, chunk.text)
        if score == 0:
            continue
        hit = Hit(chunk=chunk, score=float(score), matched_terms=tuple(matched),
                  scores={"overlap": float(score)})
        (allowed if principal.can_read(chunk.roles) else blocked).append(hit)
    # The overlap scorer's order: score descending, then chunk_id.
    allowed.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    blocked.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    return Retrieval(Mode.OVERLAP, tuple(terms), _ranked(allowed[:top_k], "overlap"),
                     len(blocked), blocked[:blocked_limit])


def _terms(store: Store, terms: list[str], principal: Principal, top_k: int,
           blocked_limit: int) -> Retrieval:
    allowed: list[Hit] = []
    blocked: list[Hit] = []
    for chunk in store.iter_chunks():
        score, matched = terms_score(terms, chunk.text)
        if score == 0:  # a chunk matching no term is never selected
            continue
        hit = Hit(chunk=chunk, score=float(score), matched_terms=tuple(matched),
                  scores={"terms": float(score)})
        (allowed if principal.can_read(chunk.roles) else blocked).append(hit)
    # A stable sort on score alone keeps ingest order, then position in the document.
    allowed.sort(key=lambda h: -h.score)
    blocked.sort(key=lambda h: -h.score)
    return Retrieval(Mode.TERMS, tuple(terms), _ranked(allowed[:top_k], "terms"),
                     len(blocked), blocked[:blocked_limit])


def _ranked(hits: list[Hit], name: str) -> list[Hit]:
    return [
        Hit(chunk=h.chunk, score=h.score, matched_terms=h.matched_terms, scores=h.scores,
            ranks={name: rank})
        for rank, h in enumerate(hits, start=1)
    ]
