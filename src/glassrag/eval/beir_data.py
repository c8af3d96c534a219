"""Reading a dataset in the BEIR layout, and writing its corpus as glassrag records: the one
loader of the retrieval (:mod:`.beir`) and QA (:mod:`.qa`) benchmarks.

``DIR/corpus.jsonl`` (``{"_id", "title", "text"}`` a line), ``DIR/queries.jsonl``
(``{"_id", "text"}``) and ``DIR/qrels/<split>.tsv`` (a header line, then
``query-id<TAB>corpus-id<TAB>score``); a QA set adds ``DIR/answers.jsonl``
(``{"_id", "answers": [...]}``). Like BEIR's own loader, only queries that have qrels in the
split are returned. Every error names the file and the line at fault.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from glassrag.errors import InputFileError

Corpus = dict[str, dict[str, str]]
Qrels = dict[str, dict[str, int]]

_LAYOUT = "expected the BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv"
_QA_LAYOUT = "a QA set also needs answers.jsonl"


def _require(path: Path, layout: str = _LAYOUT) -> Path:
    if not path.is_file():
        raise InputFileError(f"{path}: not found ({layout})", path=str(path))
    return path


def _jsonl(path: Path, layout: str = _LAYOUT) -> list[tuple[int, dict[str, Any]]]:
    records = []
    with _require(path, layout).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise InputFileError(f"{path}:{number}: not valid JSON: {exc}",
                                     path=str(path), line=number) from None
            if not isinstance(record, dict) or "_id" not in record:
                raise InputFileError(f"{path}:{number}: a record needs an \"_id\" field",
                                     path=str(path), line=number)
            if not isinstance(record.get("text", ""), str) \
                    or not isinstance(record.get("title", ""), str):
                raise InputFileError(f"{path}:{number}: \"text\" and \"title\" must be strings",
                                     path=str(path), line=number)
            records.append((number, record))
    return records


def load_corpus(directory: Path) -> Corpus:
    """``corpus[doc_id] = {"title", "text"}`` (missing fields are empty strings)."""
    path = directory / "corpus.jsonl"
    corpus: Corpus = {}
    for number, record in _jsonl(path):
        doc_id = str(record["_id"])
        if doc_id in corpus:
            raise InputFileError(f"{path}:{number}: duplicate _id {doc_id!r}",
                                 path=str(path), line=number)
        corpus[doc_id] = {"title": record.get("title") or "", "text": record.get("text") or ""}
    return corpus


def load_qrels(directory: Path, split: str = "test") -> Qrels:
    """``qrels[query_id][doc_id] = grade`` of the split."""
    path = _require(directory / "qrels" / f"{split}.tsv")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if number == 1 and fields[:2] == ["query-id", "corpus-id"]:
                continue  # the header
            if not line.strip():
                continue
            if len(fields) != 3:
                raise InputFileError(
                    f"{path}:{number}: expected 3 tab-separated fields (query-id, corpus-id,"
                    f" score), got {len(fields)}", path=str(path), line=number)
            try:
                grade = int(fields[2])
            except ValueError:
                raise InputFileError(f"{path}:{number}: score {fields[2]!r} is not an integer",
                                     path=str(path), line=number) from None
            qrels.setdefault(fields[0], {})[fields[1]] = grade
    return qrels


def load_queries(directory: Path, qrels: Qrels, split: str = "test") -> dict[str, str]:
    """``queries[query_id] = text``, in file order, for the queries judged in ``qrels``;
    a judged query missing from the file, or without text, is an error."""
    queries = {}
    path = directory / "queries.jsonl"
    for number, record in _jsonl(path):
        qid = str(record["_id"])
        if qid in qrels:
            if not str(record.get("text", "")).strip():
                raise InputFileError(f"{path}:{number}: query {qid!r} has no text",
                                     path=str(path), line=number)
            queries[qid] = record["text"]
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        raise InputFileError(
            f"{directory / 'qrels' / (split + '.tsv')}: {len(missing)} judged queries are not in"
            f" {path} (first: {missing[0]!r})", path=str(path))
    return queries


def load_beir(directory: str | Path, split: str = "test") -> tuple[
        Corpus, dict[str, str], Qrels]:
    """``(corpus, queries, qrels)``: ``corpus[doc_id] = {"title", "text"}``,
    ``queries[query_id] = text`` (only queries judged in ``split``), ``qrels[qid][doc_id]``."""
    directory = Path(directory)
    qrels = load_qrels(directory, split)
    return load_corpus(directory), load_queries(directory, qrels, split), qrels


def load_answers(directory: Path) -> dict[str, tuple[str, ...]]:
    """``answers[query_id]``: the gold answers of a QA set (``answers.jsonl``)."""
    path = directory / "answers.jsonl"
    answers: dict[str, tuple[str, ...]] = {}
    for number, record in _jsonl(path, _QA_LAYOUT):
        golds = record.get("answers", [])
        if not isinstance(golds, list):
            raise InputFileError(f"{path}:{number}: \"answers\" must be a list",
                                 path=str(path), line=number)
        answers[str(record["_id"])] = tuple(str(a) for a in golds)
    return answers


def write_records(corpus: Corpus, target: Path, *, title_in_text: bool = False) -> int:
    """The corpus as glassrag JSONL records (``doc_id``, ``title``, ``text``, public);
    return how many were written.

    A document with no text is indexed by its title (glassrag refuses empty text), and one
    without a title gets its doc_id as title, as the JSONL reader gives it. ``title_in_text``
    puts the title at the head of the text too."""
    with target.open("w", encoding="utf-8") as out:
        for doc_id, doc in corpus.items():
            text = doc["text"] if doc["text"].strip() else doc["title"] or doc_id
            if title_in_text and doc["title"].strip() and doc["text"].strip():
                text = f"{doc['title']}\n{text}"
            record = {"doc_id": doc_id, "source": doc_id, "roles": ["public"], "text": text}
            if doc["title"].strip():  # glassrag needs a title; without one it uses doc_id
                record["title"] = doc["title"]
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(corpus)
