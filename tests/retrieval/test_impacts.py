"""Differential tests: BM25 from precomputed per-(term, chunk) scores gives exactly what
Tantivy gives: the same hits, float32 scores (compared exactly), order (equal scores in
index address order), blocked counts and best blocked hits.

The corpus is Chinese, with chunks of many lengths (so many fieldnorm buckets), repeated
terms, exact duplicates (equal scores), three role sets, several index segments and
replaced documents (deleted chunks, which Tantivy's statistics still count).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import postgres_kb_dir, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.retrieval import impacts, search
from glassrag.retrieval.search import readable_sets
from glassrag.text.analysis import analyze, unique_terms

WORDS = [
    "一个", "我们", "中国", "他们", "自己", "没有", "国家", "可以", "发展", "工作", "问题",
    "进行", "地方", "经济", "社会", "技术", "企业", "市场", "历史", "文化", "教育", "学生",
    "老师", "城市", "农村", "科学", "研究", "政府", "政策", "环境", "能源", "交通", "医院",
    "医生", "健康", "音乐", "电影", "体育", "比赛", "银行", "价格", "工资", "合同", "项目",
]
ROLES = [["public"], ["employee"], ["employee"], ["finance"], ["public"]]
PRINCIPALS = {
    "public": Principal("p", roles=[]),
    "employee": Principal("e", roles=["employee"]),
    "all roles": Principal("a", roles=["employee", "finance"]),
    "admin": Principal("root", admin=True),
}


def _text(rnd: random.Random, i: int) -> str:
    # 1 to ~250 words: lengths across the exact and the quantised fieldnorm buckets.
    count = 1 + (i * 37) % 250 if i % 3 else rnd.randint(1, 12)
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]
    words = rnd.choices(WORDS, weights=weights, k=count)
    return "，".join("".join(words[j:j + 5]) for j in range(0, len(words), 5))


def _records(start: int, stop: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(start, stop):
        text = _text(rnd, i) if i % 50 else "音乐电影，银行价格"  # duplicates: equal scores
        out.append({"doc_id": f"d{i}", "title": "记录", "source": f"d{i}.txt",
                    "roles": ROLES[i % len(ROLES)], "text": text})
    return out


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("impacts")
    with KnowledgeBase.open(root / "kb") as base:
        # Three ingests (three segments), the last rewriting the first file: its documents
        # are replaced or gone, their chunks deleted from the index.
        for name, (start, stop, seed) in [("a", (0, 700, 1)), ("b", (700, 1400, 2)),
                                          ("a", (0, 300, 3))]:
            report = base.ingest([write_jsonl(root / f"{name}.jsonl",
                                              _records(start, stop, seed))])
            assert report.failed == []
        assert base.lexical.searcher.num_segments > 1
        yield base


def _queries(seed: str, n: int) -> list[list[str]]:
    rnd = random.Random(seed)
    queries = [unique_terms(analyze("".join(rnd.sample(WORDS, rnd.randint(1, 5)))))
               for _ in range(n)]
    return [*queries, ["银行"], ["音乐", "电影"], ["不存在的词"], ["一个", "不存在的词"]]


@pytest.fixture(scope="module")
def built(kb: KnowledgeBase) -> impacts.Impacts:
    found = impacts.build(kb.store, kb.lexical, kb.lexical.searcher)
    assert found is not None
    return found


@pytest.mark.parametrize("limits", [(10, 0), (5, 3), (1, 0), (3, 12), (2000, 0)])
@pytest.mark.parametrize("who", list(PRINCIPALS))
def test_impacts_give_exactly_tantivys_search(kb: KnowledgeBase, built: impacts.Impacts,
                                              who: str, limits: tuple[int, int]) -> None:
    readable = readable_sets(kb.store, PRINCIPALS[who])
    limit, blocked_limit = limits
    for terms in _queries(who + str(limits), 60):
        expected = kb.lexical.search(terms, readable, limit, blocked_limit)
        assert built.search(terms, readable, limit, blocked_limit) == expected, terms


def test_equal_scores_come_in_index_order(kb: KnowledgeBase, built: impacts.Impacts) -> None:
    # Every 50th document is the same text: a query for it ties them all.
    hits, _, _ = built.search(["音乐", "电影"], None, 40, 0)
    tied = [m for m in hits if m.score == hits[0].score]
    assert len(tied) > 5
    assert hits == kb.lexical.search(["音乐", "电影"], None, 40, 0)[0]


def test_a_build_for_an_older_index_version_is_refused(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb") as base:
        base.ingest([write_jsonl(tmp_path / "a.jsonl", _records(0, 40, 1))])
        old = base.lexical.searcher
        base.ingest([write_jsonl(tmp_path / "b.jsonl", _records(40, 60, 2))])
        # The store now holds chunks that searcher never indexed.
        assert impacts.build(base.store, base.lexical, old) is None
        assert impacts.build(base.store, base.lexical, base.lexical.searcher) is not None


def test_a_build_reads_a_postgresql_store_through_its_own_connection(
        tmp_path: Path, pg_dsn: str) -> None:
    with KnowledgeBase.open(postgres_kb_dir(tmp_path / "kb", pg_dsn)) as base:
        base.ingest([write_jsonl(tmp_path / "a.jsonl", _records(0, 80, 1))])
        built = impacts.build(base.store, base.lexical, base.lexical.searcher)
        assert built is not None
        readable = readable_sets(base.store, PRINCIPALS["employee"])
        for terms in _queries("postgres", 20):
            assert (built.search(terms, readable, 5, 2)
                    == base.lexical.search(terms, readable, 5, 2)), terms


def test_kb_search_uses_the_rows_once_built_and_drops_them_on_a_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "IMPACTS_MIN_DOCS", 1)
    monkeypatch.setattr(impacts, "REBUILD_PAUSE", 0.0)
    principal = PRINCIPALS["employee"]
    with KnowledgeBase.open(tmp_path / "kb") as base:
        base.ingest([write_jsonl(tmp_path / "a.jsonl", _records(0, 200, 1))])
        first = base.search("银行价格音乐", principal=principal)  # Tantivy; starts the build
        assert impacts.settle(base.lexical, timeout=60)
        rows = impacts._slot(base.lexical).impacts
        assert rows is not None and rows.searcher is base.lexical.searcher
        again = base.search("银行价格音乐", principal=principal)
        assert ([(h.chunk.chunk_id, h.score) for h in again.hits]
                == [(h.chunk.chunk_id, h.score) for h in first.hits])
        assert again.blocked_count == first.blocked_count
        base.ingest([write_jsonl(tmp_path / "b.jsonl",
                                 [{"doc_id": "new", "title": "银行", "source": "n.txt",
                                   "roles": ["public"], "text": "银行价格音乐银行"}])])
        # The rows are of the older version: this search is Tantivy's, and finds the new
        # document; the next build covers it.
        after = base.search("银行价格音乐", principal=principal)
        assert after.hits[0].chunk.doc_id == "new"
        assert impacts.settle(base.lexical, timeout=60)
        rebuilt = base.search("银行价格音乐", principal=principal)
        assert ([(h.chunk.chunk_id, h.score) for h in rebuilt.hits]
                == [(h.chunk.chunk_id, h.score) for h in after.hits])


def test_an_english_search_loads_no_numpy_and_a_cjk_search_may(tmp_path: Path) -> None:
    docs = [{"doc_id": "a", "title": "T", "source": "a.txt", "roles": ["public"],
             "text": "Refunds are paid within 30 days. 退款在三十天内支付。"}]
    with KnowledgeBase.open(tmp_path / "kb") as base:
        base.ingest([write_jsonl(tmp_path / "d.jsonl", docs)])
    code = ("import json, sys\n"
            "from glassrag import KnowledgeBase\n"
            "from glassrag.retrieval import search\n"
            "search.IMPACTS_MIN_DOCS = 1\n"
            "kb = KnowledgeBase.open('kb')\n"
            "kb.search('refund window')\n"
            "english = 'numpy' in sys.modules\n"
            "kb.search('退款')\n"
            "print(json.dumps([english, 'numpy' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [False, True]


def test_fieldnorm_ids_are_tantivys_buckets() -> None:
    import numpy as np

    ids = impacts.fieldnorm_ids(np.arange(0, 60))
    assert ids[:41].tolist() == list(range(41))  # exact up to 40
    assert ids[41:44].tolist() == [40, 41, 41]    # then 40, 42, 44, ... share a bucket
    table = impacts.fieldnorm_table()
    assert len(table) == 256 and table[-1] == 2013265944


def test_a_build_whose_scores_differ_from_tantivys_is_discarded(
        kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    # Another K1 than Tantivy's: the first term's score no longer matches its explanation.
    monkeypatch.setattr(impacts, "_K1", np.float32(1.3))
    assert impacts.build(kb.store, kb.lexical, kb.lexical.searcher) is None
