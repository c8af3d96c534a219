"""Two writers on one knowledge base, as real processes started together."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_jsonl
from glassrag import KnowledgeBase
from glassrag.locks import WRITE_LOCK_NAME, exclusive
from glassrag.retrieval.integrity import check

pytestmark = pytest.mark.slow

TRIALS = 3
DOCS = 800  # long enough an ingest that two started together overlap


def _corpus(path: Path, tag: str, ids: str | None = None) -> Path:
    return write_jsonl(path, [
        {"doc_id": f"{ids or tag}-{i}", "text": f"heron record {tag} number {i}."}
        for i in range(DOCS)
    ])


def _start(kb_dir: Path, corpus: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest", str(corpus), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _together(kb_dir: Path, a: Path, b: Path) -> list[tuple[int, dict, str]]:
    procs = [_start(kb_dir, a), _start(kb_dir, b)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert "Traceback" not in err, err
        results.append((proc.returncode, json.loads(out), err))
    return results


def _consistent(kb_dir: Path) -> int:
    with KnowledgeBase.open(kb_dir) as kb:
        assert check(kb.store, kb.lexical) == []
        return kb.status()["documents"]


@pytest.mark.parametrize(("init_first", "trials"), [(True, TRIALS), (False, 2)],
                         ids=["after-init", "fresh"])
def test_two_ingests_started_together_both_succeed(tmp_path: Path, init_first: bool,
                                                   trials: int) -> None:
    a, b = _corpus(tmp_path / "a.jsonl", "a"), _corpus(tmp_path / "b.jsonl", "b")
    for trial in range(trials):
        kb_dir = tmp_path / f"kb{trial}"
        if init_first:
            KnowledgeBase.init(kb_dir).close()
        results = _together(kb_dir, a, b)
        assert [(code, report["added"]) for code, report, _ in results] == [(0, DOCS)] * 2
        assert _consistent(kb_dir) == 2 * DOCS


def test_two_ingests_of_the_same_new_ids(tmp_path: Path) -> None:
    same = _corpus(tmp_path / "a.jsonl", "a")
    other = _corpus(tmp_path / "other.jsonl", "other", ids="a")  # same ids, another file
    for trial in range(TRIALS):
        kb_dir = tmp_path / f"kb{trial}"
        KnowledgeBase.init(kb_dir).close()
        # The same file twice: the second writer waits, then finds it all unchanged.
        results = _together(kb_dir, same, same)
        assert sorted((c, r["added"], r["unchanged"]) for c, r, _ in results) == [
            (0, 0, DOCS), (0, DOCS, 0)]
        if trial == 0:
            # Another file claiming those ids: a clear per-document error, nothing replaced.
            for code, report, _ in _together(kb_dir, other, other):
                assert code == 1 and report["added"] == 0 and len(report["failed"]) == DOCS
                assert "already belongs to" in report["failed"][0]["error"]
        assert _consistent(kb_dir) == DOCS


def test_a_second_writer_waits_and_says_so(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    corpus = _corpus(tmp_path / "a.jsonl", "a")
    with exclusive(kb_dir / WRITE_LOCK_NAME):  # another writer holds the knowledge base
        proc = _start(kb_dir, corpus)
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 120)
        assert ready, "the ingest neither waited nor said anything"
        assert "waiting for another writer" in proc.stderr.readline()
        with KnowledgeBase.open(kb_dir) as kb:
            assert kb.status()["documents"] == 0  # it did not write while waiting
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0 and json.loads(out)["added"] == DOCS


def test_embedding_waits_for_another_writer(tmp_path: Path) -> None:
    """Embedding writes vectors and change-log entries: it takes the writer lock too."""
    import threading

    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([_corpus(tmp_path / "a.jsonl", "a")])
        done = threading.Event()

        def embed() -> None:
            kb.embed("hash:64")
            done.set()

        with exclusive(kb_dir / WRITE_LOCK_NAME):  # another process is writing
            worker = threading.Thread(target=embed)
            worker.start()
            # Hashing these chunks takes milliseconds: still running after seconds means
            # it waits for the lock.
            assert not done.wait(3.0)
        worker.join(timeout=120)
        assert done.is_set()
        assert kb.status()["dense"]["vectors"] == kb.status()["chunks"] > 0
