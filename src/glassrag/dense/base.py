"""What every embedder is: the protocol, and the batching and output checks they share.

Questions and passages are embedded by two methods, :meth:`~BaseEmbedder.embed_queries` and
:meth:`~BaseEmbedder.embed`, because asymmetric models (E5, BGE, GTE…) were trained with a
different instruction prefix on each side. A prefix changes every vector, so it becomes part
of the embedder's ``name`` (stored vectors are keyed by it); without prefixes the name is the
bare spec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol
from urllib.parse import urlencode

import numpy as np

from glassrag.errors import EmbeddingError, InvalidInput

Progress = Callable[[int, int], None]


class Embedder(Protocol):
    """What every embedder offers. ``dim`` may load the model (or ask the server) to find
    out, so it is a property and not read until needed."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


class BaseEmbedder:
    """Batching, progress and output validation shared by all embedders.

    Subclasses implement ``_embed_batch`` (raw vectors, any float dtype) and ``dim``; an
    asymmetric model also overrides ``_embed_query_batch``.
    """

    name: str = "base"
    batch_size: int = 64

    @property
    def dim(self) -> int:
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Embed ``texts`` in batches; rows are float32 and L2-normalised.

        Raises InvalidInput for an empty text (naming its position) and EmbeddingError for
        a NaN/infinite/zero vector or a vector of the wrong dimension.
        """
        return self._run(texts, self._embed_batch, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search questions, validated like :meth:`embed`.

        The same vectors as ``embed`` unless the model wants queries marked (a query prefix,
        E5's ``query:``); passages are always embedded with ``embed``.
        """
        return self._run(texts, self._embed_query_batch, None)

    def _embed_query_batch(self, texts: list[str]) -> np.ndarray:
        return self._embed_batch(texts)

    def _run(self, texts: Sequence[str], embed_batch: Callable[[list[str]], np.ndarray],
             progress: Progress | None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise InvalidInput(f"{self.name}: text {i} is empty; nothing to embed",
                                   field="texts", index=i)
        total = len(texts)
        parts: list[np.ndarray] = []
        for start in range(0, total, self.batch_size):
            batch = texts[start : start + self.batch_size]
            parts.append(self._check(embed_batch(batch), len(batch), start))
            if progress is not None:
                progress(start + len(batch), total)
        return np.concatenate(parts)

    def _check(self, raw: np.ndarray, count: int, offset: int) -> np.ndarray:
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != count:
            raise EmbeddingError(
                f"{self.name}: expected {count} vectors, got an array of shape {vectors.shape}"
            )
        if vectors.shape[1] != self.dim:
            raise EmbeddingError(
                f"{self.name}: vectors have dimension {vectors.shape[1]}, expected {self.dim}",
                expected=self.dim, got=int(vectors.shape[1]),
            )
        bad = ~np.isfinite(vectors).all(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0]) + offset
            raise EmbeddingError(f"{self.name}: the vector for text {i} contains NaN or inf",
                                 index=i)
        norms = np.linalg.norm(vectors, axis=1)
        # float32 rounding never gets a real embedding this close to zero; a model that
        # returns it has failed (e.g. an all-padding input), and cosine would divide by 0.
        zero = norms < 1e-12
        if zero.any():
            i = int(np.flatnonzero(zero)[0]) + offset
            raise EmbeddingError(f"{self.name}: the vector for text {i} is all zeros", index=i)
        return vectors / norms[:, None]


PREFIX_OPTIONS = ("query_prefix", "passage_prefix")


def check_prefixes(query_prefix: str, passage_prefix: str) -> None:
    """Prefixes are plain strings (a spec's query string may have turned "1" into 1)."""
    for option, value in zip(PREFIX_OPTIONS, (query_prefix, passage_prefix), strict=True):
        if not isinstance(value, str):
            raise ValueError(f"{option} must be a string, got {value!r}")


def prefixed_name(name: str, query_prefix: str, passage_prefix: str) -> str:
    """``name`` plus the prefixes that are set, as a query string ``parse_embedder`` reads back.

    The name is stored with the vectors and re-parsed as a spec when a knowledge base is
    reopened without ``--embedder``, so it must rebuild the same embedder; without prefixes
    it stays the bare spec, which keeps existing knowledge bases valid.
    """
    options = {k: v for k, v in zip(PREFIX_OPTIONS, (query_prefix, passage_prefix), strict=True)
               if v}
    return f"{name}?{urlencode(options, safe=':')}" if options else name
