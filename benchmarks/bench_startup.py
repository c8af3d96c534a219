"""Start-up cost of glassrag: ``glassrag --help`` and imports, for several checkouts.

Each checkout's ``src`` is put on ``PYTHONPATH`` in turn, and the runs are interleaved
(A B C A B C ...), so a change in the machine's load during the run hits every checkout
alike. For each run: the wall clock, and the child's user+system CPU time (``getrusage``),
which a busy machine disturbs less. Two warm-up rounds are dropped.

Usage::

    python benchmarks/bench_startup.py --src old=/tmp/old/src --src new=src
    python benchmarks/bench_startup.py --src new=src --code "import glassrag" --runs 30
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

WARM_UP = 2


def measure(sources: dict[str, str], argv: list[str], runs: int) -> dict[str, dict[str, list]]:
    """``{name: {"wall": [...], "cpu": [...]}}`` in seconds, ``runs`` of each."""
    out: dict[str, dict[str, list]] = {name: {"wall": [], "cpu": []} for name in sources}
    for round_ in range(runs + WARM_UP):
        for name, src in sources.items():
            env = dict(os.environ, PYTHONPATH=src)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_ >= WARM_UP:
                out[name]["wall"].append(wall)
                out[name]["cpu"].append(after.ru_utime - before.ru_utime
                                        + after.ru_stime - before.ru_stime)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", action="append", required=True, metavar="NAME=PATH",
                        help="a checkout's src directory, named (repeat)")
    parser.add_argument("--code", help="python -c CODE instead of python -m glassrag --help")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    sources = dict(item.split("=", 1) for item in args.src)
    argv = ([sys.executable, "-c", args.code] if args.code
            else [sys.executable, "-m", "glassrag", "--help"])
    results = measure(sources, argv, args.runs)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.runs} runs each; {' '.join(argv[1:])}")
    print("| checkout | wall median | CPU median (min) |\n|---|---|---|")
    for name, d in results.items():
        print(f"| {name} | {statistics.median(d['wall']) * 1000:.0f} ms |"
              f" {statistics.median(d['cpu']) * 1000:.0f} ms ({min(d['cpu']) * 1000:.0f}) |")


if __name__ == "__main__":
    main()
