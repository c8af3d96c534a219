"""The configurations the conformance suite holds to the same answers.

A configuration is a name and a factory for the ``glassrag.toml`` of a new knowledge base
(given the pytest request, for fixtures such as the PostgreSQL server, and the knowledge
base's folder). To add one, append it to :data:`CONFIGURATIONS`; every test of
:class:`kb_conformance.KnowledgeBaseConformance` then runs on it too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Configuration:
    name: str
    # (request, kb_dir) -> the settings file's text: sections of its own only, since a
    # test may add others ([ingest], [permissions]...).
    settings: Callable[[pytest.FixtureRequest, Path], str]
    # False for an engine that scores on its own (Qdrant: BM25 with exact chunk lengths
    # where Tantivy quantises them to a byte, and hybrid fused by Qdrant): then answers and
    # hits must be the embedded ones but for their scores, which must be close.
    same_scores: bool = True

    def new_kb_dir(self, request: pytest.FixtureRequest, kb_dir: Path, extra: str = "") -> Path:
        """A new knowledge-base folder in this configuration, plus ``extra`` settings."""
        kb_dir.mkdir(parents=True, exist_ok=True)
        text = self.settings(request, kb_dir)
        (kb_dir / "glassrag.toml").write_text(f"{text}\n{extra}", encoding="utf-8")
        return kb_dir


def _embedded(request: pytest.FixtureRequest, kb_dir: Path) -> str:
    return ""  # SQLite + Tantivy (+ numpy/FAISS vectors): every default


def _postgres(request: pytest.FixtureRequest, kb_dir: Path) -> str:
    dsn = request.getfixturevalue("postgres").new_database()
    return f'[store]\nbackend = "postgres"\ndsn = "{dsn}"\n'


def _qdrant(backend: str) -> Callable[[pytest.FixtureRequest, Path], str]:
    """``[index] backend = "qdrant"``: qdrant-client's local mode in the knowledge base's
    folder (``local``), or the server at ``GLASSRAG_TEST_QDRANT_URL`` (``server``; skipped
    when it is not set) with a collection of its own, dropped after the test."""
    def settings(request: pytest.FixtureRequest, kb_dir: Path) -> str:
        # Imported here: without the [qdrant] extra only these configurations skip.
        import qdrant_support

        if backend == "server" and not qdrant_support.SERVER_URL:
            pytest.skip("GLASSRAG_TEST_QDRANT_URL is not set")
        request.addfinalizer(lambda: qdrant_support.drop_collections(kb_dir))
        return qdrant_support.index_section(backend)
    return settings


def _postgres_qdrant(backend: str) -> Callable[[pytest.FixtureRequest, Path], str]:
    qdrant = _qdrant(backend)
    return lambda request, kb_dir: _postgres(request, kb_dir) + qdrant(request, kb_dir)


EMBEDDED = Configuration("embedded", _embedded)
POSTGRES_EMBEDDED = Configuration("postgres+embedded", _postgres)
POSTGRES_QDRANT = Configuration("postgres+qdrant", _postgres_qdrant("local"),
                                same_scores=False)
POSTGRES_QDRANT_SERVER = Configuration("postgres+qdrant-server", _postgres_qdrant("server"),
                                       same_scores=False)

CONFIGURATIONS: list[Configuration] = [EMBEDDED, POSTGRES_EMBEDDED, POSTGRES_QDRANT,
                                       POSTGRES_QDRANT_SERVER]
