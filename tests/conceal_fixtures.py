"""The principals and embedder of the conceal differential tests, and the scrub that lets
two runs' outputs be compared."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conftest import init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal

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


def batched_kb(root: Path, name: str, batches: list[list[dict[str, Any]]], *,
               embedder: str | None = None, disclosure: str = "conceal",
               settings: Sequence[tuple[str, str]] = ()) -> Path:
    """A knowledge base at ``root / name`` with ``disclosure``, its ``glassrag.toml`` lines
    replaced as ``settings`` says (old, new); each batch of records is its own ingest, in
    order."""
    kb_dir = init_kb_with(root / name, 'disclosure = "disclose"',
                          f'disclosure = "{disclosure}"')
    config = kb_dir / "glassrag.toml"
    text = config.read_text()
    for old, new in settings:
        assert old in text, f"{old!r} is not in the default settings"
        text = text.replace(old, new, 1)
    config.write_text(text)
    with KnowledgeBase.open(kb_dir) as kb:
        for n, batch in enumerate(batches):
            report = kb.ingest([write_jsonl(root / f"{name}-{n}.jsonl", batch)],
                               embedder=embedder)
            assert report.failed == [] and report.added == len(batch)
    return kb_dir
