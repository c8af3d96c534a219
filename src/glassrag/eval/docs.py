"""Evaluation on your own documentation: ask every question of a question file
(:mod:`glassrag.eval.docs_questions`) and report how often glassrag was right.

:func:`run_docs_eval` builds (or updates) a knowledge base from a documentation folder, or
uses one you already have, asks each question with :meth:`KnowledgeBase.ask` exactly as a
user would, and reports per corpus, language and question kind:

* ``answered_correct``: answerable questions answered with text holding a gold string;
* ``cited_correct``: answerable questions answered with a citation overlapping an evidence
  span; ``both_correct``: both at once;
* ``false_refusal``: answerable questions not answered;
* ``no_evidence``: unanswerable questions answered ``no_evidence``;
* ``gold_in_top5``: answerable questions with an evidence span among the top 5 hits;
* the answer length (characters, median and 90th percentile) and the ask latency (median).

Answer text is judged without the ``Based on <source>:`` prefixes the extractive answerer
writes, so a file name can never count as an answer. A question that raises an error is
reported with its error and counted as not answered; the run goes on.

Folders: with ``docs`` given, a question whose ``corpus`` names a sub-folder of ``docs`` is
asked of a knowledge base built from that sub-folder alone (one knowledge base per corpus,
so corpora never mix); other questions use one built from ``docs`` itself. Evidence paths are
relative to the folder the question's knowledge base was built from.

Asking and judging (the rows, the rates, the report) are :mod:`glassrag.eval.docs_judge`'s;
this module builds the knowledge bases from folders. Both use only the knowledge base's
public methods.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassrag.errors import InvalidInput
from glassrag.eval.docs_judge import (
    EVAL_PRINCIPAL,
    GROUPS,
    RATES,
    TOP_HITS,
    CorpusBuild,
    DocsEvalReport,
    Progress,
    apply_overrides,
    ask_one,
    ask_plan,
    current_build,
    group_rates,
    judge,
    percentile,
    rates,
)
from glassrag.eval.docs_questions import DocsQuestion
from glassrag.records import DENSE_MODES, Principal

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

__all__ = ["EVAL_PRINCIPAL", "GROUPS", "RATES", "TOP_HITS", "CorpusBuild", "DocsEvalReport",
           "Progress", "apply_overrides", "ask_one", "build_kb", "corpus_folders",
           "group_rates", "judge", "percentile", "rates", "run_docs_eval"]


def run_docs_eval(
    questions: Sequence[DocsQuestion],
    docs: str | Path | None = None,
    *,
    kb: KnowledgeBase | None = None,
    kb_path: str | Path | None = None,
    mode: str | None = None,
    embedder: str | None = None,
    top_k: int | None = None,
    principal: Principal | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
) -> DocsEvalReport:
    """Ask every question and judge the answers.

    Either ``docs`` (a folder: knowledge bases are built under ``kb_path``, kept and updated
    on the next run, or in a temporary directory) or ``kb`` (an open knowledge base, used as
    it is). ``mode``, ``embedder`` and ``top_k`` go to :meth:`KnowledgeBase.ask`; with an
    embedder the built knowledge bases are embedded too. ``overrides`` changes settings for
    this run only, e.g. ``{"answer": {"min_coverage": 0.4}, "dense": {"min_score": 0.85}}``.
    """
    with _knowledge_bases(questions, docs, kb, kb_path, embedder, mode) as plan:
        return ask_plan(plan, questions, mode=mode, embedder=embedder, top_k=top_k,
                        principal=principal, overrides=overrides, progress=progress)


# -- knowledge bases -----------------------------------------------------------------------


def corpus_folders(questions: Sequence[DocsQuestion],
                   docs: Path) -> dict[str, tuple[Path, list[DocsQuestion]]]:
    """``{name: (folder, questions)}``: a question goes to ``docs/<corpus>`` when its
    ``corpus`` is a plain folder name that exists there, else to ``docs`` (name ``""``)."""
    plan: dict[str, tuple[Path, list[DocsQuestion]]] = {}
    for question in questions:
        name = question.corpus
        plain = bool(name) and Path(name).name == name and name not in (".", "..")
        if not (plain and (docs / name).is_dir()):
            name = ""
        folder = docs / name if name else docs
        plan.setdefault(name, (folder, []))[1].append(question)
    return plan


@contextlib.contextmanager
def _knowledge_bases(questions: Sequence[DocsQuestion], docs: str | Path | None,
                     kb: KnowledgeBase | None, kb_path: str | Path | None,
                     embedder: str | None, mode: str | None,
                     ) -> Iterator[list[tuple[CorpusBuild, KnowledgeBase, list[DocsQuestion]]]]:
    if (docs is None) == (kb is None):
        raise InvalidInput("give either a documentation folder (docs) or a knowledge base (kb)",
                           field="docs")
    if kb is not None:
        yield [(current_build(kb), kb, list(questions))]
        return
    assert docs is not None
    folder = Path(docs)
    if not folder.is_dir():
        raise InvalidInput(f"{folder}: not a directory", path=str(folder), field="docs")
    plan = corpus_folders(questions, folder)
    with contextlib.ExitStack() as stack:
        root = Path(kb_path) if kb_path is not None else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="glassrag-docs-eval-")))
        out = []
        for name, (source, asked) in plan.items():
            # One corpus: the knowledge base is kb_path itself; several: one folder each.
            target = root if len(plan) == 1 else root / (name or "_root")
            base = stack.enter_context(_opened(target))
            out.append((build_kb(base, name, source, embedder, mode), base, asked))
        yield out


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[KnowledgeBase]:
    from glassrag.kb import KnowledgeBase

    with KnowledgeBase.open(path) as kb:
        yield kb


def build_kb(kb: KnowledgeBase, name: str, folder: Path, embedder: str | None,
             mode: str | None) -> CorpusBuild:
    """Ingest ``folder`` (new and changed files; vanished ones pruned) and report it.

    A file that fails is listed in the build, not raised: the other files still count."""
    started = time.perf_counter()
    dense = embedder if mode in DENSE_MODES else None
    report = kb.ingest([folder], prune=True, embedder=dense)
    counts = kb.status()
    return CorpusBuild(name, str(folder), str(kb.path), int(counts.get("documents", 0)),
                       int(counts.get("chunks", 0)),
                       [{"path": f.path, "error": f.error} for f in report.failed],
                       round(time.perf_counter() - started, 3))

