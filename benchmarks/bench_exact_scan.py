"""The exact scan read in float16 (glassrag.fp16_scan) against the float32 scan, paired.

On a knowledge base kept by ``bench_hybrid.py --kb``, each question is run both ways back to
back (alternating which goes first), so both see the same machine load; the medians and the
median of the per-question differences are reported, for the dense search alone and for the
whole hybrid ask (principal with role ``employee``). The vector index is forced exact.

    .venv/bin/python benchmarks/bench_exact_scan.py --kb benchmarks/out/hybrid-synth-hash
    .venv/bin/python benchmarks/bench_exact_scan.py --kb benchmarks/out/hybrid-realtext-hash \\
        --queries-file benchmarks/out/realtext/queries.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402

from glassrag import KnowledgeBase, Principal, fp16_scan  # noqa: E402
from glassrag.search import readable_sets  # noqa: E402

FLOAT16 = fp16_scan.FP16_MIN_ROWS


def paired(items: list, run: Callable[[object], None]) -> dict[str, float]:
    """Median ms of ``run`` per item with the float16 scan and with float32, and the median
    of the per-item differences (float16 minus float32)."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for i, item in enumerate(items):
        for half in (True, False) if i % 2 else (False, True):
            fp16_scan.FP16_MIN_ROWS = FLOAT16 if half else 1 << 62
            started = time.perf_counter()
            run(item)
            times[half].append((time.perf_counter() - started) * 1000)
    fp16_scan.FP16_MIN_ROWS = FLOAT16
    diffs = [a - b for a, b in zip(times[True], times[False], strict=True)]
    return {"float16_p50_ms": round(statistics.median(times[True]), 3),
            "float32_p50_ms": round(statistics.median(times[False]), 3),
            "paired_difference_p50_ms": round(statistics.median(diffs), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=Path, required=True)
    parser.add_argument("--embedder", default="hash:384")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--queries-file", type=Path, default=None)
    args = parser.parse_args()
    kb = KnowledgeBase.open(args.kb)
    kb.settings.dense.hnsw_threshold = 1 << 40  # exact: the scan is what is compared
    side = kb.dense(args.embedder)
    assert side is not None
    index = side.index()
    if args.queries_file:
        with args.queries_file.open(encoding="utf-8") as handle:
            questions = [json.loads(line)["text"] for line in handle][: args.queries + 30]
    else:
        questions = list(synth.queries(args.queries + 30, lang="en", seed=3))
    principal = Principal("bench", roles=["employee"])
    readable = readable_sets(kb.store, principal)
    min_score = kb.settings.dense.min_cosine(side.spec)
    vectors = list(side.embedder.embed_queries(questions))
    for q in questions[:30]:  # warm-up, builds the float16 copy
        kb.ask(q, principal=principal, mode="hybrid")
    result = {
        "kb": str(args.kb), "vectors": len(index), "search": side.describe()["search"],
        "dense_search": paired(vectors[30:], lambda v: index.search(
            v, readable, kb.settings.dense.candidates, 3, min_score)),
        "hybrid_ask": paired(questions[30:], lambda q: kb.ask(q, principal=principal,
                                                               mode="hybrid")),
    }
    kb.close()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
