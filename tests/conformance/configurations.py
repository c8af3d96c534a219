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


EMBEDDED = Configuration("embedded", _embedded)
POSTGRES_EMBEDDED = Configuration("postgres+embedded", _postgres)

CONFIGURATIONS: list[Configuration] = [EMBEDDED, POSTGRES_EMBEDDED]
