"""A bound on how much of a model's reply is read: ``[llm] max_reply_bytes``.

The ``openai`` SDK reads a whole response body into memory, error bodies included, and a
misbehaving or hostile endpoint can send any amount (a reply with 200,000 citations was
1.1 GB). :func:`bounded_http_client` gives the SDK an HTTP client whose response hook swaps
each body stream for one that counts the bytes as they arrive and raises
:class:`ReplyTooLarge` past the limit, keeping only the first :data:`KEPT_BYTES` for the
trace. Compressed bodies are decompressed here, in bounded pieces, and counted after
decompression, so a small gzip bomb is refused as early as a large plain body.
"""

from __future__ import annotations

import functools
import sys
import zlib
from collections.abc import Iterator
from typing import Any

from glassrag.errors import ReplyTooLarge

# How much of an over-limit reply the trace keeps, to show what the endpoint was sending.
KEPT_BYTES = 16_384
_PIECE = 65_536  # decompress at most this much per step: a bomb never expands in memory
_DECODABLE = {"gzip", "x-gzip", "deflate"}


def bounded_http_client(openai: Any, limit: int, timeout: float) -> Any:
    """The SDK's default HTTP client, with every response body bounded to ``limit`` bytes.

    The request asks for an uncompressed reply; a server that compresses anyway is read
    through :class:`_Bounded`'s own decompressor (gzip and deflate; any other encoding
    cannot be bounded and is refused as too large before a byte is decoded).
    """
    def bound(response: Any) -> None:
        response.stream = _stream_class(_sync_byte_stream(response))(response, limit)

    return openai.DefaultHttpxClient(timeout=timeout, headers={"Accept-Encoding": "identity"},
                                     event_hooks={"response": [bound]})


class _Bounded:
    """Iterates the wrapped response stream, counting decoded bytes against the limit."""

    def __init__(self, response: Any, limit: int) -> None:
        self._inner = response.stream
        self._limit = limit
        self._status = int(response.status_code)
        self._head = bytearray()
        self._seen = 0
        encoding = response.headers.get("content-encoding", "").strip().lower()
        self._refused = bool(encoding) and encoding not in ("identity", *_DECODABLE)
        self._inflate = (zlib.decompressobj(zlib.MAX_WBITS | 32)
                         if encoding in _DECODABLE else None)
        if encoding in _DECODABLE:
            del response.headers["content-encoding"]  # decoded here, not again by the client

    def __iter__(self) -> Iterator[bytes]:
        if self._refused:
            raise ReplyTooLarge(self._limit, b"", self._status)
        for raw in self._inner:
            for piece in self._decode(raw):
                self._count(piece)
                yield piece

    def _decode(self, raw: bytes) -> Iterator[bytes]:
        if self._inflate is None:
            yield raw
            return
        data = raw
        while data:
            piece = self._inflate.decompress(data, _PIECE)
            data = self._inflate.unconsumed_tail
            if piece:
                yield piece

    def _count(self, piece: bytes) -> None:
        if len(self._head) < KEPT_BYTES:
            self._head += piece[: KEPT_BYTES - len(self._head)]
        self._seen += len(piece)
        if self._seen > self._limit:
            raise ReplyTooLarge(self._limit, bytes(self._head), self._status)

    def close(self) -> None:
        self._inner.close()


def _sync_byte_stream(response: Any) -> type:
    """``SyncByteStream`` of whichever HTTP library the SDK uses (httpx or httpx2): the
    client checks that a response's stream is an instance of it."""
    library = sys.modules[type(response).__module__.partition(".")[0]]
    base: type = library.SyncByteStream
    return base


@functools.cache
def _stream_class(base: type) -> type:
    return type("BoundedStream", (_Bounded, base), {})
