"""Crash trials: random SIGKILLs mid-ingest, and two writers started together.

    python benchmarks/crash_trials.py --kills 30 --pairs 10

Kill trials share one knowledge base. Each starts ``glassrag ingest`` on a new corpus (its
own doc_id prefix), waits until the first batch of that corpus is committed, kills the
process with SIGKILL a random moment later (uniform over ``--window`` seconds; by default
the time one uninterrupted ingest of such a corpus takes from its first commit until SQLite
and the lexical index hold all of it, measured first), records from the files alone where
the kill landed (``sqlite``: part of the corpus stored; ``index``: all of it stored, the
lexical index behind; ``after``: the work was done), then opens the knowledge base (which
repairs it) and runs :func:`glassrag.retrieval.integrity.check`. Trials go on until ``--kills`` of
them landed mid-ingest (at most three times as many attempts); every attempt is checked.
At the end one ingest of every corpus must complete the interrupted work.

Pair trials each use a new knowledge base and start two ingests at the same moment, cycling
through four cases: right after ``init`` (different corpora), with no knowledge base yet,
the same file twice, and two files holding the same new doc_ids. Each must end without a
traceback, with the expected exit codes and documents, and consistent.

Writes a JSON summary to ``benchmarks/out/`` and prints one line per trial.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from glassrag import KnowledgeBase
from glassrag.retrieval.integrity import check, on_disk

OUT = Path(__file__).resolve().parent / "out"
PAIR_CASES = ("after-init", "fresh", "same-file", "same-ids")


def corpus(path: Path, tag: str, n: int, ids: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            roles = ["public"] if i % 3 else ["staff"]
            fh.write(json.dumps({"doc_id": f"{ids or tag}-{i}", "roles": roles,
                                 "text": f"heron otter record {tag} number {i}."}) + "\n")
    return path


def start(kb_dir: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest",
                             *args, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def consistency(kb_dir: Path) -> tuple[list[str], int]:
    with KnowledgeBase.open(kb_dir) as kb:
        return check(kb.store, kb.lexical), int(kb.status()["documents"])


def kill_trial(kb_dir: Path, path: Path, tag: str, n: int, window: float,
               rng: random.Random) -> dict[str, Any]:
    proc = start(kb_dir, str(path))
    started = time.perf_counter()
    while on_disk(kb_dir, f"{tag}-")[0] == 0 and proc.poll() is None:
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, window))
    alive = proc.poll() is None
    proc.kill()
    proc.communicate()
    stored, last, applied = on_disk(kb_dir, f"{tag}-")
    stage = ("sqlite" if 0 < stored < n else "index" if applied < last else "after")
    problems, documents = consistency(kb_dir)
    return {"tag": tag, "killed": alive and proc.returncode == -signal.SIGKILL,
            "stage": stage, "stored_before_repair": stored, "last_seq": last,
            "applied_seq": applied, "problems": problems, "documents": documents,
            "seconds": round(time.perf_counter() - started, 2)}


def new_kb(kb_dir: Path) -> Path:
    kb_dir.mkdir(parents=True)
    (kb_dir / "glassrag.toml").write_text("[ingest]\nbatch_size = 100\n")
    return kb_dir


def calibrate(root: Path, n: int) -> float:
    """Seconds from an ingest's first commit until SQLite and the index hold all of it."""
    kb_dir = new_kb(root / "calibrate" / "kb")
    path = corpus(root / "calibrate" / "c.jsonl", "c", n)
    proc = start(kb_dir, str(path))
    while on_disk(kb_dir, "c-")[0] == 0 and proc.poll() is None:
        time.sleep(0.002)
    first = time.perf_counter()
    while proc.poll() is None:
        stored, last, applied = on_disk(kb_dir, "c-")
        if stored == n and applied >= last:
            break
        time.sleep(0.002)
    done = time.perf_counter() - first
    proc.communicate()
    return done


def kill_trials(root: Path, kills: int, n: int, window: float,
                rng: random.Random) -> dict[str, Any]:
    kb_dir = new_kb(root / "kills" / "kb")
    corpora = root / "kills" / "corpora"
    trials: list[dict[str, Any]] = []
    for k in range(3 * kills):
        if sum(t["stage"] != "after" and t["killed"] for t in trials) == kills:
            break
        tag = f"k{k}"
        trial = kill_trial(kb_dir, corpus(corpora / f"{tag}.jsonl", tag, n), tag, n, window, rng)
        trials.append(trial)
        print(f"kill {k + 1:>3}: stage {trial['stage']:<6} stored "
              f"{trial['stored_before_repair']:>5}/{n} problems {len(trial['problems'])}",
              flush=True)
    final = subprocess.run([sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest",
                            str(corpora), "--json"], capture_output=True, text=True)
    problems, documents = consistency(kb_dir)
    return {"trials": trials, "final_exit": final.returncode, "final_problems": problems,
            "final_documents": documents, "expected_documents": n * len(trials)}


def pair_trial(root: Path, case: str, n: int) -> dict[str, Any]:
    kb_dir = root / "kb"
    a = corpus(root / "a.jsonl", "a", n)
    if case == "same-file":
        b = a
    else:  # same-ids: another file holding a's doc_ids
        b = corpus(root / "b.jsonl", "b", n, ids="a" if case == "same-ids" else None)
    if case != "fresh":
        KnowledgeBase.init(kb_dir).close()
    procs = [start(kb_dir, str(a)), start(kb_dir, str(b))]
    outputs = [p.communicate() for p in procs]
    codes = sorted(p.returncode for p in procs)
    tracebacks = sum("Traceback" in err for _, err in outputs)
    expected_codes = [0, 1] if case == "same-ids" else [0, 0]
    expected_docs = 2 * n if case in ("after-init", "fresh") else n
    problems, documents = consistency(kb_dir)
    ok = codes == expected_codes and not tracebacks and not problems and documents == expected_docs
    return {"case": case, "exit_codes": codes, "tracebacks": tracebacks, "problems": problems,
            "documents": documents, "expected_documents": expected_docs, "ok": ok,
            "waited": sum("waiting for another writer" in err for _, err in outputs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--docs", type=int, default=3000, help="documents per kill corpus")
    parser.add_argument("--pair-docs", type=int, default=800)
    parser.add_argument("--window", type=float, default=None,
                        help="kill at most this many seconds after the first commit "
                        "[default: measured, see above]")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="glassrag-crash-"))
    try:
        window = args.window if args.window is not None else calibrate(root, args.docs)
        print(f"kill window: {window:.2f} s after the first commit", flush=True)
        kills = kill_trials(root, args.kills, args.docs, window, rng)
        pairs = []
        for p in range(args.pairs):
            case = PAIR_CASES[p % len(PAIR_CASES)]
            trial = pair_trial(root / f"pair{p}", case, args.pair_docs)
            pairs.append(trial)
            print(f"pair {p + 1:>3}: {case:<10} exit {trial['exit_codes']} ok {trial['ok']}",
                  flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    stages: dict[str, int] = {}
    for trial in kills["trials"]:
        stages[trial["stage"]] = stages.get(trial["stage"], 0) + 1
    summary = {
        "window_seconds": round(window, 3),
        "kill_attempts": len(kills["trials"]),
        "killed_mid_ingest": sum(t["killed"] and t["stage"] != "after" for t in kills["trials"]),
        "stages": stages,
        "inconsistent_after_kill": sum(bool(t["problems"]) for t in kills["trials"]),
        "completed_after_kills": kills["final_exit"] == 0 and not kills["final_problems"]
        and kills["final_documents"] == kills["expected_documents"],
        "pairs": len(pairs), "pairs_ok": sum(t["ok"] for t in pairs),
        "pairs_that_waited": sum(t["waited"] > 0 for t in pairs),
    }
    OUT.mkdir(exist_ok=True)
    out = OUT / f"crash-trials-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "summary": summary, "kills": kills,
                               "pairs": pairs}, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"-> {out}")
    if summary["inconsistent_after_kill"] or not summary["completed_after_kills"] or \
            summary["pairs_ok"] != summary["pairs"] or summary["killed_mid_ingest"] < args.kills:
        sys.exit(1)


if __name__ == "__main__":
    os.environ.pop("GLASSRAG_CRASH_AT", None)
    main()
