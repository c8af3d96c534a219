"""A bound on concurrent model-backed calls in the servers (``[server]
max_concurrent_model_calls`` and ``max_waiting_model_calls``).

An ask may wait tens of seconds for a model. Run as a plain ``def`` route, each waiting ask
holds one of the 40 worker threads that anyio lends to *every* sync route, so 40 slow asks
left ``/healthz`` and ``/search`` queueing behind them (15.6 s for /healthz with 45 asks
against an 8 s model). Through the gate an ask waits for its turn on the event loop,
holding no thread, and then runs on a thread of its own limiter, outside that shared pool.
Beyond ``max_waiting`` waiting calls a new one is refused at once (503) rather than queued
for minutes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from glassrag.errors import ServerBusy

if TYPE_CHECKING:
    from anyio import CapacityLimiter

T = TypeVar("T")


class ModelGate:
    """At most ``limit`` calls of :meth:`run` execute at once and ``max_waiting`` wait
    (threadless); a call beyond both is refused with :class:`ServerBusy`."""

    def __init__(self, limit: int, max_waiting: int) -> None:
        if limit < 1 or max_waiting < 0:
            raise ValueError("the limit must be at least 1 and max_waiting at least 0")
        self.limit = limit
        self.max_waiting = max_waiting
        self._limiter: CapacityLimiter | None = None  # made in the loop that first uses it

    @property
    def waiting(self) -> int:
        """How many calls wait for a slot now."""
        return 0 if self._limiter is None else self._limiter.statistics().tasks_waiting

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on a worker thread once a slot is free. A cancelled caller (the client
        went away) stops waiting, but a call already running keeps its slot until it ends,
        so the bound holds for the threads actually busy."""
        import anyio
        import anyio.to_thread

        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.limit)
        stats = self._limiter.statistics()
        # No await between this check and joining the queue: the loop's one thread keeps
        # the count exact.
        if stats.borrowed_tokens >= self.limit and stats.tasks_waiting >= self.max_waiting:
            raise ServerBusy(f"{self.limit} model calls are running and {stats.tasks_waiting}"
                             " are waiting; try again later", limit=self.limit)
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter)
