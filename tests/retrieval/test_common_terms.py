"""Differential tests: BM25 search with common-term pruning and restricted-postings counts
gives exactly what the whole query gives, on a Chinese corpus whose most frequent words are
in most chunks (as 中国, 国家 and 发展 are in Chinese news text).

The reference ranks every chunk matching the whole query (one exhaustive Tantivy search),
keeps the readable ones in order and counts the matches per role set over the ``tokens``
field: what ``LexicalIndex.search`` computed before these paths existed. Hits, float32
scores (compared exactly), order, blocked counts and the best blocked hits must agree.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.retrieval import blocked_counts, common_terms
from glassrag.retrieval.lexical import RESTRICTED, LexicalIndex, LexicalMatch
from glassrag.retrieval.search import readable_sets
from glassrag.text.analysis import analyze, unique_terms

# Very common words first: each of the first five is in most chunks.
COMMON = ["中国", "国家", "发展", "工作", "问题"]
WORDS = COMMON + [
    "地区", "公司", "人民", "进行", "地方", "经济", "社会", "技术",
    "企业", "市场", "历史", "文化", "教育", "学生", "老师", "城市", "农村", "科学", "研究",
    "政府", "政策", "环境", "能源", "交通", "医院", "医生", "健康", "音乐", "电影", "体育",
    "比赛", "银行", "价格", "工资", "合同", "项目", "会议", "报告", "计划", "系统", "网络",
    "数据", "安全", "服务", "客户", "产品", "质量", "标准", "法律", "制度", "改革", "开放",
]
ROLES = [["public"], ["public"], ["employee"], ["employee"], ["finance"]]
DOCS = 2600  # the common words' lists must be long enough to be treated as common
PRINCIPALS = {
    "public": Principal("p", roles=[]),
    "employee": Principal("e", roles=["employee"]),
    "all roles": Principal("a", roles=["employee", "finance"]),
    "admin": Principal("root", admin=True),
}


def _text(rnd: random.Random) -> str:
    words = [w for i, w in enumerate(COMMON) if rnd.random() < 0.9 - 0.1 * i]
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS) - len(COMMON))]
    words += rnd.choices(WORDS[len(COMMON):], weights=weights, k=rnd.randint(3, 25))
    rnd.shuffle(words)
    return "，".join("".join(words[i:i + 4]) for i in range(0, len(words), 4))


def _queries(rnd: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        k = rnd.randint(1, 5)
        picks = rnd.sample(COMMON, rnd.randint(0, 2)) + rnd.sample(WORDS[len(COMMON):], k)
        rnd.shuffle(picks)
        out.append("".join(picks[:k + 1]))
    return out


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("common-terms")
    rnd = random.Random(15)
    records = [{"doc_id": f"d{i}", "title": "记录", "source": f"d{i}.txt",
                "roles": ROLES[i % len(ROLES)], "text": _text(rnd)} for i in range(DOCS)]
    with KnowledgeBase.open(root / "kb") as base:
        report = base.ingest([write_jsonl(root / "docs.jsonl", records)])
        assert report.failed == [] and report.chunks == DOCS
        yield base


def _reference(lexical: LexicalIndex, terms: list[str], readable: set[int] | None,
               limit: int, blocked_limit: int) -> tuple[list[LexicalMatch], int, list]:
    searcher = lexical.searcher
    text = lexical.text_query(terms)
    hits = searcher.search(text, limit=searcher.num_docs, count=False).hits
    if readable is None:
        return lexical._matches(hits[:limit]), 0, []
    sets = searcher.fast_field_values("roleset", [a for _, a in hits])
    allowed = [h for h, r in zip(hits, sets, strict=True) if r in readable]
    outside = [h for h, r in zip(hits, sets, strict=True) if r not in readable]
    counts = lexical.counts_by_roleset(text)
    return (lexical._matches(allowed[:limit]),
            sum(n for rid, n in counts.items() if rid not in readable),
            lexical._matches(outside[:blocked_limit]))


def _terms(query: str) -> list[str]:
    return unique_terms(analyze(query))


@pytest.mark.parametrize("limits", [(10, 0), (5, 3), (1, 0), (3, 12)])
@pytest.mark.parametrize("who", list(PRINCIPALS))
def test_search_equals_the_whole_query(kb: KnowledgeBase, who: str,
                                       limits: tuple[int, int]) -> None:
    principal = PRINCIPALS[who]
    readable = readable_sets(kb.store, principal)
    limit, blocked_limit = limits
    for query in _queries(random.Random(who + str(limits)), 60):
        terms = _terms(query)
        got = kb.lexical.search(terms, readable, limit, blocked_limit)
        assert got == _reference(kb.lexical, terms, readable, limit, blocked_limit), query


def test_the_pruned_ranking_is_taken_and_exact(kb: KnowledgeBase) -> None:
    # Queries with a common word and rarer ones: most are ranked without the common words'
    # whole lists, and exactly.
    lexical = kb.lexical
    readable = readable_sets(kb.store, PRINCIPALS["employee"])
    rare, common = common_terms.split(lexical, _terms("中国国家电影音乐"), common_terms.RANK_SHARE)
    assert common == ["中国", "国家"] and rare == ["电影", "音乐"]
    proven = 0
    queries = [f"{c}{w}{v}" for c in COMMON[:3] for w in WORDS[20:30] for v in WORDS[40:44]]
    for query in queries:
        terms = _terms(query)
        fast = common_terms.ranked(lexical, terms, readable, 10, 0)
        if fast is None:
            continue
        proven += 1
        expected, _, _ = _reference(lexical, terms, readable, 10, 0)
        assert lexical._matches(fast[0]) == expected, query
    assert proven >= len(queries) // 2


def test_blocked_count_uses_restricted_postings_of_hidden_role_sets_only(
        kb: KnowledgeBase) -> None:
    lexical = kb.lexical
    sets = kb.store.rolesets()
    public = next(rid for rid, roles in sets.items() if roles == ("public",))
    finance = next(rid for rid, roles in sets.items() if roles == ("finance",))
    searcher = lexical.searcher
    # Public chunks are never blocked, so they have no restricted postings.
    assert searcher.doc_freq("restricted", f"电影{RESTRICTED}{public}") == 0
    per_set = lexical.counts_by_roleset(lexical.term_query("电影"))
    assert searcher.doc_freq("restricted", f"电影{RESTRICTED}{finance}") == per_set[finance]
    # Inclusion-exclusion over the common words (counted once per set of them, and kept).
    readable = readable_sets(kb.store, PRINCIPALS["public"])
    for query in ("中国国家发展电影", "中国", "工作问题音乐比赛银行", "电影音乐"):
        terms = _terms(query)
        _, expected, _ = _reference(lexical, terms, readable, 1, 0)
        assert blocked_counts.blocked_count(lexical, terms, readable) == expected, query
    assert frozenset({"中国", "国家"}) in common_terms.searcher_state(lexical).counts


def test_blocked_count_with_many_common_terms_or_clauses(kb: KnowledgeBase,
                                                         monkeypatch: Any) -> None:
    lexical = kb.lexical
    readable = readable_sets(kb.store, PRINCIPALS["public"])
    terms = _terms("".join(COMMON) + "电影")  # more common terms than inclusion-exclusion takes
    _, expected, _ = _reference(lexical, terms, readable, 1, 0)
    assert blocked_counts.blocked_count(lexical, terms, readable) == expected
    monkeypatch.setattr(blocked_counts, "MAX_CLAUSES", 1)  # the all-matches fallback
    assert blocked_counts.blocked_count(lexical, terms, readable) == expected


def test_kb_search_hits_scores_and_counts_are_the_whole_querys(kb: KnowledgeBase) -> None:
    principal = PRINCIPALS["employee"]
    readable = readable_sets(kb.store, principal)
    for query in ("中国电影音乐", "国家发展比赛银行价格", "问题", "医院医生健康中国"):
        result = kb.search(query, principal=principal, top_k=10, mode="bm25")
        expected, blocked, _ = _reference(kb.lexical, _terms(query), readable, 10, 0)
        rows = kb.store.chunks_by_rowid([m.rowid for m in expected])
        assert [h.chunk.chunk_id for h in result.hits] == [rows[m.rowid].chunk_id
                                                           for m in expected]
        assert [h.score for h in result.hits] == [m.score for m in expected]
        assert result.blocked_count == blocked


def test_blocked_count_follows_a_role_change(tmp_path: Path) -> None:
    doc = {"doc_id": "pay", "title": "工资", "source": "pay.txt", "text": "工资发放的时间"}
    with KnowledgeBase.open(tmp_path / "kb") as base:
        base.ingest([write_jsonl(tmp_path / "a.jsonl", [{**doc, "roles": ["finance"]}])])
        assert base.search("工资", principal=Principal("p")).blocked_count == 1
        report = base.ingest([write_jsonl(tmp_path / "a.jsonl", [{**doc, "roles": ["public"]}])])
        assert report.failed == []
        found = base.search("工资", principal=Principal("p"))
        assert found.blocked_count == 0 and [h.chunk.doc_id for h in found.hits] == ["pay"]



def test_sqlite_reads_through_a_memory_map(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb") as base:
        assert base.store.db.execute("PRAGMA mmap_size").fetchone()[0] > 0


def test_matched_terms_are_whole_tokens(tmp_path: Path) -> None:
    # A term is matched only as a whole stored token, never inside a longer one.
    docs = [{"doc_id": "a", "title": "T", "source": "a.txt", "roles": ["public"],
             "text": "Refunds are paid back."},
            {"doc_id": "b", "title": "T", "source": "b.txt", "roles": ["public"],
             "text": "电影音乐 音乐会"}]
    with KnowledgeBase.open(tmp_path / "kb") as base:
        base.ingest([write_jsonl(tmp_path / "d.jsonl", docs)])
        hit = base.search("fund refund", principal=Principal("p")).hits[0]
        assert hit.matched_terms == ("refund",)
        hits = base.search("音乐 电影 会", principal=Principal("p")).hits
        assert [h.matched_terms for h in hits] == [("音乐", "电影")]
