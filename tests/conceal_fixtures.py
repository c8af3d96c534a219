"""The principals and embedder of the conceal differential tests."""

from __future__ import annotations

from glassrag import Principal

EMBEDDER = "hash:64"


P0 = Principal("p0")


ALICE = Principal("alice", roles=["employee"])
