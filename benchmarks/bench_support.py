"""Answer support: how often a faithful answer is refused, how often a hostile one is caught.

Runs every case of ``tests/data/answer_support.jsonl`` end to end (``kb.ask`` with the stub
model of ``tests/llm_stub.py`` answering as scripted, citing whichever evidence label holds
its quote): faithful paraphrases over the bundled examples and two documentation corpora of
``../shared/benchmarks/docs-qa-dev`` (starlette in English, vite-ja in Japanese), and the
hostile answers of issue 13. Also counts how many chunks of the four docs-qa-dev corpora the
"addressed to the model" detector flags (each one would support no answer).

    .venv/bin/python benchmarks/bench_support.py [--docs-qa PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "src"))

from glassrag import KnowledgeBase  # noqa: E402
from glassrag.answer.support import MIN_SUPPORTED_SHARE, addressed_to_model  # noqa: E402
from llm_stub import StubLLM  # noqa: E402
from support_cases import DOCS_QA, load_cases, run_cases, summary  # noqa: E402

DOCS_CORPORA = ("starlette", "click", "rocketmq-zh", "vite-ja")


def flagged_chunks(docs_qa: Path, workdir: Path) -> dict[str, tuple[int, int]]:
    """(chunks, chunks flagged as addressed to the model) per docs-qa-dev corpus."""
    counts = {}
    for name in DOCS_CORPORA:
        with KnowledgeBase.open(workdir / f"flag-{name}") as kb:
            kb.ingest([docs_qa / name])
            texts = [row[0] for row in kb.store.db.execute("SELECT text FROM chunks")]
        counts[name] = (len(texts), sum(addressed_to_model(t) for t in texts))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs-qa", type=Path, default=DOCS_QA,
                        help="the docs-qa-dev corpus folder (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "bench-support.json")
    args = parser.parse_args()
    cases = load_cases()
    with StubLLM() as stub, tempfile.TemporaryDirectory() as tmp:
        os.environ.update(OPENAI_BASE_URL=stub.base_url, OPENAI_MODEL="stub-model")
        os.environ.pop("OPENAI_API_KEY", None)
        outcomes = run_cases(cases, Path(tmp), stub, docs_qa=args.docs_qa)
        flags = flagged_chunks(args.docs_qa, Path(tmp))
    result = summary(outcomes)
    result["min_supported_share"] = MIN_SUPPORTED_SHARE
    result["by_corpus"] = {}
    for outcome in outcomes:
        row = result["by_corpus"].setdefault(outcome.case["corpus"], {"faithful": 0,
                                             "refused": 0, "hostile": 0, "caught": 0})
        if outcome.case["kind"] == "faithful" and outcome.status != "missed":
            row["faithful"] += 1
            row["refused"] += outcome.rejected
        elif outcome.case["kind"] == "hostile":
            row["hostile"] += 1
            row["caught"] += outcome.rejected
    result["flagged_chunks"] = flags
    result["cases"] = [{"id": o.case["id"], "corpus": o.case["corpus"], "kind": o.case["kind"],
                        "attack": o.case.get("attack"), "status": o.status,
                        "problems": list(o.problems)} for o in outcomes]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "cases"}, indent=2,
                     ensure_ascii=False))
    for case in result["cases"]:
        wrong = (case["kind"] == "faithful") == (case["status"] not in ("answered", "missed"))
        if wrong:
            print(f"{case['id']} ({case['kind']}, {case['attack'] or case['corpus']}): "
                  f"{case['status']}; {case['problems'][:1]}")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
