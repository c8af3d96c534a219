"""Saving and loading a VectorIndex directory.

Layout (``G`` is a generation number)::

    state.json          {"format", "applied_seq", "model", "dim", "gen", "main", "hnsw", "aux"}
    main-G.<part>.npy   vectors (memory-mapped on load), rowids, docs, sets
    hnsw-G.faiss        the graph over main, when there is one
    aux-G.npz           live mask and the delta segment (small, rewritten on every save)
    aux-G.json          the document table (doc_id per document number)

New files are written first and ``state.json`` is replaced atomically last, so a crash at
any point leaves either the old or the new index readable; files no state refers to are
deleted on the next save. The big main files are rewritten only when main itself changed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from glassrag.vectors.faisslib import load_faiss
from glassrag.vectors.hnsw import Calibration
from glassrag.vectors.segment import Segment

STATE_NAME = "state.json"
# Bump when the layout changes; an index of another format is rebuilt from SQLite.
VECTOR_FORMAT = 1
_PARTS = ("vectors", "rowids", "docs", "sets")


def read_state(directory: Path) -> dict[str, Any]:
    try:
        state = json.loads((directory / STATE_NAME).read_text())
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


@dataclass
class SavedIndex:
    """What a vector index directory holds: the index's whole persistent state."""

    dim: int
    model: str
    main: Segment
    delta: Segment
    hnsw: Any
    docs: list[str]
    applied_seq: int
    calibration: Calibration | None


#: (main vectors, graph, file stem) as last saved or loaded: an unchanged main is not
#: rewritten. The index keeps it and hands it back on the next save.
SaveMarker = tuple[np.ndarray, Any, str]


def save_index(index: SavedIndex, directory: Path, marker: SaveMarker | None) -> SaveMarker:
    """Write ``index`` atomically; return the marker to pass to the next save."""
    directory.mkdir(parents=True, exist_ok=True)
    state = read_state(directory)
    gen = int(state.get("gen", 0)) + 1
    saved = marker
    if saved is not None and saved[0] is index.main.vectors and saved[1] is index.hnsw \
            and state.get("main") == saved[2]:
        main_name, hnsw_name = state["main"], state.get("hnsw")
    else:
        main_name, hnsw_name = f"main-{gen}", None
        for part in _PARTS:
            _save_npy(directory / f"{main_name}.{part}.npy", getattr(index.main, part))
        if index.hnsw is not None:
            hnsw_name = f"hnsw-{gen}.faiss"
            load_faiss().write_index(index.hnsw, str(directory / hnsw_name))
    aux_name = f"aux-{gen}"
    delta = index.delta.without_docs(np.zeros(0, np.int32))  # drops masked rows, if any
    with open(directory / f"{aux_name}.npz", "wb") as handle:
        np.savez(handle, live=index.main.live if index.main.live is not None else np.zeros(0, bool),
                 **{f"delta_{p}": getattr(delta, p) for p in _PARTS})
    (directory / f"{aux_name}.json").write_text(json.dumps({"docs": index.docs},
                                                           ensure_ascii=False))
    new_state = {
        "format": VECTOR_FORMAT, "applied_seq": index.applied_seq, "model": index.model,
        "dim": index.dim, "gen": gen, "main": main_name, "hnsw": hnsw_name, "aux": aux_name,
        "count": index.main.live_count + index.delta.live_count,
        "calibration": index.calibration.to_dict() if index.calibration else None,
    }
    tmp = directory / (STATE_NAME + ".tmp")
    tmp.write_text(json.dumps(new_state))
    os.replace(tmp, directory / STATE_NAME)
    _remove_unreferenced(directory, {main_name, aux_name, hnsw_name})
    return (index.main.vectors, index.hnsw, main_name)


def _save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array))
        handle.flush()
        os.fsync(handle.fileno())


def _remove_unreferenced(directory: Path, keep: set[str | None]) -> None:
    for path in directory.iterdir():
        stem = path.name.split(".", 1)[0]
        if stem.startswith(("main-", "aux-", "hnsw-")) and stem not in keep \
                and path.name not in keep:
            path.unlink(missing_ok=True)


def load_index(directory: Path) -> tuple[SavedIndex, SaveMarker] | None:
    """The saved index and its marker, or None when there is none or it is unreadable."""
    state = read_state(directory)
    if state.get("format") != VECTOR_FORMAT:
        return None
    try:
        main = state["main"]
        # mmap: opening a 1.5 GB matrix costs nothing; pages are read on the first scan. Kept
        # as a plain ndarray view of the map: indexing numpy's memmap subclass costs ~70 us
        # a call, and every exact search gathers its candidates' rows.
        arrays = [np.asarray(np.load(directory / f"{main}.vectors.npy", mmap_mode="r"))]
        arrays += [np.load(directory / f"{main}.{p}.npy") for p in _PARTS[1:]]
        with np.load(directory / f"{state['aux']}.npz") as aux:
            live = aux["live"]
            delta = [aux[f"delta_{p}"] for p in _PARTS]
        tables = json.loads((directory / f"{state['aux']}.json").read_text())
        segment = Segment.build(*arrays)
        if live.size:
            segment = Segment(segment.vectors, segment.rowids, segment.docs, segment.sets,
                              live, segment.blocks)
        hnsw = load_faiss().read_index(str(directory / state["hnsw"])) \
            if state.get("hnsw") else None
        loaded = SavedIndex(
            dim=int(state["dim"]), model=str(state.get("model", "")), main=segment,
            delta=Segment.build(*delta), hnsw=hnsw, docs=list(tables["docs"]),
            applied_seq=int(state.get("applied_seq", 0)),
            calibration=Calibration.from_dict(state["calibration"])
            if state.get("calibration") else None,
        )
    except (OSError, KeyError, ValueError, RuntimeError):
        return None
    return loaded, (segment.vectors, hnsw, main)
