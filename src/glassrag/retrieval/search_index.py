"""Which search index a knowledge base uses (``[index] backend``), and moving it to another.

``embedded`` is the Tantivy index in ``index/lexical`` (with the local vector index beside
it); ``qdrant`` is :class:`~glassrag.retrieval.qdrant_index.QdrantIndex`. Both are derived
from the truth, so moving is a rebuild: :func:`move_index` builds the new index completely
and only then switches ``[index]`` in glassrag.toml, so a failed build leaves the knowledge
base as it was. The old index is left on disk (moving back rebuilds it anyway).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from glassrag.errors import InvalidInput
from glassrag.locks import exclusive
from glassrag.retrieval.lexical import LexicalIndex
from glassrag.retrieval.search import SearchIndex
from glassrag.settings import IndexSettings, Settings, validation_problems, write_index_settings
from glassrag.store.database import Store

#: ``[index]`` keys :func:`move_index` takes besides ``backend``.
MOVE_OPTIONS = ("url", "api_key_env", "path", "collection")


def open_index(kb_dir: Path, settings: Settings) -> SearchIndex:
    """The index ``settings`` name for the knowledge base in ``kb_dir``."""
    if settings.index.backend == "qdrant":
        from glassrag.retrieval.qdrant_index import QdrantIndex

        # The embedded index's lock file: derived indexes are fed one writer at a time.
        return QdrantIndex(kb_dir, settings, lambda: exclusive(kb_dir / "index" / "index.lock"))
    return LexicalIndex(kb_dir / "index" / "lexical")


def close_index(index: SearchIndex) -> None:
    if not isinstance(index, LexicalIndex):
        index.close()


def move_index(kb_dir: Path, store: Store, settings: Settings, backend: str,
               options: dict[str, Any]) -> tuple[Settings, SearchIndex, int]:
    """Build the ``backend`` index (with ``[index]`` ``options``) from the truth, then record
    it in glassrag.toml; return the new settings, the new index and its chunk count."""
    unknown = set(options) - set(MOVE_OPTIONS)
    if unknown:
        raise InvalidInput(f"unknown [index] option(s): {', '.join(sorted(unknown))}",
                           field="index")
    values = {"backend": backend, **{k: v for k, v in options.items() if v is not None}}
    try:
        section = IndexSettings.model_validate({**settings.index.model_dump(), **values})
    except ValidationError as exc:
        raise InvalidInput(f"[index]: {validation_problems(exc)}", field="index") from None
    target = settings.model_copy(update={"index": section})
    index = open_index(kb_dir, target)
    try:
        count = index.rebuild(store)
    except BaseException:
        close_index(index)
        raise
    return write_index_settings(kb_dir, values), index, count
