"""A ~100k-chunk corpus of real English text, assembled on this machine, for vector benchmarks.

Synthetic word-salad documents embed into vectors with little structure, which is the worst
case for an HNSW graph; a model's vectors of real text are what a knowledge base holds. This
script writes, under ``--out`` (git-ignored), JSONL shards of:

* the SciFact abstracts from ``../shared/benchmarks/scifact`` (about 48k sentence chunks with
  the ``sentences`` chunker), and
* the prose paragraphs of the docstrings in the installed Python packages and the standard
  library (up to ``--docstrings`` one-chunk documents),

with roles assigned like ``synth.py`` (public 50 %, employee 30 %, finance 20 %, from a hash of
the document id), plus ``queries.jsonl``: the SciFact queries. Nothing is committed; the text
is read from what is already on the machine each time.

    .venv/bin/python benchmarks/realtext.py --out benchmarks/out/realtext
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "scifact"
_ODD = re.compile(r"[{}<>=\\|`]|::|>>>|\.\. ")


def roles_for(doc_id: str) -> list[str]:
    bucket = int(hashlib.blake2b(doc_id.encode(), digest_size=4).hexdigest(), 16) % 10
    return ["public"] if bucket < 5 else ["employee"] if bucket < 8 else ["finance"]


def scifact_docs(root: Path) -> Iterator[dict[str, object]]:
    with (root / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            doc_id = f"scifact-{row['_id']}"
            yield {"doc_id": doc_id, "title": row.get("title", ""), "text": row["text"],
                   "source": f"scifact/{row['_id']}", "roles": roles_for(doc_id)}


def docstring_docs(limit: int) -> Iterator[dict[str, object]]:
    """Docstring paragraphs of prose (no markup or code), each once."""
    seen: set[str] = set()
    roots = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]])
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                  | ast.AsyncFunctionDef):
                    continue
                doc = ast.get_docstring(node)
                for raw in (doc or "").split("\n\n"):
                    para = " ".join(raw.split())
                    if not 40 <= len(para) <= 400 or _ODD.search(para) or para in seen:
                        continue
                    if not re.match(r"[A-Z][a-z]", para):
                        continue
                    seen.add(para)
                    doc_id = f"doc-{len(seen):06d}"
                    yield {"doc_id": doc_id, "title": getattr(node, "name", path.stem),
                           "text": para, "source": f"pydoc/{path.name}",
                           "roles": roles_for(doc_id)}
                    if len(seen) >= limit:
                        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--docstrings", type=int, default=55_000)
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    shard, count, handle = 0, 0, None
    for record in [*scifact_docs(args.scifact), *docstring_docs(args.docstrings)]:
        if count % 10_000 == 0:
            if handle is not None:
                handle.close()
            handle = (args.out / f"corpus-{shard:04d}.jsonl").open("w", encoding="utf-8")
            shard += 1
        assert handle is not None
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    if handle is not None:
        handle.close()
    with (args.scifact / "queries.jsonl").open(encoding="utf-8") as src, \
            (args.out / "queries.jsonl").open("w", encoding="utf-8") as dst:
        for line in src:
            row = json.loads(line)
            dst.write(json.dumps({"query_id": row["_id"], "text": row["text"]}) + "\n")
    print(f"{count} documents in {shard} shards under {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
