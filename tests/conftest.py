"""Shared fixtures: every test gets its own knowledge base in a temporary directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from glassrag import KnowledgeBase
from glassrag.examples import examples_dir

EXAMPLES = examples_dir()
SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(autouse=True)
def _isolate_user_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Never touch a real ./.glassrag or $GLASSRAG_KB of the person running the tests.
    monkeypatch.delenv("GLASSRAG_KB", raising=False)
    monkeypatch.chdir(tmp_path)


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
