"""``hash:DIM``: feature hashing of the analyzer's terms, a lexical embedder with no model."""

from __future__ import annotations

import hashlib

import numpy as np

from glassrag.dense.base import BaseEmbedder
from glassrag.errors import InvalidInput
from glassrag.text.analysis import analyze


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
