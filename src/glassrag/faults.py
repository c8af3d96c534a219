"""Named crash points for the crash tests.

``GLASSRAG_CRASH_AT=name[:n]`` kills the process with SIGKILL the n-th time (default 1st)
execution passes ``crash_point(name)``. Unset, a crash point costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

_passes: dict[str, int] = {}


def crash_point(name: str) -> None:
    target = os.environ.get("GLASSRAG_CRASH_AT")
    if not target:
        return
    wanted, _, count = target.partition(":")
    if wanted != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] == int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
