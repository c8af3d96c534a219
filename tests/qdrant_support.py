"""Knowledge bases on the Qdrant index, for the tests in tests/test_qdrant*.py.

Every test runs on qdrant-client's local mode (in-process) and, given
``GLASSRAG_TEST_QDRANT_URL`` (and optionally ``GLASSRAG_TEST_QDRANT_API_KEY``), unchanged
against that Qdrant server; there each knowledge base gets its own collection, dropped after.
``qdrant_kb_dir`` is the conformance-suite hook: a knowledge-base directory configured with
``[index] backend = "qdrant"``; the fixtures are in tests/qdrant_fixtures.py.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

pytest.importorskip("qdrant_client", reason="the [qdrant] extra is not installed")

SERVER_URL = os.environ.get("GLASSRAG_TEST_QDRANT_URL", "")
KEY_ENV = "GLASSRAG_TEST_QDRANT_API_KEY"
BACKENDS = [
    pytest.param("local", id="qdrant-local"),
    pytest.param("server", id="qdrant-server", marks=pytest.mark.skipif(
        not SERVER_URL, reason="GLASSRAG_TEST_QDRANT_URL is not set")),
]


def index_values(backend: str, **extra: object) -> dict[str, object]:
    """``[index]`` settings for ``backend`` ("local" or "server") plus ``extra`` keys."""
    values: dict[str, object] = {"backend": "qdrant"}
    if backend == "server":
        values.update(url=SERVER_URL, collection=f"glassrag-test-{uuid.uuid4().hex[:10]}")
        if os.environ.get(KEY_ENV):
            values["api_key_env"] = KEY_ENV
    values.update(extra)
    return values


def index_section(backend: str, **extra: object) -> str:
    """The same as a glassrag.toml section."""
    return "[index]\n" + "".join(f"{k} = {json.dumps(v)}\n"
                                 for k, v in index_values(backend, **extra).items())


def qdrant_kb_dir(kb_dir: Path, backend: str, settings: str = "", **index: object) -> Path:
    """``kb_dir`` with a glassrag.toml selecting the Qdrant index (and ``settings``)."""
    kb_dir.mkdir(parents=True, exist_ok=True)
    (kb_dir / "glassrag.toml").write_text(settings + "\n" + index_section(backend, **index),
                                          encoding="utf-8")
    return kb_dir


def drop_collections(kb_dir: Path) -> None:
    """On a server, drop the knowledge base's collections (local mode lives in kb_dir)."""
    from glassrag.settings import load_settings

    config = load_settings(kb_dir).index
    if not config.url:
        return
    from qdrant_client import QdrantClient

    client = QdrantClient(url=config.url, api_key=os.environ.get(config.api_key_env or KEY_ENV))
    for info in client.get_collections().collections:
        if info.name.startswith(config.collection):
            client.delete_collection(info.name)
    client.close()
