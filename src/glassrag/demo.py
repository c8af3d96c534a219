"""``glassrag demo``: the bundled examples, ingested into a temporary knowledge base."""

from __future__ import annotations

import tempfile
from collections.abc import Callable

from .examples import examples_dir
from .kb import KnowledgeBase
from .records import Principal

Say = Callable[[str], None]


def run_demo(say: Say) -> None:
    root = examples_dir()
    with tempfile.TemporaryDirectory(prefix="glassrag-demo-") as tmp:
        kb = KnowledgeBase.open(tmp)
        try:
            report = kb.ingest([root / "workshop" / "documents.jsonl"])
            chunks = [c for d in kb.documents() for c in kb.chunks(d.doc_id)]
            say("STEP 1: parse and chunk documents")
            say(f"chunks: {report.chunks}")
            say(f"first_chunk: {chunks[0].chunk_id} -> {chunks[0].title}")
            say("")
            say("STEP 2: search with permissions")
            public = Principal("demo")
            for question in (
                "How many days do learners have for refunds?",
                "What is the private beta roadmap for Q4?",
            ):
                result = kb.search(question, principal=public, top_k=2)
                say(f"question: {question}")
                for hit in result.hits:
                    say(f"  {hit.chunk.chunk_id} score={hit.score:.3f} source={hit.chunk.source}"
                        f" matched={','.join(hit.matched_terms)}")
                say(f"  blocked_count: {result.blocked_count}")
        finally:
            kb.close()
