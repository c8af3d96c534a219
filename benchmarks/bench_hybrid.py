"""Hybrid ask latency at 100k chunks, query embedding excluded (issue 5's target: p50 <= 5 ms).

Builds a knowledge base from the synthetic corpus (benchmarks/synth.py), embeds it with an
embedder (default ``hash:384``: 384 dimensions like all-MiniLM-L6-v2, cheap to build, but
feature-hashed vectors are a hard case for HNSW; ``st:all-MiniLM-L6-v2`` gives real model
vectors and takes minutes to embed, so keep that knowledge base with ``--kb``), then times
``kb.ask(..., mode="hybrid")`` for a principal with a role filter. The time spent embedding
each query is measured separately and subtracted. It also reports recall@10 of the dense
search the asks ran (HNSW or exact, whichever the index chose) against an exact scan over the
same readable rows.

    .venv/bin/python benchmarks/bench_hybrid.py --docs 100000
    .venv/bin/python benchmarks/bench_hybrid.py --embedder st:all-MiniLM-L6-v2 \\
        --kb benchmarks/out/hybrid-minilm-100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402

from glassrag import KnowledgeBase, Principal
from glassrag.retrieval.search import readable_sets  # noqa: E402
from glassrag.vectors import scan as quantized_scan  # noqa: E402


class TimedEmbedder:
    """Wraps the knowledge base's embedder and records how long each query embedding took."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _timed(self, method: str, texts: Sequence[str], *rest: Any) -> np.ndarray:
        started = time.perf_counter()
        try:
            return getattr(self.inner, method)(texts, *rest)
        finally:
            self.seconds.append(time.perf_counter() - started)

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        return self._timed("embed", texts, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._timed("embed_queries", texts)


def build(kb_dir: Path, docs: int, embedder: str, threshold: int | None,
          corpus_dir: Path | None) -> float:
    """Ingest and embed the corpus into ``kb_dir``; returns seconds taken."""
    with tempfile.TemporaryDirectory(prefix="bench-hybrid-") as tmp:
        corpus = corpus_dir or Path(tmp) / "corpus"
        if corpus_dir is None:
            write_synth(corpus, docs)
        kb = KnowledgeBase.open(kb_dir, create=True)
        if threshold is not None:
            kb.settings.dense.hnsw_threshold = threshold

        def progress(done: int, total: int) -> None:
            if done == total or done % 5_000 < 64:
                print(f"  {done}/{total}", file=sys.stderr, flush=True)

        started = time.perf_counter()
        report = kb.ingest([corpus], chunker="sentences",
                           include=["corpus-*.jsonl", "part-*.jsonl"])
        if report.failed or (corpus_dir is None and report.chunks != docs):
            raise SystemExit(f"ingest failed: {report.to_dict()}")
        print(f"ingested {report.chunks} chunks; embedding", file=sys.stderr)
        kb.embed(embedder, progress=progress)
        seconds = time.perf_counter() - started
        kb.close()
        return seconds


def write_synth(corpus: Path, docs: int) -> None:
    corpus.mkdir()
    # Files of 10,000 records: well under the default 20 MB per-file cap.
    handle = None
    for n, record in enumerate(synth.generate(docs, lang="en", seed=0)):
        if n % 10_000 == 0:
            if handle is not None:
                handle.close()
            handle = (corpus / f"part-{n // 10_000:03d}.jsonl").open("w", encoding="utf-8")
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    if handle is not None:
        handle.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--embedder", default="hash:384")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--kb", type=Path, default=None,
                        help="keep the knowledge base here and reuse it on the next run")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="a directory of corpus-*.jsonl and queries.jsonl (realtext.py) "
                             "instead of the synthetic corpus")
    parser.add_argument("--hnsw-threshold", type=int, default=None,
                        help="override [dense] hnsw_threshold for this run")
    parser.add_argument("--float32", action="store_true",
                        help="ablation: exact scans read float32, not the coded copy")
    parser.add_argument("--codes", choices=["sq8", "fp16"], default=quantized_scan.KIND,
                        help="the code kind exact scans read first (default: glassrag's)")
    parser.add_argument("--held-out", type=int, default=300,
                        help="questions never asked (so in no trace the calibration may "
                             "use) for a second recall figure")
    args = parser.parse_args()
    if args.float32:
        quantized_scan.MIN_ROWS = 1 << 62
    quantized_scan.KIND = args.codes

    with tempfile.TemporaryDirectory(prefix="bench-hybrid-kb-") as tmp:
        kb_dir = args.kb or Path(tmp) / "kb"
        build_s = None
        if not (kb_dir / "glassrag.db").exists():
            build_s = build(kb_dir, args.docs, args.embedder, args.hnsw_threshold, args.corpus)
            print(f"built in {build_s:.1f} s", file=sys.stderr)
        kb = KnowledgeBase.open(kb_dir)
        if args.hnsw_threshold is not None:
            kb.settings.dense.hnsw_threshold = args.hnsw_threshold
        chunks = kb.status()["chunks"]
        if args.corpus is None and chunks != args.docs:
            raise SystemExit(f"{kb_dir} holds {chunks} chunks, not {args.docs}")
        side = kb.dense(args.embedder)
        assert side is not None
        started = time.perf_counter()
        index = side.index()  # loads, catches up, compacts if due: not part of an ask
        load_s = time.perf_counter() - started
        timed = TimedEmbedder(side.embedder)
        side._embedder = timed
        principal = Principal("bench", roles=["employee"])
        if args.corpus is None:
            everything = list(synth.queries(args.queries + 50 + args.held_out, lang="en", seed=3))
        else:
            with (args.corpus / "queries.jsonl").open(encoding="utf-8") as handle:
                everything = [json.loads(line)["text"] for line in handle]
        questions = everything[: args.queries + 50]
        held_out = everything[args.queries + 50 : args.queries + 50 + args.held_out]
        for q in questions[:50]:
            kb.ask(q, principal=principal, mode=args.mode)
        total: list[float] = []
        embed_seconds: list[float] = []  # every embedding call an ask made, summed per ask
        for q in questions[50:]:
            timed.seconds.clear()
            started = time.perf_counter()
            kb.ask(q, principal=principal, mode=args.mode)
            total.append(time.perf_counter() - started)
            embed_seconds.append(sum(timed.seconds))
        readable = readable_sets(kb.store, principal)
        recall = dense_recall(index, timed.inner, questions[50:], readable)
        recall_held_out = dense_recall(index, timed.inner, held_out, readable) if held_out \
            else None
        info = side.describe()
        coded = index.main.cache.get(f"codes:{args.codes}") is not None
        kb.close()
    net = sorted((t - e) * 1000 for t, e in zip(total, embed_seconds, strict=True))
    result = {
        "corpus": str(args.corpus or "synth"), "chunks": chunks, "mode": args.mode,
        "embedder": args.embedder,
        "queries": len(net), "build_s": None if build_s is None else round(build_s, 1),
        "index_load_s": round(load_s, 2), "index": info,
        "ask_p50_ms_excluding_query_embedding": round(statistics.median(net), 3),
        "ask_p99_ms_excluding_query_embedding": round(net[int(len(net) * 0.99) - 1], 3),
        "query_embedding_p50_ms": round(statistics.median(embed_seconds) * 1000, 3),
        "dense_recall_at_10_vs_exact": round(recall, 4),
        "dense_recall_at_10_vs_exact_held_out": None if recall_held_out is None
        else {"questions": len(held_out), "recall": round(recall_held_out, 4)},
        "exact_scan": f"{args.codes} codes, rescored in float32" if coded else "float32",
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))


def dense_recall(index: Any, embedder: Any, questions: list[str], readable: Any) -> float:
    """Recall@10 of the index's own search against an exact float32 scan of the same readable
    rows. Judged by score, as the calibration does: a row tied with the exact 10th counts as
    found (the synthetic corpus has duplicate chunks, whose tied rows may come in any order).
    """
    query_of = getattr(embedder, "embed_queries", embedder.embed)
    vectors = query_of(questions)
    sets = index._allowed_sets(readable)
    hits = []
    for raw in vectors:
        q = index._query(raw)
        got = index.search(raw, readable, 10)[0]
        # The truth is the plain float32 scan, independent of the coded path under test.
        truth = np.sort(np.concatenate([
            segment._float32_top(q, sets, segment._spans(sets), 10, None, False)[1]
            for segment in (index.main, index.delta)]))[::-1][:10]
        if truth.size == 0:
            continue
        hits.append(sum(m.score >= truth[-1] - 1e-6 for m in got) / truth.size)
    return float(np.mean(hits))


if __name__ == "__main__":
    main()
