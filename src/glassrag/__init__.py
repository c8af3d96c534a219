"""glassrag: a glass-box RAG engine.

>>> from glassrag import KnowledgeBase, Principal
>>> kb = KnowledgeBase.open("/tmp/kb")             # doctest: +SKIP
>>> kb.ingest(["notes/"])                          # doctest: +SKIP
>>> kb.search("refund window", principal=Principal("alice", roles=["employee"]))  # doctest: +SKIP

``import glassrag`` loads only the records and the errors; :class:`KnowledgeBase` (and with
it the store, the lexical index and the pipeline) is imported on first use, so a script or a
command that needs neither pays for neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from glassrag.errors import GlassragError
from glassrag.records import Chunk, Document, Hit, IngestReport, Principal, SearchResult

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "Document",
    "GlassragError",
    "Hit",
    "IngestReport",
    "KnowledgeBase",
    "Principal",
    "SearchResult",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """``glassrag.KnowledgeBase``, imported when first asked for (PEP 562)."""
    if name == "KnowledgeBase":
        from glassrag.kb import KnowledgeBase

        globals()[name] = KnowledgeBase
        return KnowledgeBase
    raise AttributeError(f"module 'glassrag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
