"""The exact scan read from codes (glassrag.vectors.scan: 8-bit, float16) against the
float32 scan, paired.

On a knowledge base kept by ``bench_hybrid.py --kb``, each question is run every way back to
back (rotating which goes first), so all see the same machine load; the medians, the median
of the per-question differences against float32, and how often each code kind had to fall
back to the float32 scan are reported, for the dense search alone and for the whole hybrid
ask (principal with role ``employee``). The vector index is forced exact.

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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402

from glassrag import KnowledgeBase, Principal
from glassrag.retrieval.search import readable_sets  # noqa: E402
from glassrag.vectors import scan as quantized_scan  # noqa: E402

MIN_ROWS = quantized_scan.MIN_ROWS
WAYS = ("sq8", "fp16", "float32")
# Per code kind: [searches of a coded segment, second (deeper) scans, float32 fallbacks].
_tally: dict[str, list[int]] = {}
_attempts = [0]


def counting(top: Callable[..., Any], attempt: Callable[..., Any]) -> None:
    """Patch quantized_scan to count deeper second scans and float32 fallbacks."""
    def counted_attempt(*args: Any) -> Any:
        _attempts[0] += 1
        return attempt(*args)

    def counted_top(segment: Any, *rest: Any) -> Any:
        _attempts[0] = 0
        found = top(segment, *rest)
        if quantized_scan.MIN_ROWS == MIN_ROWS and segment.size >= MIN_ROWS:
            tally = _tally.setdefault(quantized_scan.KIND, [0, 0, 0])
            tally[0] += 1
            tally[1] += _attempts[0] > 1
            tally[2] += found is None
        return found

    quantized_scan._attempt = counted_attempt
    quantized_scan.quantized_top = counted_top


def use(way: str) -> None:
    if way == "float32":
        quantized_scan.MIN_ROWS = 1 << 62
    else:
        quantized_scan.MIN_ROWS, quantized_scan.KIND = MIN_ROWS, way


def paired(items: list, run: Callable[[Any], None]) -> dict[str, Any]:
    """Median ms of ``run`` per item each way, the median of the per-item differences
    against float32, and how often each code kind scanned twice or fell back to float32."""
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    _tally.clear()
    for i, item in enumerate(items):
        for way in WAYS[i % 3:] + WAYS[: i % 3]:
            use(way)
            started = time.perf_counter()
            run(item)
            times[way].append((time.perf_counter() - started) * 1000)
    use("sq8")
    result: dict[str, Any] = {f"{way}_p50_ms": round(statistics.median(times[way]), 3)
                              for way in WAYS}
    for way in WAYS[:2]:
        diffs = [a - b for a, b in zip(times[way], times["float32"], strict=True)]
        result[f"{way}_minus_float32_p50_ms"] = round(statistics.median(diffs), 3)
        searches, deeper, refused = _tally.get(way, [0, 0, 0])
        result[f"{way}_second_scans"] = f"{deeper}/{searches}"
        result[f"{way}_fell_back_to_float32"] = f"{refused}/{searches}"
    return result




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
    for way in WAYS:  # warm-up, builds each coded copy
        use(way)
        for q in questions[:30]:
            kb.ask(q, principal=principal, mode="hybrid")
    # Segment.exact imports quantized_top at call time, so patching the module counts all.
    counting(quantized_scan.quantized_top, quantized_scan._attempt)
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
