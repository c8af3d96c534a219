"""What an ingest does for the audits once its documents are committed.

Called by :meth:`glassrag.KnowledgeBase.ingest` inside its write lock: the report gets the
count of past answers whose citations this ingest changed (``stale_answers``), the failure
log keeps each failed or skipped file's last error for ``why-not``, and the observers
(``/metrics``) hear of the ingest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from glassrag.audit import failure_log
from glassrag.audit.stale import count_stale
from glassrag.observe import ingest_finished
from glassrag.records import IngestReport
from glassrag.store.database import Store


def after_ingest(store: Store, report: IngestReport, since_seq: int,
                 paths: Sequence[str | Path], options: Any) -> None:
    """``since_seq``: the change-log position before the ingest began; ``options`` the
    ingest's :class:`~glassrag.ingest.run.IngestOptions`."""
    changed = {doc_id for _, doc_id, _ in store.changes_since(since_seq)}
    report.stale_answers = count_stale(store, changed)
    doc_id_of = _doc_id_finder(paths, options.id_prefix)
    failed = [(f.path, f.error) for f in report.failed if doc_id_of(f.path) is not None]
    skipped = report.skipped_files
    # With a log already kept, documents that failed before and ingested now leave it.
    if failed or skipped or failure_log.exists(store):
        failure_log.record(store, failure_log.entries_for(failed, skipped, doc_id_of))
    ingest_finished(store, report.to_dict())


def _doc_id_finder(paths: Sequence[str | Path], prefix: str) -> Callable[[str], str | None]:
    """The doc_id a file found under one of the ingest's ``paths`` gets by default (its
    path relative to that argument, after the ingest's id prefix); None for anything that
    is not such a file (an embedder failure, say)."""
    roots = [Path(p) for p in paths]

    def doc_id_of(path: str) -> str | None:
        file = Path(path)
        for root in roots:
            if file == root:
                return prefix + root.name
            try:
                return prefix + file.relative_to(root).as_posix()
            except ValueError:
                continue
        return None

    return doc_id_of

