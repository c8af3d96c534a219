"""Following the truth's change log: a server's indexes stay caught up with other writers.

Several ``glassrag serve`` processes can share one PostgreSQL database, each with its own
lexical and vector indexes under its own knowledge-base folder. A document ingested through
any of them, or by ``glassrag ingest`` on any machine, is a commit to the shared change log;
every server's :class:`ChangeFollower` applies it in the background, so the next question
finds it without paying for the indexing. Every search also catches up first, so a server
never answers from an index older than the log was when the question arrived.

With ``[store] follow = "notify"`` the follower sleeps on PostgreSQL's LISTEN/NOTIFY (the
change log's trigger notifies at each commit) and wakes within milliseconds; it also reads
the log every ``poll_interval`` seconds, which is all ``"poll"`` does (for connection poolers
that cannot LISTEN). A failure (the database restarting, say) is logged and retried.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from glassrag.settings import StoreSettings

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase
    from glassrag.store.database import ChangeListener

log = logging.getLogger("glassrag.follower")
_SLICE = 0.25  # seconds between checks of the stop flag while waiting


class ChangeFollower:
    """A daemon thread applying the store's new changes to ``kb``'s indexes."""

    def __init__(self, kb: KnowledgeBase, settings: StoreSettings | None = None) -> None:
        self.kb = kb
        self.settings = settings or kb.settings.store
        self.applied = 0  # catch-ups that applied at least one change
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="glassrag-follower",
                                        daemon=True)

    def start(self) -> ChangeFollower:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        listener: ChangeListener | None = None
        failures = 0
        while not self._stop.is_set():
            try:
                if listener is None and self.settings.follow == "notify":
                    listener = self.kb.store.listen()
                if self.kb.catch_up():
                    self.applied += 1
                failures = 0
                self._wait(listener, self.settings.poll_interval)
            except Exception as exc:  # keep following: the next round may succeed
                failures += 1
                log.warning("catching up with the change log failed (%s); retrying", exc)
                if listener is not None:
                    _close(listener)
                    listener = None
                self._stop.wait(min(self.settings.poll_interval * failures, 30.0))
        if listener is not None:
            _close(listener)

    def _wait(self, listener: ChangeListener | None, seconds: float) -> None:
        """Until a change is committed (if ``listener``), ``seconds`` pass, or stop."""
        deadline = time.monotonic() + seconds
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if listener is None:
                self._stop.wait(min(left, _SLICE))
            elif listener.notifies(min(left, _SLICE)):
                return


def _close(listener: ChangeListener) -> None:
    try:
        listener.close()
    except Exception:  # already broken: nothing more to release
        log.debug("closing the change listener failed", exc_info=True)
