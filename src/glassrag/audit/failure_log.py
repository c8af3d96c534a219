"""The last ingest failure of every path, so ``why-not`` can say why a document is missing.

An ingest report names its failed files once, on the screen of whoever ran it; a week later
"why is the onboarding page not found?" has no answer unless the failure was kept. This
module keeps, per path, the last failure (a file that could not be read, or a record in it
that could not be stored) and the last skip (a file of a type no reader takes), with the
doc_id the file would have had. A path whose document is now stored is dropped from the
log, so an old failure never explains a document that later ingested fine.

The table is its own migration set (``audit``), recorded in the ``meta`` table under
:data:`META_KEY`; each entry of :data:`MIGRATIONS` is applied once, in order, in one
transaction, never edited once shipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from glassrag.store.database import Store, now

META_KEY = "migrations.audit"
TABLE = "ingest_failures"
MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("ingest_failures", f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        path TEXT PRIMARY KEY,
        doc_id TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('failed', 'skipped')),
        error TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    )"""),
)
FAILED, SKIPPED = "failed", "skipped"


@dataclass(frozen=True)
class FailureRecord:
    """One path's last ingest failure (``outcome`` failed) or skip (``outcome`` skipped)."""

    path: str
    doc_id: str | None
    outcome: str
    error: str
    recorded_at: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "doc_id": self.doc_id, "outcome": self.outcome,
                "error": self.error, "recorded_at": self.recorded_at}


def _applied(store: Store) -> int:
    row = store.db.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
    return int(row[0]) if row else 0


def exists(store: Store) -> bool:
    """Whether this knowledge base keeps a failure log (anything was ever recorded)."""
    return _applied(store) > 0


def migrate(store: Store) -> None:
    """Apply the pending migrations of the ``audit`` set (call outside a transaction)."""
    if _applied(store) >= len(MIGRATIONS):
        return
    store.begin()
    try:
        done = _applied(store)  # another process may have migrated while we waited
        for _, statement in MIGRATIONS[done:]:
            store.db.execute(statement)
        store.db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO "
                         "UPDATE SET value = excluded.value", (META_KEY, str(len(MIGRATIONS))))
        store.commit()
    except BaseException:
        store.rollback()
        raise


def record(store: Store, entries: Sequence[tuple[str, str | None, str, str]]) -> None:
    """Keep ``(path, doc_id, outcome, error)`` as each path's last failure, and forget the
    paths whose document is now stored."""
    migrate(store)
    at = now()
    store.begin()
    try:
        store.db.executemany(
            f"INSERT INTO {TABLE}(path, doc_id, outcome, error, recorded_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET doc_id = excluded.doc_id,"
            " outcome = excluded.outcome, error = excluded.error,"
            " recorded_at = excluded.recorded_at",
            [(*entry, at) for entry in entries])
        store.db.execute(f"DELETE FROM {TABLE} WHERE doc_id IN (SELECT doc_id FROM documents)")
        store.commit()
    except BaseException:
        store.rollback()
        raise


def lookup(store: Store, doc_id: str) -> FailureRecord | None:
    """The last failure recorded for ``doc_id``: by the doc_id the file would have had, by
    its path, or by a path ending in ``/doc_id``; None when there is none (or no log yet)."""
    if _applied(store) < len(MIGRATIONS):
        return None  # nothing was ever recorded; a read never creates the table
    rows = store.db.execute(
        f"SELECT path, doc_id, outcome, error, recorded_at FROM {TABLE}"
        " WHERE doc_id = ? OR path = ? OR substr(path, -length(?) - 1) = ?"
        " ORDER BY recorded_at DESC LIMIT 1", (doc_id, doc_id, doc_id, "/" + doc_id)
    ).fetchall()
    return FailureRecord(*rows[0]) if rows else None


def entries_for(failed: Iterable[tuple[str, str]], skipped: Iterable[str],
                doc_id_of: Any) -> list[tuple[str, str | None, str, str]]:
    """Rows for :func:`record`: ``failed`` as (path, error), ``skipped`` paths, and
    ``doc_id_of(path)`` the doc_id each would have had (None if unknown)."""
    rows: dict[str, tuple[str, str | None, str, str]] = {}
    for path in skipped:
        rows[path] = (path, doc_id_of(path), SKIPPED,
                      "skipped: no reader takes this type of file (unsupported type)")
    errors: dict[str, list[str]] = {}
    for path, error in failed:  # a failure says more than a skip of the same path
        errors.setdefault(path, []).append(error)
    for path, messages in errors.items():
        rows[path] = (path, doc_id_of(path), FAILED, "; ".join(dict.fromkeys(messages)))
    return list(rows.values())
