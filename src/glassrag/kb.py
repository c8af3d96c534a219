"""KnowledgeBase: the Python API that the CLI, the HTTP server and MCP all sit on."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from glassrag.disclosure import disclose
from glassrag.errors import GlassragError, InvalidInput, KnowledgeBaseNotFound, NotFound
from glassrag.pipeline import (
    BLOCKED_LIMIT,
    Request,
    decide_or_defer,
    retrieve_with_rewrite,
    run_retrieval,
    validate,
)
from glassrag.pipeline import ask as ask_pipeline
from glassrag.records import (
    ANSWERED,
    DENSE_MODES,
    Answer,
    Chunk,
    Document,
    FailedInput,
    Hit,
    IngestReport,
    Mode,
    Principal,
    SearchResult,
)
from glassrag.retrieval.lexical import LexicalIndex
from glassrag.retrieval.rewrite import RewriteHook, RewriteStage, preview_rewrite
from glassrag.retrieval.search import Retrieval, SearchIndex, readable_sets
from glassrag.retrieval.search_index import close_index, open_index
from glassrag.settings import (  # noqa: F401  (resolve_kb_path, DEFAULT_KB_DIR: re-exported)
    CONFIG_NAME,
    DEFAULT_CONFIG,
    DEFAULT_KB_DIR,
    Settings,
    load_settings,
    resolve_kb_path,
)
from glassrag.store import traces
from glassrag.store.database import Store, open_store, store_exists
from glassrag.store.version_access import may_read_version

if TYPE_CHECKING:  # imported where used: opening a knowledge base loads no parser or model
    from glassrag.dense.embeddings import EmbedReport
    from glassrag.dense.retriever import DenseRetriever
    from glassrag.eval.cases import EvalReport
    from glassrag.eval.docs_judge import DocsEvalReport
    from glassrag.ingest.run import Progress
    from glassrag.llm.client import LLMAnswerer


class KnowledgeBase:
    """A knowledge base on disk: ``glassrag.db`` (truth), ``index/`` (derived), settings."""

    def __init__(self, path: Path, store: Store, settings: Settings) -> None:
        self.path = path
        self.store = store
        self.settings = settings
        # Tantivy, or Qdrant with [index] backend = "qdrant" (bm25, dense and hybrid).
        self.lexical: SearchIndex = open_index(path, settings)
        self._dense: dict[str, DenseRetriever] = {}
        # One lock around SQLite + Tantivy (and vector index) use so a server can share one
        # instance. It is never held while a model runs: see _Reading and search.retrieve.
        self.lock = threading.RLock()
        self._reading = _Reading(self)
        try:
            self._repair()
        except BaseException:
            self.close()
            raise

    @classmethod
    def init(cls, path: str | Path | None = None) -> KnowledgeBase:
        """Create the directory and a settings file with every default written out."""
        kb_dir = resolve_kb_path(path)
        kb_dir.mkdir(parents=True, exist_ok=True)
        config = kb_dir / CONFIG_NAME
        if not config.exists():
            # Written whole or not at all: another process opening the same new knowledge
            # base must never read a half-written settings file.
            tmp = kb_dir / f".{CONFIG_NAME}.{os.getpid()}.tmp"
            tmp.write_text(DEFAULT_CONFIG, encoding="utf-8")
            os.replace(tmp, config)
        return cls.open(kb_dir)

    @classmethod
    def open(cls, path: str | Path | None = None, *, create: bool = True) -> KnowledgeBase:
        """Open (and with ``create``, make) the knowledge base at ``path``.

        Opening repairs the derived index if an earlier process died mid-ingest.
        """
        kb_dir = resolve_kb_path(path)
        settings = load_settings(kb_dir)
        if not store_exists(kb_dir, settings.store):
            if not create:
                raise KnowledgeBaseNotFound(
                    f"no knowledge base at {kb_dir}; create one with `glassrag init` "
                    "or `glassrag ingest PATH`",
                    path=str(kb_dir),
                )
            if not (kb_dir / CONFIG_NAME).exists():
                return cls.init(kb_dir)
        kb_dir.mkdir(parents=True, exist_ok=True)
        return cls(kb_dir, open_store(kb_dir, settings.store), settings)

    def close(self) -> None:
        close_index(self.lexical)
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- consistency -------------------------------------------------------------------
    def _repair(self) -> None:
        with self.lock:
            if self.lexical.applied_seq > self.store.last_seq():
                # The index claims changes SQLite never had (database replaced): rebuild.
                self.lexical.rebuild(self.store)
            else:
                self.lexical.catch_up(self.store)

    def _sync(self) -> None:
        if self.store.last_seq() > self.lexical.applied_seq:
            self.lexical.refresh()
            self.lexical.catch_up(self.store)

    def catch_up(self) -> int:
        """Apply what other processes committed to the truth since this one last looked:
        to the lexical index, and to the vector index when there is an embedder. Returns
        how many changes the lexical index applied. (Searches catch up by themselves; a
        server sharing a PostgreSQL store also calls this in the background.)"""
        with self.lock:
            before = self.lexical.applied_seq
            self._sync()
            side = self.dense()
            if side is not None:
                side.index()
            return self.lexical.applied_seq - before

    # -- dense -----------------------------------------------------------------------------
    def dense(self, embedder: str | None = None) -> DenseRetriever | None:
        """The dense retriever for ``embedder`` (else the configured or recorded one), or
        None when the knowledge base has no embedder at all."""
        from glassrag.dense.retriever import DenseRetriever, hnsw_params

        with self.lock:  # reads the recorded model from the store
            side = DenseRetriever(self.path, self.store, embedder or self.settings.dense.embedder
                                  or None, hnsw_params(self.settings.dense))
            if not side.enabled:
                return None
            return self._dense.setdefault(side.spec or "", side)

    def embed(self, embedder: str | None = None, progress: Progress | None = None) -> EmbedReport:
        """Embed every chunk without a vector (resumes an interrupted run)."""
        side = self.dense(embedder)
        if side is None:
            raise InvalidInput("no embedder: pass --embedder (e.g. st:all-MiniLM-L6-v2) or set "
                               "[dense] embedder in glassrag.toml", field="embedder")
        # A writer like ingest: embedding writes vectors and their change-log entries, and
        # two embedders (or one beside an ingest) must not write the same chunks' vectors.
        with self.store.write_lock(), self.lock:
            self._sync()
            return self._embed(side, progress)

    def _embed(self, side: DenseRetriever, progress: Progress | None = None) -> EmbedReport:
        if isinstance(self.lexical, LexicalIndex):
            return side.embed(progress)
        from glassrag.retrieval.qdrant_index import embed_into

        return embed_into(self.lexical, self.store, side, progress)

    # -- writes ----------------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        *,
        roles: Sequence[str] = (),
        chunker: str | None = None,
        prune: bool = False,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        progress: Progress | None = None,
        embedder: str | None = None,
        follow_external_links: bool | None = None,
        replace: bool = False,
        id_prefix: str = "",
        on_wait: Callable[[], None] | None = None,
    ) -> IngestReport:
        """Ingest files and directories; return counts and per-file failures.

        With an embedder (``embedder``, the ``[dense]`` setting or the one the knowledge base
        already uses) new chunks are embedded too. If embedding fails, the lexical part
        stays committed, the failure is in the report, and ``kb.embed()`` resumes.

        Symlinks are resolved; a link whose target is outside the ingested directory is a
        failure unless ``follow_external_links`` (None: ``[ingest] follow_external_links``).
        A document whose doc_id is already stored from another file is a failure and the
        stored one is kept, unless ``replace``. ``id_prefix`` goes before every doc_id of
        this call (e.g. ``"hr/"``), so folders with the same file names can share a
        knowledge base. One writer at a time: an ingest waits while another process (or
        thread) ingests into the same knowledge base, calling ``on_wait`` once if it must.
        """
        from glassrag.audit.ingest_hook import after_ingest
        from glassrag.ingest.roles_rules import ROLES_FILE, load_roles_rules
        from glassrag.ingest.run import IngestOptions, run_ingest

        if isinstance(paths, (str, Path)):
            paths = [paths]
        options = IngestOptions(
            roles=tuple(roles), chunker=chunker, prune=prune,
            include=tuple(include), exclude=tuple(exclude),
            follow_external_links=follow_external_links, replace=replace, id_prefix=id_prefix,
        )
        rules = load_roles_rules(self.path / ROLES_FILE)
        # The write lock first, then the in-process lock: a search holding only the latter
        # never waits for a writer in another process.
        with self.store.write_lock(on_wait), self.lock:
            since = self.store.last_seq()
            report = run_ingest(self.store, paths, self.settings, rules, options, progress)
            if isinstance(self.lexical, LexicalIndex):
                self.lexical.catch_up(self.store)
            side = self.dense(embedder)
            if side is not None:
                try:
                    self._embed(side)
                except GlassragError as exc:
                    report.failed.append(FailedInput(
                        f"embedder {side.spec}",
                        f"{exc.message} (the documents are stored and searchable with bm25; "
                        "run `glassrag embed` to finish embedding)"))
            # Qdrant is fed after embedding, so each new point is written with its vector.
            self.lexical.catch_up(self.store)
            after_ingest(self.store, report, since, paths, options)
        return report

    def delete(self, doc_id: str) -> None:
        """Remove a document and its chunks; NotFound if there is no such document."""
        with self.store.write_lock(), self.lock:
            self.store.begin()
            try:
                found = self.store.delete_document(doc_id)
                self.store.commit()
            except BaseException:
                self.store.rollback()
                raise
            if not found:
                raise NotFound(f"no document with doc_id {doc_id!r}", doc_id=doc_id)
            self.lexical.catch_up(self.store)

    def reindex(self, index: str | None = None, **options: Any) -> int:
        """Rebuild the search index from SQLite; return the number of chunks indexed.

        ``index`` ("embedded" or "qdrant") moves the knowledge base to that engine, with
        ``[index]`` ``options`` (url, api_key_env, path, collection): the new index is built
        from the truth first, and only then is glassrag.toml switched to it.
        """
        with self.lock:
            if index is None and not options:
                return self.lexical.rebuild(self.store)
            from glassrag.retrieval.search_index import move_index

            settings, moved, count = move_index(self.path, self.store, self.settings,
                                                index or self.settings.index.backend, options)
            close_index(self.lexical)
            self.settings, self.lexical = settings, moved
            return count

    # -- reads -------------------------------------------------------------------------
    def _request(self, text: str, principal: Principal | None = None, top_k: int | None = None,
                 mode: str | None = None, terms: Sequence[str] | None = None,
                 embedder: str | None = None, rerank: str | None = None, *,
                 search: bool = False) -> Request:
        """The one place a read request is built, for search (``search``: errors name the
        ``query``, ``[search] top_k`` is the default, no blocked candidates are loaded) and
        for ask, dry-run and inspect (the ``question``, ``[answer] top_k``)."""
        principal = principal or Principal()
        if top_k is None:
            top_k = self.settings.search.top_k if search else self.settings.answer.top_k
        mode = mode or self.settings.search.mode
        return Request(
            question=validate(text, top_k, field="query" if search else "question"),
            principal=principal, top_k=top_k, mode=mode, terms=tuple(terms or ()),
            dense=self.dense(embedder) if mode in DENSE_MODES else None,
            dense_settings=self.settings.dense, rerank=rerank or "",
            conceal=self.settings.conceals_from(principal),
            blocked_limit=0 if search else BLOCKED_LIMIT,
            field="query" if search else "question", words=not search,
        )

    def search(
        self,
        query: str,
        *,
        principal: Principal | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        terms: Sequence[str] | None = None,
        embedder: str | None = None,
        rerank: str | None = None,
    ) -> SearchResult:
        """Permitted hits for ``query``; a principal defaults to the public role only.

        ``mode`` is bm25, dense, hybrid, overlap or terms; dense and hybrid use ``embedder``
        (else the configured or recorded one); ``rerank`` is "lexical" or "cross:PATH".
        """
        started = time.perf_counter()
        req = self._request(query, principal, top_k, mode, terms, embedder, rerank,
                            search=True)
        found = run_retrieval(self.store, self.lexical, req, self._reading)
        told = disclose(None, found.blocked_count, conceal=req.conceal)
        return SearchResult(
            query=query, mode=found.mode, hits=found.hits, blocked_count=told.blocked_count,
            query_terms=found.query_terms, fusion_weights=found.fusion_weights,
            # How long a search took tells "hidden chunks matched" from "nothing matched".
            took_ms=None if told.concealed else (time.perf_counter() - started) * 1000,
        )

    # -- answers ---------------------------------------------------------------------------
    def ask(
        self,
        question: str,
        *,
        principal: Principal | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        terms: Sequence[str] | None = None,
        llm: str | None = None,
        embedder: str | None = None,
        rerank: str | None = None,
        rewrite: bool | RewriteHook | None = None,
    ) -> Answer:
        """Answer ``question`` from evidence ``principal`` may read, with verified citations.

        ``llm`` names a model profile (``openai``, ``deepseek``, ``ollama``…); without it the
        ``[llm]`` settings decide, and with none there the answer is extractive. Every call
        that gets past validation writes a trace; rejected input writes none.

        ``rewrite``: True asks the model for a search query first (only when a model is in
        use), False does not, None follows ``[llm] rewrite_query``; a callable
        ``fn(question) -> str`` is used as the rewriter with or without a model.
        """
        req = self._request(question, principal, top_k, mode, terms, embedder, rerank)
        log = self.settings.answer.log_path
        return ask_pipeline(
            self.store, self.lexical, self.settings, req, self.settings.answer,
            log_path=(self.path / log) if log else None, llm=self._llm(llm),
            lock=self._reading, rewrite=self._rewrite(rewrite),
        )

    def _rewrite(self, rewrite: bool | RewriteHook | None) -> bool | RewriteHook:
        return self.settings.llm.rewrite_query if rewrite is None else rewrite

    def _llm(self, profile: str | None) -> LLMAnswerer | None:
        if profile is None and self.settings.llm.profile is None:
            return None
        from glassrag.llm.client import LLMAnswerer

        return LLMAnswerer(self.settings.llm.with_profile(profile))

    def dry_run(
        self,
        question: str,
        *,
        principal: Principal | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        terms: Sequence[str] | None = None,
        llm: str | None = None,
        embedder: str | None = None,
        rerank: str | None = None,
        rewrite: bool | RewriteHook | None = None,
    ) -> dict[str, Any]:
        """The evidence package and the exact request an LLM answerer would receive.

        Reads no key and writes no trace. With no permitted evidence there is no request:
        the status is decided before any model would be called, as ask decides it. The
        ``rewrite`` (as for ask) adds the query-rewrite request that would be sent first; it
        is not sent, so the evidence is the question's alone.
        """
        from glassrag.llm.profiles import build_request
        from glassrag.llm.prompt import evidence_package

        req = self._request(question, principal, top_k, mode, terms, embedder, rerank)
        found = run_retrieval(self.store, self.lexical, req, self._reading)
        answerer = self._llm(llm)
        # With a model and permitted evidence, the model's reply decides the status.
        status, _ = decide_or_defer(req, found, self.settings.answer,
                                    RewriteStage(req.question), answerer)
        request = None
        if status is None:
            assert answerer is not None  # decide_or_defer defers only to a model
            request = answerer.preview(req.question, found.hits)
        elif answerer is None and status == ANSWERED:
            request = build_request(req.question, found.hits)
        return {
            "question": req.question,
            "status": ("decided_by_model" if status is None
                       else disclose(status, found.blocked_count, conceal=req.conceal).status),
            "answerer": answerer.name if answerer is not None else "extractive",
            "evidence": evidence_package(found.hits),
            "request": request,
            "rewrite": preview_rewrite(req.question, self._rewrite(rewrite), answerer,
                                       terms=req.terms),
        }

    def inspect(
        self,
        question: str,
        *,
        principal: Principal | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        terms: Sequence[str] | None = None,
        candidates: int = 20,
        embedder: str | None = None,
        rerank: str | None = None,
        llm: str | None = None,
        rewrite: bool | RewriteHook | None = None,
    ) -> dict[str, Any]:
        """Every permitted candidate ranked, with per-term contributions and why it was or
        was not selected. Writes no trace.

        ``rewrite`` is decided as for ask (None follows ``[llm] rewrite_query``). When a
        rewriter applies, its one request is sent (never an answer request) and the
        candidates are the question's and the rewritten query's, fused as ask fuses them;
        ``rewrite`` in the view is the trace's rewrite stage. Otherwise no model is called.
        """
        req = self._request(question, principal, top_k, mode, terms, embedder, rerank)
        wanted = self._rewrite(rewrite)
        # Only a rewrite asks the model anything: without one no answerer is even set up.
        answerer = self._llm(llm) if wanted is True else None
        pool_req = dataclasses.replace(req, top_k=max(candidates, req.top_k))
        pool, stage = retrieve_with_rewrite(self.store, self.lexical, pool_req, wanted,
                                            answerer, self._reading)
        rows = []
        with self.lock:
            # Under conceal, contributions use the statistics the search scored with.
            readable = readable_sets(self.store, req.principal) if req.conceal else None
            for rank, hit in enumerate(pool.hits, start=1):
                rows.append({
                    **hit.to_dict(), "rank": rank,
                    "contributions": self._contributions(pool, hit, readable,
                                                         req.principal),
                    "selected": rank <= req.top_k,
                    "why": (f"rank {rank} <= top_k {req.top_k}" if rank <= req.top_k
                            else f"rank {rank} > top_k {req.top_k}"),
                })
        return {
            "question": req.question, "mode": pool.mode, "top_k": req.top_k,
            "query_terms": list(pool.query_terms), "fusion_weights": pool.fusion_weights,
            "rewrite": stage.to_dict(),
            "candidates": rows,
            "selected_ids": [r["chunk_id"] for r in rows if r["selected"]],
            "blocked_count": disclose(None, pool.blocked_count,
                                      conceal=req.conceal).blocked_count,
        }

    def _contributions(self, pool: Retrieval, hit: Hit, readable: set[int] | None,
                       principal: Principal | None = None) -> dict[str, float]:
        if pool.mode == Mode.DENSE:
            return {name: round(v, 6) for name, v in hit.scores.items()}
        if pool.mode in (Mode.BM25, Mode.HYBRID) and hit.matched_terms:
            from glassrag.retrieval import readable_bm25

            rowid = self.store.db.execute(
                "SELECT id FROM chunks WHERE chunk_id = ?", (hit.chunk.chunk_id,)
            ).fetchone()[0]
            terms = list(hit.matched_terms)
            if not isinstance(self.lexical, LexicalIndex):
                from glassrag.retrieval.qdrant_search import explain

                parts = explain(self.store, self.lexical, terms, rowid,
                                principal or Principal(), conceal=readable is not None)
            else:
                parts = (self.lexical.explain(terms, rowid) if readable is None
                         else readable_bm25.explain(self.lexical, terms, rowid, readable))
            return {t: round(v, 6) for t, v in parts.items()}
        if pool.mode == Mode.TERMS:
            return {t: 1.0 for t in hit.matched_terms}
        from glassrag.retrieval.scorers import overlap_terms

        counts = overlap_terms(hit.chunk.title + " " + hit.chunk.text)
        return {t: float(counts.count(t)) for t in hit.matched_terms}

    def evaluate(self, path: str | Path) -> EvalReport | DocsEvalReport:
        """Run a case file (YAML or JSONL) and return its report (``passed``, ``lines()``);
        a question file (``answerable``, ``answers``, ``evidence``) is asked of this
        knowledge base as it is (:func:`glassrag.eval.docs_judge.evaluate_kb`)."""
        from glassrag.eval.docs_questions import is_question_file

        if is_question_file(path):
            from glassrag.eval.docs_judge import evaluate_kb
            from glassrag.eval.docs_questions import load_questions

            return evaluate_kb(self, load_questions(path))
        from glassrag.eval.cases import evaluate_file

        return evaluate_file(self, Path(path))

    def trace(self, trace_id: str, principal: Principal | None = None) -> dict[str, Any]:
        """A trace as ``principal`` may see it (None: the local operator, who sees all)."""
        with self.lock:
            return traces.load(self.store, trace_id, principal)

    def traces(self, principal: Principal | None = None, limit: int = 20) -> list[dict[str, Any]]:
        with self.lock:
            return traces.listing(self.store, principal, limit)

    def export_trace(self, trace_id: str, directory: str | Path,
                     principal: Principal | None = None) -> list[Path]:
        """Write the trace's run records (JSON files) into ``directory``. A principal gets the
        full text only of versions it may still read (see :meth:`document_text`)."""
        with self.lock:
            trace = traces.load(self.store, trace_id, principal)

        def version_text(content_hash: str, doc_id: str) -> str | None:
            return self.document_text(content_hash, doc_id=doc_id, principal=principal)

        return traces.export(trace, version_text, Path(directory))

    def documents(self, principal: Principal | None = None) -> list[Document]:
        """All documents, or only those ``principal`` may read."""
        with self.lock:
            docs = self.store.documents()
        if principal is None:
            return docs
        return [d for d in docs if principal.can_read(d.roles)]

    def document(self, doc_id: str, principal: Principal | None = None) -> Document:
        with self.lock:
            doc = self.store.document(doc_id)
        # An unreadable document is reported exactly like a missing one: no existence leak.
        if doc is None or (principal is not None and not principal.can_read(doc.roles)):
            raise NotFound(f"no document with doc_id {doc_id!r}", doc_id=doc_id)
        return doc

    def chunks(self, doc_id: str, principal: Principal | None = None) -> list[Chunk]:
        self.document(doc_id, principal)
        with self.lock:
            return self.store.chunks_of(doc_id)

    def document_text(self, content_hash: str, *, doc_id: str | None = None,
                      principal: Principal | None = None) -> str | None:
        """The normalised text of a document version, by content hash (of ``doc_id``'s
        versions only, if given); None when there is no such version.

        With a ``principal``, a version is served only to a caller allowed by the roles
        that version was stored with *and* by the document's current roles: loosening a
        document's roles never opens its older text, and tightening them closes it. A
        version the caller may not read is None, exactly like a missing one. Without a
        principal (the local operator) every version is served.
        """
        with self.lock:
            if principal is not None and not may_read_version(
                    self.store, content_hash, doc_id, principal):
                return None
            if doc_id is not None and principal is None and not self._has_version(
                    content_hash, doc_id):
                return None
            return self.store.version_text(content_hash)

    def _has_version(self, content_hash: str, doc_id: str) -> bool:
        doc = self.store.document(doc_id)
        return (doc is not None and doc.content_hash == content_hash) or any(
            d == doc_id for d, _ in self.store.versions_with_hash(content_hash))

    def status(self) -> dict[str, Any]:
        with self.lock:
            self._sync()
            counts: dict[str, Any] = dict(self.store.counts())
            counts["indexed_chunks"] = self.lexical.num_docs()
            counts["applied_seq"] = self.lexical.applied_seq
            counts["last_seq"] = self.store.last_seq()
            side = self.dense()
            if not isinstance(self.lexical, LexicalIndex):
                counts["index"] = self.lexical.describe()  # Qdrant holds the vectors too
            elif side is not None:
                counts["dense"] = side.describe()
        counts["path"] = str(self.path)
        return counts


class _Reading:
    """The knowledge base's lock for a read, with the derived indexes caught up first:
    what retrieval holds around its store and index access (and only there). Reusable, and
    reentrant like the lock."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self._kb = kb

    def __enter__(self) -> None:
        self._kb.lock.acquire()
        try:
            self._kb._sync()
        except BaseException:
            self._kb.lock.release()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._kb.lock.release()
