"""The Tantivy lexical index, derived from the SQLite change log.

Tokens come from glassrag's own analyzer (stored per chunk in SQLite) and are indexed with
Tantivy's whitespace tokenizer, so indexing and querying see identical terms. Queries are
built as objects from analysed tokens; user text never reaches Tantivy's query parser.

The index remembers the last change-log sequence it applied in ``state.json``. Replaying a
change is idempotent (delete the document's chunks, add the current ones), so a crash
between the Tantivy commit and the state write only means some changes are replayed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tantivy

from glassrag.faults import crash_point
from glassrag.locks import exclusive
from glassrag.records import PUBLIC_ROLE
from glassrag.retrieval import blocked_counts, common_terms
from glassrag.store.database import Store

STATE_NAME = "state.json"
Occur = tantivy.Occur
# Role sets are few (a handful per knowledge base); 10,000 buckets is "all of them".
_ROLESET_COUNTS = {"by_roleset": {"terms": {"field": "roleset", "size": 10_000}}}
_ROLESET_TOKENS = {"by_roleset": {"terms": {"field": "roleset", "size": 10_000},
                                  "aggs": {"tokens": {"sum": {"field": "length"}}}}}
# Bump when the index layout changes; an index with another format is rebuilt.
INDEX_FORMAT = 4
# Joins a term and its frequency in the ``repeats`` field ("refund\x1f3"); analysed tokens
# never contain it, so "refund\x1f" is a prefix of refund's entries only.
REPEAT = "\x1f"
# Joins a term and a role-set id in the ``restricted`` field ("refund\x1e3").
RESTRICTED = "\x1e"


@dataclass(frozen=True)
class LexicalMatch:
    rowid: int
    score: float


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("rowid", stored=True, fast=True, indexed=True)
    builder.add_text_field("doc_id", stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("roleset", stored=False, fast=True, indexed=True)
    builder.add_text_field("tokens", stored=False, tokenizer_name="whitespace", index_option="freq")
    # For BM25 with a principal's own statistics (readable_bm25), which Tantivy's scores
    # cannot give: each chunk's length in tokens, and "term<REPEAT>tf" for every term it
    # holds more than once (a term it holds and that is not there occurs once).
    builder.add_unsigned_field("length", stored=False, fast=True, indexed=False)
    builder.add_text_field("repeats", stored=False, tokenizer_name="whitespace",
                           index_option="basic")
    # For counting blocked matches by walking only the postings of chunks that some
    # principal may not read: "term<RESTRICTED>roleset" for each distinct term of a chunk
    # whose role set is not public (public chunks are never blocked).
    builder.add_text_field("restricted", stored=False, tokenizer_name="whitespace",
                           index_option="basic")
    return builder.build()


def _public_sets(store: Store) -> set[int]:
    """Role-set ids every principal may read (those holding the public role)."""
    return {rid for rid, roles in store.rolesets().items() if PUBLIC_ROLE in roles}


def restricted_terms(words: Iterable[str], roleset: int) -> str:
    """The ``restricted`` field's text for a chunk of role set ``roleset``."""
    # One join with the suffix in the separator: no string formatted per word.
    suffix = f"{RESTRICTED}{roleset}"
    joined = (suffix + " ").join(words)
    return joined + suffix if joined else ""


class LexicalIndex:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.schema = _schema()
        state = self._read_state()
        if state.get("format") != INDEX_FORMAT:
            state = self._create()
        self.index = tantivy.Index(self.schema, path=str(directory), reuse=True)
        self.applied_seq = int(state.get("applied_seq", 0))
        self._searcher: tantivy.Searcher | None = None
        # {roleset id: (chunks, tokens)} until the next reload, for readable-set BM25.
        self._totals: dict[int, tuple[int, int]] | None = None

    def _create(self) -> dict[str, int]:
        """Make a new, empty index (replacing an unknown or damaged layout; it is rebuilt
        from SQLite) and return its state.

        Under the index lock, and the state is written before the lock is let go: another
        process opening the same knowledge base at the same moment then finds a complete
        index and uses it, instead of deleting the one this process is creating.
        """
        with self._locked():
            state = self._read_state()
            if state.get("format") == INDEX_FORMAT:
                return state  # another process created it while we waited
            if self.directory.exists():
                shutil.rmtree(self.directory)
            self.directory.mkdir(parents=True, exist_ok=True)
            tantivy.Index(self.schema, path=str(self.directory), reuse=True)
            self._write_state(0)
            return {"format": INDEX_FORMAT, "applied_seq": 0}

    # -- state -------------------------------------------------------------------------
    def _read_state(self) -> dict[str, int]:
        try:
            return json.loads((self.directory / STATE_NAME).read_text())
        except (OSError, ValueError):
            return {}

    def _write_state(self, seq: int) -> None:
        tmp = self.directory / (STATE_NAME + ".tmp")
        tmp.write_text(json.dumps({"format": INDEX_FORMAT, "applied_seq": seq}))
        os.replace(tmp, self.directory / STATE_NAME)
        self.applied_seq = seq

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        # One writer at a time across processes; Tantivy's own lock would raise instead.
        return exclusive(self.directory.parent / "index.lock")

    # -- maintenance ---------------------------------------------------------------------
    def catch_up(self, store: Store) -> int:
        """Apply every change after ``applied_seq``; return how many documents were touched."""
        if store.last_seq() <= self.applied_seq:
            return 0
        with self._locked():
            self.applied_seq = int(self._read_state().get("applied_seq", self.applied_seq))
            changes = store.changes_since(self.applied_seq)
            if not changes:
                return 0
            last = changes[-1][0]
            touched = list(dict.fromkeys(doc_id for _, doc_id, _ in changes))
            writer = self.index.writer(heap_size=128_000_000, num_threads=1)
            if self.applied_seq > 0 or self.index.searcher().num_docs > 0:
                for doc_id in touched:
                    writer.delete_documents_by_term("doc_id", doc_id)
            self._add_rows(writer, store.index_rows(touched), _public_sets(store))
            crash_point("index.before_commit")
            writer.commit()
            writer.wait_merging_threads()
            crash_point("index.after_commit")
            self._write_state(last)
            self._reload()
            return len(touched)

    def rebuild(self, store: Store) -> int:
        """Drop every indexed chunk and index all of SQLite again; return the chunk count."""
        with self._locked():
            last = store.last_seq()
            writer = self.index.writer(heap_size=128_000_000, num_threads=1)
            writer.delete_all_documents()
            added = self._add_rows(writer, store.index_rows(), _public_sets(store))
            writer.commit()
            writer.wait_merging_threads()
            self._write_state(last)
            self._reload()
            return added

    def _add_rows(
        self, writer: tantivy.IndexWriter, rows: Iterator[tuple[int, str, int, str]],
        public: Collection[int],
    ) -> int:
        added = 0
        for rowid, doc_id, roleset, tokens in rows:
            words = tokens.split()
            doc = tantivy.Document()
            doc.add_unsigned("rowid", rowid)
            doc.add_text("doc_id", doc_id)
            doc.add_unsigned("roleset", roleset)
            doc.add_text("tokens", tokens)
            doc.add_unsigned("length", len(words))
            counts = Counter(words)
            if len(counts) < len(words):
                doc.add_text("repeats", " ".join(
                    f"{w}{REPEAT}{n}" for w, n in counts.items() if n > 1))
            if roleset not in public:
                doc.add_text("restricted", restricted_terms(counts, roleset))
            writer.add_document(doc)
            added += 1
        return added

    def _reload(self) -> None:
        self.index.reload()
        self._searcher = None
        self._totals = None

    def refresh(self) -> None:
        """See commits made by other processes."""
        self._reload()
        self.applied_seq = int(self._read_state().get("applied_seq", self.applied_seq))

    @property
    def searcher(self) -> tantivy.Searcher:
        if self._searcher is None:
            self._searcher = self.index.searcher()
        return self._searcher

    def num_docs(self) -> int:
        return int(self.searcher.num_docs)

    # -- search --------------------------------------------------------------------------
    def _text_query(self, terms: Sequence[str]) -> tantivy.Query:
        # One clause per term, any of them matching: common_terms relies on this shape.
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, self.term_query(term)) for term in terms]
        )

    def search(
        self, terms: Sequence[str], readable: Collection[int] | None, limit: int,
        blocked_limit: int = 0,
    ) -> tuple[list[LexicalMatch], int, list[LexicalMatch]]:
        """BM25 top-``limit`` among chunks whose role set is in ``readable`` (None: no
        filter), the number of matching chunks outside it, and the best ``blocked_limit`` of
        those (for the status decision and the audit trace only; never shown to users).

        The filter is exact and applied before top-k. Tantivy's block-max pruning only works
        on the unfiltered query, so first the best ``4 * limit`` chunks are ranked unfiltered
        and their role sets read from a fast field: if ``limit`` readable ones are among
        them, they are exactly the readable top-k (anything readable ranked lower scores no
        higher). Otherwise the query runs again with the role filter as a Tantivy clause.
        """
        if not terms:
            return [], 0, []
        text = self._text_query(terms)
        # A query holding a very common term is ranked and counted without walking that
        # term's whole list when the result can be proven the same (see common_terms).
        fast = common_terms.ranked(self, terms, readable, limit, blocked_limit)
        if readable is None:
            hits = fast[0] if fast else self.searcher.search(text, limit=limit,
                                                              count=False).hits
            return self._matches(hits), 0, []
        allowed, outside = fast or self._ranked(text, readable, limit, blocked_limit)
        return (self._matches(allowed[:limit]), self._blocked_count(readable, terms),
                self._matches(outside[:blocked_limit]))

    def _ranked(self, text: tantivy.Query, readable: Collection[int], limit: int,
                blocked_limit: int) -> tuple[list, list]:
        """The best ``limit`` readable and ``blocked_limit`` unreadable hits of ``text``."""
        fetch = max(4 * limit, 40, blocked_limit)
        searcher = self.searcher
        hits = searcher.search(text, limit=fetch, count=False).hits
        sets = searcher.fast_field_values("roleset", [a for _, a in hits]) if hits else []
        exhausted = len(hits) < fetch
        allowed = [h for h, r in zip(hits, sets, strict=True) if r in readable]
        outside = [h for h, r in zip(hits, sets, strict=True) if r not in readable]
        if len(allowed) < limit and not exhausted:
            allowed = self._filtered(text, readable, limit, Occur.Must)
        if len(outside) < blocked_limit and not exhausted:
            outside = self._filtered(text, readable, blocked_limit, Occur.MustNot)
        return allowed, outside

    def _filtered(self, text: tantivy.Query, readable: Collection[int], limit: int,
                  occur: Occur) -> list:
        if not readable:
            return [] if occur == Occur.Must else self.searcher.search(text, limit=limit).hits
        roles = tantivy.Query.term_set_query(self.schema, "roleset", sorted(readable))
        # The role clause scores nothing (const 0), so BM25 scores stay comparable.
        clause = tantivy.Query.const_score_query(roles, 0.0)
        query = tantivy.Query.boolean_query([(Occur.Must, text), (occur, clause)])
        return self.searcher.search(query, limit=limit, count=False).hits

    def _blocked_count(self, readable: Collection[int], terms: Sequence[str]) -> int:
        """How many chunks outside ``readable`` match (see blocked_counts)."""
        return blocked_counts.blocked_count(self, terms, readable)

    def counts_by_roleset(self, query: tantivy.Query) -> dict[int, int]:
        """How many chunks match ``query``, per role-set id (one aggregation pass)."""
        result = self.searcher.aggregate(query, _ROLESET_COUNTS)
        return {int(b["key"]): int(b["doc_count"]) for b in result["by_roleset"]["buckets"]}

    # -- readable-set statistics (the ``conceal`` path; see readable_bm25) ----------------
    def term_query(self, term: str) -> tantivy.Query:
        return tantivy.Query.term_query(self.schema, "tokens", term)

    def restricted_query(self, term: str, roleset: int) -> tantivy.Query:
        """Chunks of role set ``roleset`` (not a public one) holding ``term``."""
        return tantivy.Query.term_query(self.schema, "restricted",
                                        f"{term}{RESTRICTED}{roleset}")

    def text_query(self, terms: Sequence[str]) -> tantivy.Query:
        """Chunks holding any of ``terms``."""
        return self._text_query(terms)

    def roleset_query(self, readable: Collection[int]) -> tantivy.Query:
        """Chunks whose role set is in ``readable``."""
        return tantivy.Query.term_set_query(self.schema, "roleset", sorted(readable))

    def rowid_query(self, rowid: int) -> tantivy.Query:
        return tantivy.Query.term_query(self.schema, "rowid", rowid)

    @staticmethod
    def both(first: tantivy.Query, second: tantivy.Query) -> tantivy.Query:
        return tantivy.Query.boolean_query([(Occur.Must, first), (Occur.Must, second)])

    def postings(self, query: tantivy.Query, limit: int) -> tuple[list[int], list[Any]]:
        """Row ids and addresses of up to ``limit`` chunks matching ``query``, unscored."""
        if limit < 1:
            return [], []
        hits = self.searcher.search(query, limit=limit, count=False,
                                    order_by_field="rowid").hits
        return [int(key) for key, _ in hits], [address for _, address in hits]

    def repeats(self, term: str, within: tantivy.Query) -> list[tuple[int, tantivy.Query, int]]:
        """(frequency, query, chunk count) for each frequency above 1 that ``term`` has in
        the chunks matching ``within``; the query finds the chunks with that frequency."""
        prefix = f"{term}{REPEAT}"
        found = self.searcher.terms_with_prefix("repeats", prefix, filter_query=within)
        return [(int(entry[len(prefix):]),
                 tantivy.Query.term_query(self.schema, "repeats", entry), int(count))
                for entry, count in found if count]

    def lengths(self, addresses: Sequence[Any]) -> list[int]:
        """Each chunk's length in tokens."""
        if not addresses:
            return []
        return [int(n or 0) for n in self.searcher.fast_field_values("length", list(addresses))]

    def blocked_matches(self, query: tantivy.Query, readable: Collection[int],
                        limit: int) -> list[LexicalMatch]:
        """The best ``limit`` matches outside ``readable``, by the index's own BM25 (for
        the status decision and the audit trace only)."""
        if limit < 1:
            return []
        return self._matches(self._filtered(query, readable, limit, Occur.MustNot))

    def roleset_totals(self) -> dict[int, tuple[int, int]]:
        """Chunks and analysed tokens per role-set id (one aggregation, kept until the
        index changes)."""
        if self._totals is None:
            result = self.searcher.aggregate(tantivy.Query.all_query(), _ROLESET_TOKENS)
            self._totals = {int(b["key"]): (int(b["doc_count"]), int(b["tokens"]["value"]))
                            for b in result["by_roleset"]["buckets"]}
        return self._totals

    def _matches(self, hits: list) -> list[LexicalMatch]:
        addresses = [addr for _, addr in hits]
        rowids = self.searcher.fast_field_values("rowid", addresses) if addresses else []
        return [
            LexicalMatch(rowid=int(rowid or 0), score=float(score))
            for (score, _), rowid in zip(hits, rowids, strict=True)
        ]

    def explain(self, terms: Sequence[str], rowid: int) -> dict[str, float]:
        """Per-term BM25 contributions for one chunk (for ``inspect``)."""
        contributions: dict[str, float] = {}
        searcher = self.searcher
        doc_query = tantivy.Query.term_query(self.schema, "rowid", rowid)
        for term in terms:
            query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, tantivy.Query.term_query(self.schema, "tokens", term)),
                    (tantivy.Occur.Must, tantivy.Query.const_score_query(doc_query, 0.0)),
                ]
            )
            hits = searcher.search(query, limit=1, count=False).hits
            if hits:
                contributions[term] = float(hits[0][0])
        return contributions
