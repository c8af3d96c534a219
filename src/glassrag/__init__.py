"""glassrag: a glass-box RAG engine.

>>> from glassrag import KnowledgeBase, Principal
>>> kb = KnowledgeBase.open("/tmp/kb")             # doctest: +SKIP
>>> kb.ingest(["notes/"])                          # doctest: +SKIP
>>> kb.search("refund window", principal=Principal("alice", roles=["employee"]))  # doctest: +SKIP
"""

from glassrag.errors import GlassragError
from glassrag.kb import KnowledgeBase
from glassrag.records import Chunk, Document, Hit, IngestReport, Principal, SearchResult

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
