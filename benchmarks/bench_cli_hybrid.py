"""CLI hybrid ask with the bundled all-MiniLM-L6-v2: wall time and peak RSS per call, and
ingest embedding throughput, for the numpy runtime against sentence-transformers (torch).

1. Builds a small knowledge base (the workshop and notes examples) embedded with
   ``st:all-MiniLM-L6-v2``, then runs ``glassrag ask --mode hybrid`` as a new process
   ``--runs`` times per configuration, reporting the median and spread of wall time and the
   peak RSS of each process (``wait4``'s ``ru_maxrss``). Configurations: bm25 (reference),
   hybrid with ``runtime=numpy`` (the default), hybrid with ``runtime=torch`` (what every
   hybrid ask did before), and with ``--old-src`` the same hybrid ask run by another checkout
   (e.g. the main branch before this change).
2. Embeds ``--texts`` passages (``--corpus``: SciFact's abstracts when
   ``../shared/benchmarks/scifact`` is beside the checkout, else this repository's Markdown
   paragraphs), then as many sentences cut from them, with each runtime in this process
   after a warm-up, and reports texts/s and CPU seconds per 100 texts (all threads).
3. Embeds single questions in this process (as a server's hybrid ask does): p50 and p90.

The machine's load average is recorded before and after: on a shared machine the wall times
are only comparable within one run.

    .venv/bin/python benchmarks/bench_cli_hybrid.py --runs 7 --texts 512
    .venv/bin/python benchmarks/bench_cli_hybrid.py --old-src ../base/src \\
        --corpus ../shared/benchmarks/scifact/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "benchmarks" / "scifact" / "corpus.jsonl"
QUESTION = "How do I get my money back?"


def run_once(args: list[str], pythonpath: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one ``python -m glassrag ARGS`` process."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "glassrag", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"glassrag {' '.join(args)} failed: {proc.stderr.read().decode()}"
                         if proc.stderr else "failed")
    return wall, int(usage.ru_maxrss)


def cli_timings(kb: Path, runs: int, old_src: str | None) -> list[dict[str, Any]]:
    here = str(ROOT / "src")
    configs = [
        ("bm25", here, ["--mode", "bm25"]),
        ("hybrid, runtime=numpy (default)", here, ["--mode", "hybrid"]),
        ("hybrid, runtime=torch", here,
         ["--mode", "hybrid", "--embedder", "st:all-MiniLM-L6-v2?runtime=torch"]),
    ]
    if old_src:
        configs.append((f"hybrid, {old_src}", old_src, ["--mode", "hybrid"]))
    results = []
    for label, src, extra in configs:
        ask = ["--kb", str(kb), "ask", QUESTION, *extra]
        run_once(ask, src)  # warm the page cache
        samples = [run_once(ask, src) for _ in range(runs)]
        walls = sorted(s[0] for s in samples)
        results.append({"config": label, "runs": runs,
                        "wall_median_s": round(statistics.median(walls), 3),
                        "wall_min_s": round(walls[0], 3), "wall_max_s": round(walls[-1], 3),
                        "peak_rss_mb": round(statistics.median(s[1] for s in samples) / 1024)})
        print(json.dumps(results[-1]), flush=True)
    return results


def passages(count: int, corpus: Path = SCIFACT) -> list[str]:
    if corpus.exists():
        texts = []
        with corpus.open(encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                texts.append(f"{record['title']} {record['text']}".strip())
                if len(texts) == count:
                    break
        return texts
    paragraphs = [p.strip() for path in sorted(ROOT.rglob("*.md"))
                  for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if p.strip()]
    return (paragraphs * (count // max(1, len(paragraphs)) + 1))[:count]


def sentences(count: int, corpus: Path) -> list[str]:
    """Sentence-sized passages (the ``sentences`` chunker's kind), cut from the abstracts."""
    found = [s.strip() for text in passages(count, corpus)
             for s in re.split(r"(?<=[.!?])\s+", text)]
    return [s for s in found if len(s) > 20][:count]


def throughput(count: int, repeats: int, corpus: Path) -> list[dict[str, Any]]:
    results = []
    for kind, texts in (("abstracts", passages(count, corpus)),
                        ("sentences", sentences(count, corpus))):
        results += _throughput(kind, texts, repeats)
    return results


def _throughput(kind: str, texts: list[str], repeats: int) -> list[dict[str, Any]]:
    from glassrag.dense.embedders import parse_embedder

    results = []
    for label, spec in (("numpy, threads=cores", "st:all-MiniLM-L6-v2?runtime=numpy"),
                        ("numpy, threads=1", "st:all-MiniLM-L6-v2?runtime=numpy&threads=1"),
                        ("torch (sentence-transformers)", "st:all-MiniLM-L6-v2?runtime=torch")):
        embedder = parse_embedder(spec)
        embedder.embed(texts[:16])  # load and warm up
        seconds = []
        for _ in range(repeats):
            started, cpu = time.perf_counter(), time.process_time()
            embedder.embed(texts)
            seconds.append((time.perf_counter() - started, time.process_time() - cpu))
        wall = statistics.median(s[0] for s in seconds)
        results.append({"runtime": label, "texts": f"{len(texts)} {kind}",
                        "texts_per_s": round(len(texts) / wall, 1),
                        "cpu_s_per_100_texts": round(
                            100 * statistics.median(s[1] for s in seconds) / len(texts), 2)})
        print(json.dumps(results[-1]), flush=True)
    return results


def query_latency(count: int = 100) -> list[dict[str, Any]]:
    """One question at a time, in process, as a server's hybrid ask embeds it."""
    from glassrag.dense.embedders import parse_embedder

    questions = [QUESTION, "What is the default timeout of a client?",
                 "max_connections and keepalive settings of the pool",
                 "Where should I store the API key?"]
    results = []
    for runtime in ("numpy", "torch"):
        embedder = parse_embedder(f"st:all-MiniLM-L6-v2?runtime={runtime}")
        embedder.embed_queries(questions)  # load and warm up
        seconds = []
        for i in range(count):
            started = time.perf_counter()
            embedder.embed_queries([questions[i % len(questions)]])
            seconds.append(time.perf_counter() - started)
        seconds.sort()
        results.append({"runtime": runtime, "queries": count,
                        "p50_ms": round(1000 * statistics.median(seconds), 2),
                        "p90_ms": round(1000 * seconds[int(0.9 * count)], 2)})
        print(json.dumps(results[-1]), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="CLI processes per configuration")
    parser.add_argument("--texts", type=int, default=512, help="passages for throughput")
    parser.add_argument("--repeats", type=int, default=3, help="throughput repeats (median)")
    parser.add_argument("--old-src", help="another checkout's src/ to time as 'before'")
    parser.add_argument("--corpus", type=Path, default=SCIFACT,
                        help="a BEIR corpus.jsonl for throughput [default: SciFact's]")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    args = parser.parse_args()
    report: dict[str, Any] = {"load_before": os.getloadavg(), "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb"
        examples = ROOT / "examples"
        subprocess.run([sys.executable, "-m", "glassrag", "--kb", str(kb), "ingest",
                        str(examples / "workshop" / "documents.jsonl"), str(examples / "notes"),
                        "--embedder", "st:all-MiniLM-L6-v2"], check=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
                       stdout=subprocess.DEVNULL)
        report["cli"] = cli_timings(kb, args.runs, args.old_src)
    report["corpus"] = str(args.corpus) if args.corpus.exists() else "README paragraphs"
    report["throughput"] = throughput(args.texts, args.repeats, args.corpus)
    report["query_latency"] = query_latency()
    report["load_after"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench-cli-hybrid-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2))
    print(f"load average {report['load_before']} -> {report['load_after']}; wrote {path}")


if __name__ == "__main__":
    main()
