"""The BEIR loader: the real layout, and errors that name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED, write_jsonl
from glassrag.errors import InputFileError
from glassrag.eval.beir_data import load_beir


def make(tmp_path: Path, qrels: str = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n"
         ) -> Path:
    root = tmp_path / "set"
    write_jsonl(root / "corpus.jsonl", [{"_id": "d1", "title": "T", "text": "refunds"},
                                        {"_id": 2, "text": "no title"}])
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "money back?"},
                                         {"_id": "q2", "text": "unjudged"}])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


def test_load(tmp_path: Path) -> None:
    corpus, queries, qrels = load_beir(make(tmp_path))
    assert corpus == {"d1": {"title": "T", "text": "refunds"}, "2": {"title": "", "text":
                                                                      "no title"}}
    assert queries == {"q1": "money back?"}  # only judged queries, as BEIR's loader does
    assert qrels == {"q1": {"d1": 1, "d2": 0}}


@pytest.mark.parametrize("qrels, message", [
    ("query-id\tcorpus-id\tscore\nq1\td1\n", r"test.tsv:2: expected 3 tab-separated"),
    ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", r"test.tsv:2: score 'high'"),
    ("query-id\tcorpus-id\tscore\nq9\td1\t1\n", r"1 judged queries are not in"),
])
def test_bad_qrels(tmp_path: Path, qrels: str, message: str) -> None:
    with pytest.raises(InputFileError, match=message):
        load_beir(make(tmp_path, qrels))


def test_bad_jsonl_and_missing_files(tmp_path: Path) -> None:
    root = make(tmp_path)
    with (root / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{broken\n")
    with pytest.raises(InputFileError, match=r"corpus.jsonl:3: not valid JSON"):
        load_beir(root)
    write_jsonl(root / "corpus.jsonl", [{"title": "no id"}])
    with pytest.raises(InputFileError, match=r"corpus.jsonl:1: a record needs an \"_id\""):
        load_beir(root)
    with pytest.raises(InputFileError, match=r"dev.tsv: not found"):
        load_beir(root, split="dev")


@pytest.mark.skipif(not (SHARED / "benchmarks" / "scifact").is_dir(), reason="no shared data")
def test_scifact_loads() -> None:
    corpus, queries, qrels = load_beir(SHARED / "benchmarks" / "scifact")
    assert (len(corpus), len(queries), len(qrels)) == (5183, 300, 300)


def test_written_records_read_back_as_the_corpus(tmp_path: Path) -> None:
    from glassrag.eval.beir_data import write_records
    from glassrag.parsers.readers import read_file

    corpus = {"d1": {"title": " Refunds ", "text": "Money back in 14 days."},
              "d2": {"title": "", "text": "No title here."},
              "d3": {"title": "Only a title", "text": "  "},
              "d4": {"title": "   ", "text": "Blank title."}}
    target = tmp_path / "records.jsonl"
    assert write_records(corpus, target) == 4
    read = read_file(target)
    assert read.errors == []
    assert [(d.doc_id, d.title, d.source, d.text, d.roles) for d in read.documents] == [
        ("d1", "Refunds", "d1", "Money back in 14 days.", ("public",)),
        ("d2", "d2", "d2", "No title here.", ("public",)),
        ("d3", "Only a title", "d3", "Only a title", ("public",)),  # indexed by its title
        ("d4", "d4", "d4", "Blank title.", ("public",)),
    ]
    write_records(corpus, target, title_in_text=True)
    assert read_file(target).documents[0].text == " Refunds \nMoney back in 14 days."
