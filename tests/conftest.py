"""Shared fixtures: every test gets its own knowledge base in a temporary directory."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from glassrag import KnowledgeBase
from glassrag.eval.examples import examples_dir
from pg_cluster import Cluster, running_cluster, unavailable_reason

if TYPE_CHECKING:
    import numpy as np

    from glassrag.vectors.index import VectorIndex

EXAMPLES = examples_dir()
TESTS = Path(__file__).resolve().parent  # tests/, whose folders follow the package layout
REPO = TESTS.parent
TEST_DATA = TESTS / "data"
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _isolate_user_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Never touch a real ./.glassrag or $GLASSRAG_KB of the person running the tests.
    monkeypatch.delenv("GLASSRAG_KB", raising=False)
    monkeypatch.delenv("GLASSRAG_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    """A real PostgreSQL server for the whole session (skipped when none can be started)."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_dsn(postgres: Cluster) -> str:
    """The DSN of a new, empty database of its own."""
    return postgres.new_database()


def postgres_kb_dir(kb_dir: Path, dsn: str, extra: str = "") -> Path:
    """A knowledge-base folder whose truth is the PostgreSQL database ``dsn``."""
    kb_dir.mkdir(parents=True, exist_ok=True)
    (kb_dir / "glassrag.toml").write_text(
        f'[store]\nbackend = "postgres"\ndsn = "{dsn}"\n{extra}', encoding="utf-8")
    return kb_dir


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    base = KnowledgeBase.open(tmp_path / "kb")
    yield base
    base.close()


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def init_kb_with(kb_dir: Path, old: str, new: str) -> Path:
    """`glassrag init` a knowledge base, then change one default in its glassrag.toml."""
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    text = config.read_text()
    assert old in text, f"{old!r} is not in the default settings"
    config.write_text(text.replace(old, new, 1))
    return kb_dir


def top_rows(index: VectorIndex, query: np.ndarray, readable: Collection[int] | None,
             k: int) -> list[tuple[int, float]]:
    """``[(rowid, score)]`` of the best ``k`` readable rows: the permitted matches of
    ``index.search``."""
    return [(m.rowid, m.score) for m in index.search(query, readable, k)[0]]
