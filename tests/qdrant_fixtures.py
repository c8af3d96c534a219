"""Fixtures for the Qdrant tests; load with ``pytest_plugins = ["qdrant_fixtures"]``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from glassrag import KnowledgeBase
from qdrant_support import BACKENDS, drop_collections, qdrant_kb_dir


@pytest.fixture(params=BACKENDS)
def qdrant_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def qdrant_dir(tmp_path: Path, qdrant_backend: str) -> Iterator[Path]:
    kb_dir = qdrant_kb_dir(tmp_path / "kb", qdrant_backend)
    yield kb_dir
    drop_collections(kb_dir)


@pytest.fixture
def qdrant_kb(qdrant_dir: Path) -> Iterator[KnowledgeBase]:
    """A KnowledgeBase with ``[index] backend = "qdrant"`` (local mode, or the server)."""
    kb = KnowledgeBase.open(qdrant_dir)
    yield kb
    kb.close()
