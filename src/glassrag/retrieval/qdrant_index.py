"""The Qdrant index (``[index] backend = "qdrant"``), derived from the change log.

One point per chunk, its id the chunk's row id: a sparse vector ``bm25`` (the chunk's
analysed tokens weighted by :mod:`glassrag.retrieval.sparse_bm25`, with Qdrant's IDF
modifier), a dense vector ``dense`` when the knowledge base has an embedder (the vectors
stored in the truth, never embedded again here), and a payload with what a hit needs
(text, lines, source, title, heading, version, content hash, roles, doc_id) plus ``terms``
(the distinct terms, for exact counts) and ``seq`` (the change that wrote the point).
Payload indexes on ``roles``, ``doc_id`` and ``terms`` keep those filters inside the search.

``collection`` is an alias. A rebuild fills a new collection and then switches the alias in
one step, so searchers (on any server) never see a half-built index; the old collection is
dropped after. The collection's metadata records the last change applied (``applied_seq``),
the average length frozen into the weights and the embedder, so every server sharing the
collection knows where it stands. Replaying a change is idempotent: a document's current
chunks are upserted with the change's ``seq`` and its points of earlier changes deleted, so
a crash anywhere only means some changes are replayed. The upsert never overwrites a point
of a later change (Qdrant's conditional update), so servers catching up at once (each under
its own machine's lock) cannot write an older version over a newer one.

The average length (``avgdl``): the stored weights need it, and re-weighting means
rewriting every point, so it is measured when the collection is built and re-measured (by a
rebuild) only when the knowledge base has twice the chunks it was measured on. Under
``conceal`` it is :data:`FIXED_AVGDL` instead: a measured average counts hidden chunks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassrag.dense.base import Progress
from glassrag.dense.embeddings import (
    EmbedReport,
    check_model,
    chunk_text_hash,
    embed_pending,
    embedding_text,
    get_vectors,
    record_model,
)
from glassrag.dense.embeddings import recorded_model as recorded_embedder
from glassrag.faults import crash_point
from glassrag.records import Chunk
from glassrag.retrieval.qdrant_connection import Connection, connect, release
from glassrag.retrieval.sparse_bm25 import chunk_vector, mean_length
from glassrag.settings import Settings
from glassrag.store.database import Store

if TYPE_CHECKING:
    from glassrag.dense.retriever import DenseRetriever

SPARSE = "bm25"
DENSE = "dense"
# Bump when the points' layout or weighting changes: a collection of another format is rebuilt.
FORMAT = 1
# The average chunk length under ``conceal`` (tokens): the bundled examples average 49,
# documentation chunks of up to 1,000 characters about 60-100.
FIXED_AVGDL = 64.0
_DOCS_PER_WRITE = 500  # documents per delete filter


class QdrantIndex:
    """A knowledge base's chunks in a Qdrant collection; duck-types ``LexicalIndex``'s
    maintenance methods (``applied_seq``, ``catch_up``, ``rebuild``, ``refresh``)."""

    engine = "qdrant"

    def __init__(self, kb_dir: Path, settings: Settings,
                 locked: Callable[[], contextlib.AbstractContextManager[Any]]) -> None:
        self.config = settings.index
        self.conceal = settings.permissions.disclosure == "conceal"
        self.alias = self.config.collection
        self._locked = locked
        self.conn: Connection = connect(self.config, kb_dir)
        self.meta: dict[str, Any] = {}
        # Documents the last catch-up wrote (None: all of them, after a rebuild).
        self.written: set[str] | None = set()
        self.refresh()

    # -- state -------------------------------------------------------------------------
    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.conn.call(method, *args, **kwargs)

    @property
    def applied_seq(self) -> int:
        return int(self.meta.get("applied_seq", 0))

    @property
    def avgdl(self) -> float:
        return float(self.meta.get("avgdl") or FIXED_AVGDL)

    @property
    def model(self) -> str | None:
        return self.meta.get("model")

    def target(self) -> str | None:
        """The collection the alias points at (a plain collection of that name counts)."""
        for alias in self.call("get_aliases").aliases:
            if alias.alias_name == self.alias:
                return str(alias.collection_name)
        return self.alias if self.call("collection_exists", self.alias) else None

    def refresh(self) -> None:
        """Re-read the collection's metadata (another server may have moved it on)."""
        name = self.target()
        info = self.call("get_collection", name) if name else None
        self.meta = dict(info.config.metadata or {}) if info is not None else {}

    def close(self) -> None:
        release(self.conn)

    # -- maintenance -----------------------------------------------------------------------
    def catch_up(self, store: Store) -> int:
        """Apply every change after ``applied_seq`` (rebuilding when the collection is
        missing or no longer matches); return how many documents were written."""
        with self._locked():
            self.refresh()
            if self._rebuild_reason(store):
                self._rebuild(store)
                return len(self.written or ())
            changes = store.changes_since(self.applied_seq)
            self.written = set()
            if not changes:
                return 0
            if self._doubled(store):
                self._rebuild(store)
                return len(self.written or ())
            last = changes[-1][0]
            touched = list(dict.fromkeys(doc_id for _, doc_id, _ in changes))
            name = self.target() or self.alias
            self._write_docs(store, name, touched, last)
            # The embedded index's name for this stage: every point written, the applied
            # change not yet recorded (so the same crash tests run on both).
            crash_point("index.before_commit")
            self.refresh()  # another server may have gone further meanwhile: never go back
            self._set_meta(name, applied_seq=max(last, self.applied_seq))
            self.written = set(touched)
            return len(touched)

    def rebuild(self, store: Store) -> int:
        """Build a new collection from the truth and switch to it; return the chunk count."""
        with self._locked():
            return self._rebuild(store)

    def update_vectors(self, store: Store, doc_ids: Sequence[str]) -> None:
        """Rewrite ``doc_ids``' points after they gained dense vectors (embedding is not a
        change-log event, so ``applied_seq`` stays)."""
        if not doc_ids:
            return
        with self._locked():
            self.refresh()
            name = self.target()
            if name is not None:
                self._write_docs(store, name, list(doc_ids), self.applied_seq)

    def _rebuild_reason(self, store: Store) -> str:
        if not self.meta:
            return "no collection"
        if self.meta.get("format") != FORMAT:
            return "another format"
        if self.applied_seq > store.last_seq():
            return "ahead of the change log"  # the truth was replaced
        recorded = recorded_embedder(store.db)
        if (self.meta.get("model"), self.meta.get("dim")) != (recorded or (None, None)):
            return "another embedder"
        if self.meta.get("avgdl_scope") != self._avgdl_scope():
            return "another avgdl"
        return ""

    def _avgdl_scope(self) -> str:
        if not isinstance(self.config.avgdl, str):
            return f"setting:{self.config.avgdl}"
        return "fixed" if self.conceal else "measured"

    def _doubled(self, store: Store) -> bool:
        if self.meta.get("avgdl_scope") != "measured":
            return False
        # Measured on none (an empty knowledge base): the first chunks are measured.
        return int(store.counts()["chunks"]) >= max(2 * int(self.meta.get("measured_on", 0)), 1)

    def _rebuild(self, store: Store) -> int:
        old = self.target()
        last = store.last_seq()
        recorded = recorded_embedder(store.db)
        scope = self._avgdl_scope()
        measured_on, avgdl = 0, FIXED_AVGDL
        if scope == "measured":
            measured_on, avgdl = mean_length(tokens for *_, tokens in store.index_rows())
        elif not isinstance(self.config.avgdl, str):
            avgdl = float(self.config.avgdl)
        name = f"{self.alias}-{uuid.uuid4().hex[:12]}"
        self._drop_orphans(keep=old)
        self.meta = {"format": FORMAT, "alias": self.alias, "applied_seq": 0,
                     "avgdl": avgdl or FIXED_AVGDL, "avgdl_scope": scope,
                     "measured_on": measured_on, "model": recorded[0] if recorded else None,
                     "dim": recorded[1] if recorded else None}
        self._create(name, self.meta)
        count = self._write_rows(store, name, store.index_rows(), last)
        crash_point("index.before_commit")  # every point written, nothing switched yet
        self._set_meta(name, applied_seq=last)
        self._switch(name, old)
        self.written = None
        return count

    # -- collection --------------------------------------------------------------------
    def _create(self, name: str, meta: dict[str, Any]) -> None:
        from qdrant_client import models as m

        cfg = self.config
        dense = ({DENSE: m.VectorParams(size=int(meta["dim"]), distance=m.Distance.COSINE,
                                        on_disk=cfg.on_disk_vectors)} if meta["dim"] else {})
        quantization: Any = None
        if cfg.quantization == "scalar":
            quantization = m.ScalarQuantization(scalar=m.ScalarQuantizationConfig(
                type=m.ScalarType.INT8, always_ram=True))
        elif cfg.quantization == "binary":
            quantization = m.BinaryQuantization(binary=m.BinaryQuantizationConfig(
                always_ram=True))
        self.call("create_collection", name, vectors_config=dense,
                  sparse_vectors_config={SPARSE: m.SparseVectorParams(
                      modifier=m.Modifier.IDF,
                      index=m.SparseIndexParams(on_disk=cfg.on_disk_vectors))},
                  shard_number=cfg.shard_number, replication_factor=cfg.replication_factor,
                  write_consistency_factor=cfg.write_consistency_factor,
                  on_disk_payload=cfg.on_disk_payload, quantization_config=quantization,
                  metadata=meta)
        for key in ("roles", "doc_id", "terms"):
            self.call("create_payload_index", name, key, m.PayloadSchemaType.KEYWORD)
        self.call("create_payload_index", name, "seq", m.PayloadSchemaType.INTEGER)

    def _set_meta(self, name: str, **values: Any) -> None:
        self.call("update_collection", name, metadata=values)
        self.meta.update(values)

    def _switch(self, name: str, old: str | None) -> None:
        from qdrant_client import models as m

        ops: list[Any] = []
        if old == self.alias:  # a plain collection holds the name: it has to go first
            self.call("delete_collection", old)
        elif old is not None:
            ops.append(m.DeleteAliasOperation(delete_alias=m.DeleteAlias(alias_name=self.alias)))
        ops.append(m.CreateAliasOperation(create_alias=m.CreateAlias(
            collection_name=name, alias_name=self.alias)))
        self.call("update_collection_aliases", ops)
        if old is not None and old != self.alias:
            self.call("delete_collection", old)

    def _drop_orphans(self, keep: str | None) -> None:
        """Collections of this alias left by a rebuild that died before its switch."""
        for info in self.call("get_collections").collections:
            name = str(info.name)
            if name != keep and name.startswith(f"{self.alias}-") and len(name) == len(
                    self.alias) + 13:
                meta = self.call("get_collection", name).config.metadata or {}
                if meta.get("alias") == self.alias:
                    self.call("delete_collection", name)

    # -- points ------------------------------------------------------------------------
    def _write_docs(self, store: Store, name: str, doc_ids: list[str], seq: int) -> None:
        """Upsert the current chunks of ``doc_ids``, then delete their points written for
        earlier changes."""
        from qdrant_client import models as m

        for start in range(0, len(doc_ids), _DOCS_PER_WRITE):
            part = doc_ids[start:start + _DOCS_PER_WRITE]
            self._write_rows(store, name, store.index_rows(part), seq)
            stale = m.Filter(must=[m.FieldCondition(key="doc_id", match=m.MatchAny(any=part)),
                                   m.FieldCondition(key="seq", range=m.Range(lt=seq))])
            self.call("delete", name, points_selector=m.FilterSelector(filter=stale), wait=True)

    def _write_rows(self, store: Store, name: str,
                    rows: Iterator[tuple[int, str, int, str]], seq: int) -> int:
        from qdrant_client import models as m

        # A point written for a later change is never overwritten by an earlier one, so
        # servers feeding one collection at once cannot put an old version back.
        newer_kept = m.Filter(must=[m.FieldCondition(key="seq", range=m.Range(lte=seq))])
        written = 0
        for batch in _batches(rows, self.config.batch_size):
            points = self._points(store, batch, seq)
            if points:
                self.call("upsert", name, points=points, update_filter=newer_kept, wait=True)
                crash_point("qdrant.after_upsert")
            written += len(points)
        return written

    def _points(self, store: Store, rows: list[tuple[int, str, int, str]], seq: int) -> list[Any]:
        from qdrant_client import models as m

        chunks = store.chunks_with_tokens([row[0] for row in rows])
        vectors = self._vectors(store, [c for c, _ in chunks.values()])
        points = []
        for rowid, _doc_id, _roleset, tokens in rows:
            found = chunks.get(rowid)
            if found is None:  # deleted since the rows were read: the next change says so
                continue
            chunk = found[0]
            words = tokens.split()
            vector: dict[str, Any] = {}
            if words:
                indices, values = chunk_vector(words, self.avgdl)
                vector[SPARSE] = m.SparseVector(indices=indices, values=values)
            dense = vectors.get(chunk.chunk_id)
            if dense is not None:
                vector[DENSE] = dense
            points.append(m.PointStruct(id=rowid, vector=vector,
                                        payload=_payload(chunk, words, seq)))
        return points

    def _vectors(self, store: Store, chunks: list[Chunk]) -> dict[str, list[float]]:
        """The stored dense vectors of ``chunks`` (by chunk_id) for the collection's model."""
        model, dim = self.meta.get("model"), self.meta.get("dim")
        if not model or not chunks:
            return {}
        keys = {c.chunk_id: chunk_text_hash(embedding_text(c.title, c.text)) for c in chunks}
        found = get_vectors(store.db, model, list(keys.values()))
        return {cid: found[key].tolist() for cid, key in keys.items()
                if key in found and found[key].shape[0] == dim}

    # -- reads -------------------------------------------------------------------------
    def num_docs(self) -> int:
        return int(self.call("count", self.alias, exact=True).count) if self.meta else 0

    def indexed_rowids(self) -> list[int]:
        """Every point's id (a chunk's row id), for the consistency check."""
        if not self.meta:
            return []
        ids: list[int] = []
        offset = None
        while True:
            points, offset = self.call("scroll", self.alias, limit=1000, offset=offset,
                                       with_payload=False, with_vectors=False)
            ids.extend(int(p.id) for p in points)
            if offset is None:
                return ids

    def describe(self) -> dict[str, Any]:
        """Where the index lives and what it holds, for ``glassrag status``."""
        return {"backend": "qdrant", "location": self.conn.where, "collection": self.alias,
                "serving": self.target(), "points": self.num_docs(),
                "applied_seq": self.applied_seq, "avgdl": round(self.avgdl, 3),
                "avgdl_scope": self.meta.get("avgdl_scope"), "embedder": self.model}


def _payload(chunk: Chunk, words: list[str], seq: int) -> dict[str, Any]:
    payload = dataclasses.asdict(chunk)
    payload["roles"] = list(chunk.roles)
    payload.update(length=len(words), terms=list(dict.fromkeys(words)), seq=seq)
    return payload


def _batches(rows: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def embed_into(index: QdrantIndex, store: Store, side: DenseRetriever,
               progress: Progress | None = None) -> EmbedReport:
    """``DenseRetriever.embed`` for a Qdrant knowledge base: embed every chunk without a vector
    (into the truth), then bring the collection up to date. No local vector index is built:
    Qdrant holds the vectors."""
    embedder = side.embedder
    check_model(store.db, embedder)
    report = embed_pending(store.db, embedder, progress)
    if recorded_embedder(store.db) is None:
        store.begin()
        record_model(store.db, embedder.name, embedder.dim)
        store.commit()
    index.catch_up(store)  # rebuilds, with vectors, when the embedder is new to the collection
    if index.written is not None:
        index.update_vectors(store, [d for d in report.doc_ids if d not in index.written])
    return report
