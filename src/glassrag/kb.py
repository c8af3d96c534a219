"""KnowledgeBase: the Python API that the CLI, the HTTP server and MCP all sit on."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import KnowledgeBaseNotFound, NotFound
from .ingest import IngestOptions, Progress, run_ingest
from .lexical import LexicalIndex
from .records import Chunk, Document, IngestReport, Principal, SearchResult
from .roles_rules import load_roles_rules
from .search import retrieve
from .settings import CONFIG_NAME, DEFAULT_CONFIG, Settings, load_settings
from .store import DB_NAME, Store

DEFAULT_KB_DIR = ".glassrag"
ROLES_RULES_NAME = "roles.toml"


def resolve_kb_path(path: str | Path | None = None) -> Path:
    """``path`` if given, else ``$GLASSRAG_KB``, else ``./.glassrag``."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get("GLASSRAG_KB") or DEFAULT_KB_DIR)


class KnowledgeBase:
    """A knowledge base on disk: ``glassrag.db`` (truth), ``index/`` (derived), settings."""

    def __init__(self, path: Path, store: Store, settings: Settings) -> None:
        self.path = path
        self.store = store
        self.settings = settings
        self.lexical = LexicalIndex(path / "index" / "lexical")
        # One lock around SQLite + Tantivy use so a server can share one instance.
        self.lock = threading.RLock()
        self._repair()

    @classmethod
    def init(cls, path: str | Path | None = None) -> KnowledgeBase:
        """Create the directory and a settings file with every default written out."""
        kb_dir = resolve_kb_path(path)
        kb_dir.mkdir(parents=True, exist_ok=True)
        config = kb_dir / CONFIG_NAME
        if not config.exists():
            config.write_text(DEFAULT_CONFIG, encoding="utf-8")
        return cls.open(kb_dir)

    @classmethod
    def open(cls, path: str | Path | None = None, *, create: bool = True) -> KnowledgeBase:
        """Open (and with ``create``, make) the knowledge base at ``path``.

        Opening repairs the derived index if an earlier process died mid-ingest.
        """
        kb_dir = resolve_kb_path(path)
        if not (kb_dir / DB_NAME).exists():
            if not create:
                raise KnowledgeBaseNotFound(
                    f"no knowledge base at {kb_dir}; create one with `glassrag init` "
                    "or `glassrag ingest PATH`",
                    path=str(kb_dir),
                )
            if not (kb_dir / CONFIG_NAME).exists():
                return cls.init(kb_dir)
        kb_dir.mkdir(parents=True, exist_ok=True)
        settings = load_settings(kb_dir)
        return cls(kb_dir, Store(kb_dir / DB_NAME), settings)

    def close(self) -> None:
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
    ) -> IngestReport:
        """Ingest files and directories; return counts and per-file failures."""
        if isinstance(paths, (str, Path)):
            paths = [paths]
        options = IngestOptions(
            roles=tuple(roles), chunker=chunker, prune=prune,
            include=tuple(include), exclude=tuple(exclude),
        )
        rules = load_roles_rules(self.path / ROLES_RULES_NAME)
        with self.lock:
            report = run_ingest(self.store, paths, self.settings, rules, options, progress)
            self.lexical.catch_up(self.store)
        return report

    def delete(self, doc_id: str) -> None:
        """Remove a document and its chunks; NotFound if there is no such document."""
        with self.lock:
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

    def reindex(self) -> int:
        """Rebuild the lexical index from SQLite; return the number of chunks indexed."""
        with self.lock:
            return self.lexical.rebuild(self.store)

    # -- reads -------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        principal: Principal | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        terms: Sequence[str] | None = None,
    ) -> SearchResult:
        """Permitted hits for ``query``; a principal defaults to the public role only."""
        principal = principal or Principal()
        started = time.perf_counter()
        with self.lock:
            self._sync()
            found = retrieve(
                self.store, self.lexical, query, principal,
                top_k or self.settings.search.top_k, mode or self.settings.search.mode, terms,
            )
        conceal = self.settings.permissions.disclosure == "conceal" and not principal.admin
        return SearchResult(
            query=query, mode=found.mode, hits=found.hits,
            blocked_count=0 if conceal else found.blocked_count,
            query_terms=found.query_terms,
            took_ms=(time.perf_counter() - started) * 1000,
        )

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

    def document_text(self, content_hash: str) -> str | None:
        """The normalised text of a document version, by content hash."""
        with self.lock:
            return self.store.version_text(content_hash)

    def status(self) -> dict[str, Any]:
        with self.lock:
            self._sync()
            counts = self.store.counts()
            counts["indexed_chunks"] = self.lexical.num_docs()
            counts["applied_seq"] = self.lexical.applied_seq
            counts["last_seq"] = self.store.last_seq()
        counts["path"] = str(self.path)
        return counts
