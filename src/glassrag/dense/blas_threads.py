"""A single-threaded BLAS for the span of a block, for code that parallelises on its own.

The numpy encoder runs many small matrix products (attention, one text at a time) and
spreads its forward passes over threads itself. OpenBLAS's own threads get in the way:
with two of them on a loaded 2-core machine, a batch of per-head products took 0.85 s of
wall time against 0.06 s with one. The limit is process-wide (BLAS has no per-thread
setting), so it is counted: the first block to enter sets it, the last to leave restores
the previous setting. OpenBLAS ignores a change made from another thread than the main one
once the main thread has set a count, so a block entered first in the main thread is best
left last there too (the CLI's and the server's case); otherwise the restore may not take.
Without ``threadpoolctl`` nothing is changed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_depth = 0
_limiter: Any = None
_controller: Any = None


def available_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


@contextmanager
def blas_single_threaded() -> Iterator[None]:
    """Within the block, numpy's BLAS (and any other BLAS loaded before the first call)
    uses one thread. Re-entrant and safe to enter from several threads at once."""
    global _depth, _limiter
    with _lock:
        if _depth == 0:
            _limiter = _limit_to_one()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None


def _limit_to_one() -> Any:
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return None
        # Built once: it scans the loaded libraries (~5 ms); a limit costs ~20 us after.
        # numpy's BLAS, the one that matters here, is loaded by then.
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
