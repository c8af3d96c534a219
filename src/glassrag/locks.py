"""Cross-process locks: one writer at a time, whichever process it is.

``flock`` locks belong to the open file, so the kernel releases them when the holder exits
for any reason (SIGKILL included): a lock file left behind never blocks anyone.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path

WRITE_LOCK_NAME = "write.lock"


@contextlib.contextmanager
def exclusive(path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block.

    Waits while another holder has it; ``on_wait`` is called once first if it must wait, so
    a command can say why it is not moving.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        if on_wait is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                on_wait()
                fcntl.flock(handle, fcntl.LOCK_EX)
        else:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
