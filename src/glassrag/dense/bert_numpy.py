"""A numpy runtime for BERT sentence encoders saved by sentence-transformers (all-MiniLM-L6-v2).

Loading sentence-transformers means importing torch and transformers: 6.1 s and 516 MB
per CLI call, for a model whose forward pass is a few matrix products. This runtime reads
the same directory -- ``config.json``, ``model.safetensors`` (mapped, not copied),
``tokenizer.json`` (the ``tokenizers`` package), ``sentence_bert_config.json`` and the
pooling config -- and computes the same vectors: BERT's encoder (post-LayerNorm, exact GELU),
mean pooling over the attention mask, L2 normalisation. It needs numpy and ``tokenizers``
only. :func:`unsupported` says why a directory is outside what it runs (another
architecture, another pooling, a default prompt…), so callers can fall back to
sentence-transformers instead of computing wrong vectors.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from glassrag.dense.bert_layers import Layer, encoder_layer, layer_norm, mean_pool
from glassrag.dense.blas_threads import available_cores, blas_single_threaded
from glassrag.dense.safetensors_map import map_tensors
from glassrag.errors import EmbeddingError

#: Tokens per forward pass: enough rows for efficient matrix products, while the
#: (tokens x 1536) feed-forward activations stay near 25 MB.
TOKEN_BUDGET = 4096

_MODULES = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize")
_POOLING_OFF = ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                "pooling_mode_lasttoken")


@dataclass(frozen=True)
class BertShape:
    """What the forward pass needs from ``config.json`` and ``sentence_bert_config.json``."""

    layers: int
    hidden: int
    heads: int
    intermediate: int
    eps: float
    max_tokens: int


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbeddingError(f"{path}: cannot read it: {exc}") from exc


def unsupported(path: Path) -> str | None:
    """Why the sentence-transformers directory ``path`` is not a model this runtime computes
    exactly (a short reason), or None when it is: a BertModel with absolute positions and
    GELU, mean pooling only, no extra modules, no default prompt, safetensors weights."""
    for name in ("config.json", "modules.json", "tokenizer.json", "model.safetensors",
                 "1_Pooling/config.json"):
        if not (path / name).is_file():
            return f"no {name}"
    modules = _json(path / "modules.json")
    entries = modules if isinstance(modules, list) else []
    kinds = [m.get("type") if isinstance(m, dict) else None for m in entries]
    if kinds not in (list(_MODULES[:2]), list(_MODULES)) or entries[0].get("path"):
        return f"modules.json lists {kinds}, not Transformer, Pooling[, Normalize]"
    config = _json(path / "config.json") or {}
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu" \
            or config.get("position_embedding_type", "absolute") != "absolute" \
            or config.get("is_decoder"):
        return "config.json is not a BERT encoder with absolute positions and exact GELU"
    pooling = _json(path / "1_Pooling" / "config.json") or {}
    if not pooling.get("pooling_mode_mean_tokens") or any(pooling.get(k) for k in _POOLING_OFF):
        return "the pooling is not mean pooling alone"
    sbert = _json(path / "sentence_bert_config.json") or {}
    if sbert.get("do_lower_case"):
        return "sentence_bert_config.json sets do_lower_case"
    st_config = _json(path / "config_sentence_transformers.json") or {}
    if st_config.get("default_prompt_name"):
        return "config_sentence_transformers.json sets a default prompt"
    return None


def read_shape(path: Path) -> BertShape:
    """The encoder's sizes and the truncation length sentence-transformers uses: the
    ``max_seq_length`` of ``sentence_bert_config.json``, else the tokenizer's
    ``model_max_length``, capped by the position table."""
    config = _json(path / "config.json") or {}
    sbert = _json(path / "sentence_bert_config.json") or {}
    tokenizer = _json(path / "tokenizer_config.json") or {}
    positions = int(config.get("max_position_embeddings", 512))
    limit = sbert.get("max_seq_length") or tokenizer.get("model_max_length") or positions
    try:
        shape = BertShape(int(config["num_hidden_layers"]), int(config["hidden_size"]),
                          int(config["num_attention_heads"]),
                          int(config["intermediate_size"]),
                          float(config.get("layer_norm_eps", 1e-12)),
                          min(int(limit), positions))
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbeddingError(f"{path / 'config.json'}: missing or bad field {exc}") from exc
    if shape.hidden % shape.heads:
        raise EmbeddingError(f"{path / 'config.json'}: hidden_size {shape.hidden} is not a "
                             f"multiple of num_attention_heads {shape.heads}")
    return shape


class NumpyBert:
    """A sentence-transformers BERT directory, run with numpy. Thread-safe: a forward pass
    keeps no state outside its own arrays."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.path = path
        self.threads = threads or available_cores()
        self.shape = read_shape(path)
        try:
            self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises its own Exception subclass
            raise EmbeddingError(f"{path / 'tokenizer.json'}: cannot load it: {exc}") from exc
        # tokenizer.json may carry its own padding and truncation (MiniLM's pads every text
        # to 128); sentence-transformers truncates to max_seq_length and pads per batch.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.shape.max_tokens)
        weights = map_tensors(path / "model.safetensors")
        vocabulary = self.tokenizer.get_vocab_size(with_added_tokens=True)
        self.embeddings, self.layers = _arrange(weights, self.shape, vocabulary,
                                                path / "model.safetensors")

    @property
    def dim(self) -> int:
        return self.shape.hidden

    def encode(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled, L2-normalised float32 vectors of ``texts``, one row each.

        Each forward pass takes consecutive texts up to :data:`TOKEN_BUDGET` tokens, packed
        without padding; passes run on ``threads`` threads, each with a single-threaded BLAS
        (:func:`blas_single_threaded`).
        """
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]
        lengths = [len(row) for row in ids]
        # Enough packs to keep every thread busy, none over the budget.
        budget = min(TOKEN_BUDGET, -(-sum(lengths) // self.threads))
        packs = _packs(lengths, budget)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with blas_single_threaded():
            if len(packs) == 1 or self.threads == 1:
                vectors = [self._forward(ids[start:end]) for start, end in packs]
            else:
                with ThreadPoolExecutor(min(self.threads, len(packs))) as pool:
                    vectors = list(pool.map(lambda pack: self._forward(ids[slice(*pack)]),
                                            packs))
        for (start, end), part in zip(packs, vectors, strict=True):
            out[start:end] = part
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, np.float32(1e-12))

    def _forward(self, rows: list[list[int]]) -> np.ndarray:
        lengths = np.array([len(row) for row in rows])
        ends = np.cumsum(lengths)
        starts = ends - lengths
        spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
        ids = np.fromiter((i for row in rows for i in row), dtype=np.int64, count=int(ends[-1]))
        positions = np.arange(len(ids)) - np.repeat(starts, lengths)
        words, position_table, types, gamma, beta = self.embeddings
        x = words[ids] + position_table[positions] + types[0]  # one segment: token type 0
        x = layer_norm(x, gamma, beta, self.shape.eps)
        for layer in self.layers:
            x = encoder_layer(x, layer, spans, self.shape.heads, self.shape.eps)
        return mean_pool(x, spans)


def _packs(lengths: list[int], budget: int) -> list[tuple[int, int]]:
    """[start, end) ranges of consecutive texts holding at most ``budget`` tokens each
    (a longer text goes alone)."""
    packs: list[tuple[int, int]] = []
    start, tokens = 0, 0
    for i, length in enumerate(lengths):
        if i > start and tokens + length > budget:
            packs.append((start, i))
            start, tokens = i, 0
        tokens += length
    if lengths:
        packs.append((start, len(lengths)))
    return packs


def _arrange(weights: dict[str, np.ndarray], shape: BertShape, vocabulary: int,
             where: Path) -> tuple[tuple[np.ndarray, ...], list[Layer]]:
    """The tensors in forward-pass order, float32, checked against the config's sizes (a
    table needs at least as many rows as the tokenizer's ids and the truncation length)."""
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

    def get(name: str, *size: int, rows_at_least: bool = False) -> np.ndarray:
        array = weights.get(prefix + name)
        if array is None:
            raise EmbeddingError(f"{where}: tensor {prefix + name!r} is missing")
        fits = array.shape == size or (rows_at_least and array.ndim == len(size)
                                       and array.shape[1:] == size[1:]
                                       and array.shape[0] >= size[0])
        if not fits:
            wanted = f"at least {size[0]} rows of {list(size[1:])}" if rows_at_least \
                else str(list(size))
            raise EmbeddingError(f"{where}: tensor {prefix + name!r} has shape "
                                 f"{list(array.shape)}, expected {wanted}")
        # A float32 file stays mapped; float16 weights are widened once, here.
        return array if array.dtype == np.float32 else array.astype(np.float32)

    h, inner = shape.hidden, shape.intermediate
    embeddings = (
        get("embeddings.word_embeddings.weight", vocabulary, h, rows_at_least=True),
        get("embeddings.position_embeddings.weight", shape.max_tokens, h, rows_at_least=True),
        get("embeddings.token_type_embeddings.weight", 1, h, rows_at_least=True),
        get("embeddings.LayerNorm.weight", h), get("embeddings.LayerNorm.bias", h))
    # Q, K and V in one product; Q pre-scaled by 1/sqrt(head size), as attention scales it.
    scale = np.float32(1 / math.sqrt(h // shape.heads))
    layers = []
    for i in range(shape.layers):
        at = f"encoder.layer.{i}."
        qkv = [(get(f"{at}attention.self.{n}.weight", h, h), get(f"{at}attention.self.{n}.bias", h))
               for n in ("query", "key", "value")]
        layers.append(Layer(
            qkv_weight=np.concatenate([qkv[0][0] * scale, qkv[1][0], qkv[2][0]]),
            qkv_bias=np.concatenate([qkv[0][1] * scale, qkv[1][1], qkv[2][1]]),
            out_weight=get(f"{at}attention.output.dense.weight", h, h),
            out_bias=get(f"{at}attention.output.dense.bias", h),
            out_norm=(get(f"{at}attention.output.LayerNorm.weight", h),
                      get(f"{at}attention.output.LayerNorm.bias", h)),
            up_weight=get(f"{at}intermediate.dense.weight", inner, h),
            up_bias=get(f"{at}intermediate.dense.bias", inner),
            down_weight=get(f"{at}output.dense.weight", h, inner),
            down_bias=get(f"{at}output.dense.bias", h),
            down_norm=(get(f"{at}output.LayerNorm.weight", h),
                       get(f"{at}output.LayerNorm.bias", h)),
        ))
    return embeddings, layers
