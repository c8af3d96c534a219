"""Reading a dataset in the BEIR layout.

``DIR/corpus.jsonl`` (``{"_id", "title", "text"}`` a line), ``DIR/queries.jsonl``
(``{"_id", "text"}``) and ``DIR/qrels/<split>.tsv`` (a header line, then
``query-id<TAB>corpus-id<TAB>score``). Like BEIR's own loader, only queries that have qrels
in the split are returned. Every error names the file and the line at fault.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from glassrag.errors import InputFileError

Corpus = dict[str, dict[str, str]]


def _require(path: Path) -> Path:
    if not path.is_file():
        raise InputFileError(f"{path}: not found (expected the BEIR layout: corpus.jsonl,"
                             " queries.jsonl, qrels/<split>.tsv)", path=str(path))
    return path


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    records = []
    with _require(path).open(encoding="utf-8") as handle:
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
    path = directory / "corpus.jsonl"
    corpus: Corpus = {}
    for number, record in _jsonl(path):
        doc_id = str(record["_id"])
        if doc_id in corpus:
            raise InputFileError(f"{path}:{number}: duplicate _id {doc_id!r}",
                                 path=str(path), line=number)
        corpus[doc_id] = {"title": record.get("title") or "", "text": record.get("text") or ""}
    return corpus


def load_qrels(directory: Path, split: str = "test") -> dict[str, dict[str, int]]:
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


def load_beir(directory: str | Path, split: str = "test") -> tuple[
        Corpus, dict[str, str], dict[str, dict[str, int]]]:
    """``(corpus, queries, qrels)``: ``corpus[doc_id] = {"title", "text"}``,
    ``queries[query_id] = text`` (only queries judged in ``split``), ``qrels[qid][doc_id]``."""
    directory = Path(directory)
    qrels = load_qrels(directory, split)
    corpus = load_corpus(directory)
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
    return corpus, queries, qrels
