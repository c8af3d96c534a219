"""What the rewrite leak tests share: a principal with no roles and the output cleaner."""

from __future__ import annotations

import json

from glassrag import Principal
from rewrite_fixtures import (
    CANARIES,
)
from rewrite_fixtures import stub as stub  # noqa: F401  (the fixture)

NOBODY = Principal("p0")  # no roles beyond public


def _clean(value: object) -> None:
    dumped = json.dumps(value, ensure_ascii=False, default=str)
    for canary in CANARIES:
        assert canary not in dumped
