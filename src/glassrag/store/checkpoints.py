"""Write-ahead log checkpoints on a thread of their own during an ingest (SQLite only).

A checkpoint copies committed pages from the write-ahead log into the database file and
fsyncs both: about half a second of a 100k-document ingest, all of it inside SQLite with
Python's lock released. Run on a second connection right after each commit, it overlaps
the parsing and analysis of the next batch instead of holding up the commit that crossed
the size limit. SQLite allows one checkpointer beside a writer: a passive
checkpoint copies only what is committed and never blocks the writer or a reader, and
the log is restarted from its beginning at the first write after a complete checkpoint.
What a crash leaves is unchanged: commits go to the log exactly as before.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from glassrag.store.connection import connect_sqlite

__all__ = ["Checkpointer"]


class Checkpointer:
    """Checkpoints ``path``'s log after each :meth:`committed`, until :meth:`close`."""

    def __init__(self, path: Path) -> None:
        self._db = connect_sqlite(path)
        self._wake = threading.Event()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="glassrag-checkpoints",
                                        daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """A transaction was committed: checkpoint it (commits made while a checkpoint runs
        are taken by the next one)."""
        self._wake.set()

    def close(self) -> None:
        """Finish the checkpoint under way, if any, and stop."""
        self._closing = True
        self._wake.set()
        self._thread.join()
        self._db.close()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            try:
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                # Never fatal: the writer's own automatic checkpoint and the one at the end
                # of the bulk writes still copy the log.
                continue
