"""The principals and embedder of the conceal differential tests, and the scrub that lets
two runs' outputs be compared."""

from __future__ import annotations

import re
from typing import Any

from glassrag import Principal

EMBEDDER = "hash:64"


P0 = Principal("p0")


ALICE = Principal("alice", roles=["employee"])


_TRACE_ID = re.compile(r"tr_[0-9a-f]{16}")


def scrub(value: Any) -> Any:
    """``value`` without what differs between any two asks: trace ids and creation times."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in ("trace_id", "created_at")}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return _TRACE_ID.sub("tr_X", value)
    return value
