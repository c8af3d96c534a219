"""The vector index: exact search in numpy, FAISS HNSW above a size threshold.

Rows are kept grouped by *role set* -- the store's ``rolesets.id`` of their document's roles,
the same ids ``LexicalIndex.search`` filters on -- so the permission filter is a list of
contiguous blocks: an exact filtered scan reads only the readable blocks, and the HNSW filter
is a bitmap (faiss ``IDSelectorBitmap``) built from block ranges.

Filtered HNSW loses recall when few rows are readable, and also when few are readable *near
the query* (roles that follow topics: measured 0.17 at 10 % and 0.56 at 50 % readable on 1M
vectors). So the exact scan over the readable blocks is used when the global readable share
is under ``exact_fraction``, or when the share among the query's unfiltered HNSW neighbours
is; otherwise the filtered HNSW search runs with its beam widened by that local share.

Updates: below the HNSW threshold every change regroups the matrix (cheap numpy copies). With
an HNSW graph, which cannot delete, deleted rows are masked out (``live``) and new rows go to
a small exact-scanned *delta* segment until :meth:`VectorIndex.compact` rebuilds the graph.
``save``/``load`` keep it on disk (see :mod:`glassrag.vectors.persist` for the layout).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from glassrag.errors import InvalidInput
from glassrag.vectors.faisslib import load_faiss, one_omp_thread
from glassrag.vectors.hnsw import Calibration, build_graph, calibrate
from glassrag.vectors.persist import SavedIndex, SaveMarker, load_index, save_index
from glassrag.vectors.segment import Segment, empty_rows
from glassrag.vectors.topk import top_k

DEFAULT_HNSW_THRESHOLD = 200_000
DEFAULT_EXACT_FRACTION = 0.25


@dataclass(frozen=True)
class VectorMatch:
    """Same shape as ``lexical.LexicalMatch`` so retrieval code treats both alike."""

    rowid: int
    score: float


@dataclass
class VectorRows:
    """Columnar rows for the index: chunk rowids, their doc_ids and role-set ids, vectors."""

    rowids: np.ndarray
    doc_ids: list[str]
    rolesets: np.ndarray  # the store's rolesets.id per row
    vectors: np.ndarray
    missing: int = 0  # chunks that had no stored embedding (not yet embedded)

    def __len__(self) -> int:
        return int(self.rowids.shape[0])


@dataclass
class HnswParams:
    threshold: int = DEFAULT_HNSW_THRESHOLD
    exact_fraction: float = DEFAULT_EXACT_FRACTION
    m: int = 16
    ef_construction: int = 128
    ef_search: int = 128
    # Cap of the widened beam of filtered searches (see VectorIndex._hnsw).
    ef_max: int = 1024
    # Unfiltered neighbours sampled to estimate the readable share near a query.
    probe: int = 64
    # recall@10 the graph must reach on sample questions (see hnsw.calibrate).
    target_recall: float = 0.95


class VectorIndex:
    """Dense vectors of one model; ``search`` mirrors ``LexicalIndex.search``."""

    def __init__(self, dim: int, model: str = "", params: HnswParams | None = None) -> None:
        self.dim = dim
        self.model = model
        self.params = params or HnswParams()
        self.applied_seq = 0
        self.docs: list[str] = []
        self.doc_num: dict[str, int] = {}
        self.main = Segment.build(*empty_rows(dim))
        self.delta = Segment.build(*empty_rows(dim))
        self.hnsw: Any = None
        # What the last graph build measured; None before any build above the threshold.
        self.calibration: Calibration | None = None
        self._selectors: dict[tuple[int, ...], tuple[Any, np.ndarray, np.ndarray]] = {}
        # (main vectors, graph, file stem) as last saved: unchanged main is not rewritten.
        self._saved: SaveMarker | None = None

    # -- persistence --------------------------------------------------------------------
    @classmethod
    def load(cls, directory: Path, params: HnswParams | None = None) -> VectorIndex | None:
        """The index saved in ``directory``; None if absent or unreadable (rebuild it)."""
        found = load_index(directory)
        if found is None:
            return None
        saved, marker = found
        index = cls(saved.dim, saved.model, params)
        index.main, index.delta, index.hnsw = saved.main, saved.delta, saved.hnsw
        index.docs = saved.docs
        index.doc_num = {d: n for n, d in enumerate(saved.docs)}
        index.applied_seq = saved.applied_seq
        index.calibration = saved.calibration
        index._saved = marker
        return index

    def save(self, directory: Path) -> None:
        """Write the index atomically (``state.json`` last, with ``applied_seq``)."""
        self._saved = save_index(SavedIndex(
            dim=self.dim, model=self.model, main=self.main, delta=self.delta, hnsw=self.hnsw,
            docs=self.docs, applied_seq=self.applied_seq, calibration=self.calibration,
        ), directory, self._saved)

    # -- size ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.main.live_count + self.delta.live_count

    # -- building -----------------------------------------------------------------------
    def _encode(self, rows: VectorRows) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        vectors = np.ascontiguousarray(rows.vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or vectors.shape[0] != len(rows):
            raise InvalidInput(
                f"vectors of shape {vectors.shape} do not fit this index (dimension {self.dim},"
                f" {len(rows)} rows)", field="vectors",
            )
        docs = np.fromiter((self._intern_doc(d) for d in rows.doc_ids), np.int32, len(rows))
        sets = np.asarray(rows.rolesets, dtype=np.int32).reshape(-1)
        if sets.shape[0] != len(rows):
            raise InvalidInput(f"{sets.shape[0]} role-set ids for {len(rows)} rows",
                               field="rolesets")
        return vectors, np.asarray(rows.rowids, dtype=np.int64), docs, sets

    def _intern_doc(self, doc_id: str) -> int:
        num = self.doc_num.get(doc_id)
        if num is None:
            num = self.doc_num[doc_id] = len(self.docs)
            self.docs.append(doc_id)
        return num

    def rebuild(self, rows: VectorRows, applied_seq: int) -> None:
        """Replace everything with ``rows``; builds HNSW when there are enough of them."""
        self.docs, self.doc_num = [], {}
        self.main = Segment.build(*self._encode(rows))
        self.delta = Segment.build(*empty_rows(self.dim))
        self._build_hnsw()
        self.applied_seq = applied_seq

    def apply_changes(self, doc_ids: Sequence[str], rows: VectorRows, applied_seq: int) -> None:
        """Drop every row of ``doc_ids`` and add ``rows`` (their current chunks).

        Idempotent, like the lexical index's replay: applying the same change twice gives
        the same index.
        """
        touched = np.asarray([self.doc_num[d] for d in doc_ids if d in self.doc_num], np.int32)
        # A graph holds positions into main, so main rows are masked, not removed.
        drop = self.main.masked if self.hnsw is not None else self.main.without_docs
        self.main = drop(touched)
        self.delta = self.delta.without_docs(touched)
        self.delta = self.delta.merged(Segment.build(*self._encode(rows)))
        if self.hnsw is None:
            # No graph to keep in step: fold the delta in so there is one grouped matrix.
            # Crossing the threshold does not build the graph here (minutes at 1M rows); exact
            # search stays correct until the caller runs compact() (needs_compaction says so).
            self.main = self.main.merged(self.delta)
            self.delta = Segment.build(*empty_rows(self.dim))
        self._selectors.clear()
        self.applied_seq = applied_seq

    @property
    def ef_search(self) -> int:
        """The search beam: the calibrated one once a graph was measured."""
        return self.calibration.ef_search if self.calibration else self.params.ef_search

    def needs_compaction(self) -> bool:
        """True when a graph is due: none yet above the threshold, or the delta or the
        deleted rows have grown enough that the graph should be rebuilt. A graph rejected
        by calibration is not retried until the index has grown by a tenth."""
        if self.hnsw is None:
            tried = self.calibration
            if tried is not None and not tried.accepted and len(self) * 10 < tried.vectors * 11:
                return False
            return len(self) >= self.params.threshold
        if self.main.size < self.params.threshold:
            return True  # the threshold was raised past the index: back to the exact scan
        dead = self.main.size - self.main.live_count
        limit = max(10_000, len(self) // 10)
        return self.delta.size > limit or dead > limit

    def compact(self, questions: np.ndarray | None = None) -> None:
        """Merge the delta into a regrouped main segment and (re)build the graph if the index
        is above the threshold, calibrated on ``questions`` (embedded real questions) when
        given. Slow at scale (about 15 min for 1M x 384 on 2 cores)."""
        self.main = self.main.merged(self.delta)
        self.delta = Segment.build(*empty_rows(self.dim))
        self.hnsw = None
        self._build_hnsw(questions)

    def _build_hnsw(self, questions: np.ndarray | None = None) -> None:
        self._selectors.clear()
        if self.main.size < self.params.threshold:
            # No graph, none measured: a calibration kept from an earlier graph would have
            # status describe a search that no longer runs.
            self.hnsw, self.calibration = None, None
            return
        faiss = load_faiss()
        graph = build_graph(faiss, self.main.vectors, self.params.m, self.params.ef_construction)
        self.calibration = calibrate(faiss, graph, self.main.vectors, self.params.ef_search,
                                     self.params.ef_max, self.params.target_recall, questions)
        # A graph that misses too many true neighbours is worse than a slower exact scan.
        self.hnsw = graph if self.calibration.accepted else None

    # -- search -------------------------------------------------------------------------
    def _present_sets(self) -> np.ndarray:
        return np.asarray(sorted(self.main.blocks.keys() | self.delta.blocks.keys()), np.int32)

    def _allowed_sets(self, readable: Collection[int] | None) -> np.ndarray:
        present = self._present_sets()
        if readable is None:
            return present
        return np.intersect1d(present, np.fromiter(readable, np.int32, len(readable)))

    def search(
        self, query_vec: np.ndarray, readable: Collection[int] | None, limit: int,
        blocked_limit: int = 0, min_score: float | None = None, exact: bool = False,
    ) -> tuple[list[VectorMatch], int, list[VectorMatch]]:
        """Top-``limit`` rows by cosine similarity among those whose role set is in
        ``readable`` (None: no filter), the number of rows outside it, and the best
        ``blocked_limit`` of those (for the status decision and the audit trace only; never
        shown to users). The same contract as ``LexicalIndex.search``.

        ``min_score`` makes a row a *match* only at or above it (the mode's threshold); it
        drops permitted rows below it and defines which blocked rows are counted. Without it
        every blocked row counts. With an HNSW graph and ``min_score`` the count is taken
        over the blocked candidates the search visited (a lower bound; zero vs non-zero,
        which the status needs, is exact whenever the best blocked row passes).

        ``exact`` scans the permitted rows exactly even when a graph exists: the graph's
        neighbourhoods, and the choice between graph and scan, depend on blocked rows.
        """
        q = self._query(query_vec)
        allowed = self._allowed_sets(readable)
        matches, _ = self._top(q, allowed, limit, min_score, count=False, exact=exact)
        if readable is None:
            return matches, 0, []
        blocked_sets = np.setdiff1d(self._present_sets(), allowed)
        if min_score is None and blocked_limit == 0:
            # Every blocked row matches; its count is known without scoring anything.
            return matches, self._live_in(blocked_sets), []
        want = max(blocked_limit, 1) if min_score is None else max(blocked_limit, limit, 1)
        found, passed = self._top(q, blocked_sets, want, min_score)
        count = self._live_in(blocked_sets) if min_score is None else passed
        return matches, count, found[:blocked_limit]

    def _query(self, query_vec: np.ndarray) -> np.ndarray:
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise InvalidInput(
                f"the query vector has dimension {q.shape[0]}; this index holds {self.dim}"
                f" ({self.model or 'unknown model'})", field="query",
            )
        norm = float(np.linalg.norm(q))
        if not np.isfinite(norm) or norm == 0.0:
            raise InvalidInput("the query vector is zero or not finite", field="query")
        return q / norm

    def _live_in(self, sets: np.ndarray) -> int:
        return self.main.live_in(sets) + self.delta.live_in(sets)

    def _top(self, q: np.ndarray, sets: np.ndarray, k: int, min_score: float | None,
             count: bool = True, exact: bool = False) -> tuple[list[VectorMatch], int]:
        """Best ``k`` over the role sets, and how many rows passed ``min_score`` (exact on the
        exact path; among the candidates on the HNSW path; 0 when ``count`` is False)."""
        if k < 1 or sets.size == 0:
            return [], 0
        parts = [self.delta.exact(q, sets, k, min_score, count)]
        allowed_live = self.main.live_in(sets)
        total_live = max(self.main.live_count, 1)
        fraction = allowed_live / total_live
        if self.hnsw is not None and not exact and fraction >= self.params.exact_fraction:
            selector, mask = self._selector(sets)
            # The global share says little when roles follow topics: a query whose whole
            # neighbourhood is blocked defeats filtered HNSW at any share (recall 0.57 at
            # 50 % allowed at 1M). So measure the share among the query's unfiltered
            # neighbours, and scan exactly when it is low there.
            local = self._local_fraction(q, mask) if fraction < 1.0 else 1.0
            if local >= self.params.exact_fraction:
                parts.append(self._hnsw(q, selector, k, min_score, local))
            else:
                parts.append(self.main.exact(q, sets, k, min_score, count))
        else:
            parts.append(self.main.exact(q, sets, k, min_score, count))
        rowids = np.concatenate([p[0] for p in parts])
        scores = np.concatenate([p[1] for p in parts])
        order = top_k(scores, k)
        return [VectorMatch(int(rowids[i]), float(scores[i])) for i in order], \
            sum(p[2] for p in parts)

    def _selector(self, sets: np.ndarray) -> tuple[Any, np.ndarray]:
        """The faiss bitmap selector of the readable live rows of main, and the bool mask."""
        key = tuple(int(s) for s in sets)
        cached = self._selectors.get(key)
        if cached is None:
            faiss = load_faiss()
            mask = self.main.mask(sets)
            bits = np.packbits(mask, bitorder="little")
            # The selector points into ``bits``; the cache keeps them alive together.
            cached = (faiss.IDSelectorBitmap(self.main.size, faiss.swig_ptr(bits)), mask, bits)
            if len(self._selectors) > 64:
                self._selectors.clear()
            self._selectors[key] = cached
        return cached[0], cached[1]

    def _local_fraction(self, q: np.ndarray, mask: np.ndarray) -> float:
        params = load_faiss().SearchParametersHNSW()
        params.efSearch = self.ef_search
        with one_omp_thread():
            _, positions = self.hnsw.search(q[None, :], self.params.probe, params=params)
        found = positions[0][positions[0] >= 0]
        return float(mask[found].mean()) if found.size else 0.0

    def _hnsw(self, q: np.ndarray, selector: Any, k: int, min_score: float | None,
              fraction: float) -> tuple[np.ndarray, np.ndarray, int]:
        faiss = load_faiss()
        params = faiss.SearchParametersHNSW()
        base = max(self.ef_search, k)
        # Widen the beam as the (local) filter tightens: ef / fraction was not enough at 50 %
        # allowed in tests (recall 0.82-0.90); ef / fraction**2 reached 0.99.
        params.efSearch = int(max(base, min(self.params.ef_max, base / max(fraction, 1e-3) ** 2)))
        params.sel = selector
        with one_omp_thread():
            scores, positions = self.hnsw.search(q[None, :], k, params=params)
        keep = positions[0] >= 0
        if min_score is not None:
            keep &= scores[0] >= min_score
        pos = positions[0][keep]
        return self.main.rowids[pos], scores[0][keep].astype(np.float32), int(keep.sum())
