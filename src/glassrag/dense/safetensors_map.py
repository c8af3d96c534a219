"""Read a ``.safetensors`` file as numpy arrays that map the file instead of copying it.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range, then the raw little-endian data. ``safetensors.numpy`` copies
every tensor into memory (0.18-0.25 s for MiniLM's 90 MB here, on every CLI call); mapping
the file costs about 1 ms, and only the pages a forward pass touches are read: most of the
word-embedding table never is. Every range is checked against the header and the file size,
so a truncated or hand-edited file is an error naming the file and tensor, never a crash.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from glassrag.errors import EmbeddingError

#: safetensors dtype codes numpy can represent (BF16 has no numpy dtype).
DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
    "I8": "i1", "U8": "u1", "BOOL": "?",
}
_MAX_HEADER = 100_000_000  # the reference implementation's limit


def map_tensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the safetensors file at ``path``, as read-only arrays over a memmap.

    Raises EmbeddingError naming the file (and the tensor) when the header is malformed, a
    byte range is outside the file or does not match the shape, or a dtype has no numpy form.
    """
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"{path}: cannot map the weights file: {exc}") from exc
    header, start = _header(path, data)
    tensors: dict[str, np.ndarray] = {}
    for name, entry in header.items():
        if name != "__metadata__":
            tensors[name] = _tensor(path, data, start, name, entry)
    return tensors


def _header(path: Path, data: np.ndarray) -> tuple[dict[str, object], int]:
    if len(data) < 8:
        raise EmbeddingError(f"{path}: not a safetensors file (shorter than its 8-byte header "
                             "length)")
    length = int.from_bytes(bytes(data[:8]), "little")
    if length > min(_MAX_HEADER, len(data) - 8):
        raise EmbeddingError(f"{path}: the header length {length} runs past the end of the "
                             f"file ({len(data)} bytes)")
    try:
        header = json.loads(bytes(data[8 : 8 + length]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbeddingError(f"{path}: the header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise EmbeddingError(f"{path}: the header is not a JSON object")
    return header, 8 + length


def _tensor(path: Path, data: np.ndarray, start: int, name: str, entry: object) -> np.ndarray:
    where = f"{path}: tensor {name!r}"
    if not isinstance(entry, dict):
        raise EmbeddingError(f"{where}: its header entry is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPES:
        raise EmbeddingError(f"{where}: dtype {dtype!r} is not supported (use one of "
                             f"{', '.join(DTYPES)})")
    if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)):
        raise EmbeddingError(f"{where}: shape {shape!r} is not a list of sizes")
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(n, int) for n in offsets) and 0 <= offsets[0] <= offsets[1]):
        raise EmbeddingError(f"{where}: data_offsets {offsets!r} is not a [begin, end] range")
    begin, end = start + offsets[0], start + offsets[1]
    if end > len(data):
        raise EmbeddingError(f"{where}: its bytes {offsets[0]}..{offsets[1]} run past the end "
                             f"of the file ({len(data) - start} data bytes)")
    item = np.dtype(DTYPES[dtype])
    if end - begin != math.prod(shape) * item.itemsize:
        raise EmbeddingError(f"{where}: {end - begin} bytes do not hold shape {shape} of "
                             f"{dtype}")
    return data[begin:end].view(item).reshape(shape)
