"""Hybrid ask latency at 100k chunks, query embedding excluded (issue 5's target: p50 <= 5 ms).

Builds a knowledge base from the synthetic corpus (benchmarks/synth.py), embeds it with an
embedder (default ``hash:384``: 384 dimensions like all-MiniLM-L6-v2, but cheap, so building
100k vectors takes seconds; the vector search and fusion cost the same for any 384-d
vectors), then times ``kb.ask(..., mode="hybrid")`` for a principal with a role filter. The
time spent embedding each query is measured separately and subtracted.

    .venv/bin/python benchmarks/bench_hybrid.py --docs 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402

from glassrag import KnowledgeBase, Principal  # noqa: E402
from glassrag.embedders import BaseEmbedder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--embedder", default="hash:384")
    parser.add_argument("--mode", default="hybrid")
    args = parser.parse_args()

    embed_seconds: list[float] = []
    real = BaseEmbedder.embed

    def timed(self, texts, progress=None):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return real(self, texts, progress)
        finally:
            if len(texts) == 1:  # a query, not an ingest batch
                embed_seconds.append(time.perf_counter() - started)

    BaseEmbedder.embed = timed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="bench-hybrid-") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        # Files of 10,000 records: well under the default 20 MB per-file cap.
        handle = None
        for n, record in enumerate(synth.generate(args.docs, lang="en", seed=0)):
            if n % 10_000 == 0:
                if handle is not None:
                    handle.close()
                handle = (corpus / f"part-{n // 10_000:03d}.jsonl").open("w", encoding="utf-8")
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        if handle is not None:
            handle.close()
        kb = KnowledgeBase.open(Path(tmp) / "kb")
        started = time.perf_counter()
        report = kb.ingest([corpus], chunker="sentences", embedder=args.embedder)
        build = time.perf_counter() - started
        if report.failed or report.chunks != args.docs:
            raise SystemExit(f"ingest failed: {report.to_dict()}")
        print(f"built {kb.status()['chunks']} chunks in {build:.1f} s", file=sys.stderr)
        principal = Principal("bench", roles=["employee"])
        questions = list(synth.queries(args.queries + 50, lang="en", seed=3))
        for q in questions[:50]:
            kb.ask(q, principal=principal, mode=args.mode)
        embed_seconds.clear()
        total: list[float] = []
        for q in questions[50:]:
            started = time.perf_counter()
            kb.ask(q, principal=principal, mode=args.mode)
            total.append(time.perf_counter() - started)
        kb.close()
    net = [(t - e) * 1000 for t, e in zip(total, embed_seconds, strict=True)]
    net.sort()
    result = {
        "docs": args.docs, "mode": args.mode, "embedder": args.embedder,
        "queries": len(net), "build_s": round(build, 1),
        "ask_p50_ms_excluding_query_embedding": round(statistics.median(net), 3),
        "ask_p99_ms_excluding_query_embedding": round(net[int(len(net) * 0.99) - 1], 3),
        "query_embedding_p50_ms": round(statistics.median(embed_seconds) * 1000, 3),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
