"""Ingest: files -> SourceDocuments -> chunks and tokens -> SQLite (the index follows).

Incremental by fingerprint: a document whose text, metadata, roles and chunking settings are
unchanged costs a hash and nothing more. A changed document is re-chunked and replaces its
old chunks in one transaction. Every bad file or record becomes one entry in
``IngestReport.failed``; the rest of the batch goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from glassrag.errors import GlassragError, InvalidInput
from glassrag.faults import crash_point
from glassrag.ingest.chunking import ChunkOptions, chunk_text
from glassrag.ingest.discovery import discover
from glassrag.ingest.roles_rules import RolesRules
from glassrag.parsers import Budget, ParseOptions
from glassrag.parsers.readers import is_supported, read_file
from glassrag.records import Document, FailedInput, IngestReport, SourceDocument
from glassrag.settings import Settings
from glassrag.store.database import NewDocument, Store
from glassrag.text.analysis import analyze

# Part of every fingerprint: bump when analysis or chunking output changes for the same input,
# so the next ingest re-processes everything. 2: the docs chunker (heading paths in the indexed
# text) and documents recording where their roles came from. 3: whole identifiers and
# camelCase parts as tokens, Japanese bigrams within one kind of writing. 4: a docs chunk that
# does not open its section is indexed with the section's own heading too; reST substitutions
# read as their text, a .txt file in reST read as reST, no one-letter camelCase parts, the
# leading sentences of a paragraph that introduces a block may finish the chunk before.
# 5: a Markdown title from a setext heading; headings without anchors, escapes, entities or
# reST roles' markup; a chunk continuing a table indexed with the table's header row.
PIPELINE_VERSION = "5"

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IngestOptions:
    """One ingest call's options (see :meth:`glassrag.KnowledgeBase.ingest`)."""

    roles: tuple[str, ...] = ()
    chunker: str | None = None
    prune: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    # None: ``[ingest] follow_external_links`` decides.
    follow_external_links: bool | None = None
    # Let a document take over a doc_id stored from another file.
    replace: bool = False
    # Put before every doc_id this call produces, e.g. "hr/".
    id_prefix: str = ""


# Where a document's roles came from, in order of precedence.
ORIGIN_DOCUMENT = "document"
ORIGIN_RULE = "rule"
ORIGIN_OPTION = "option"
ORIGIN_DEFAULT = "default"


_OPTION_KEYS: dict[ChunkOptions, str] = {}


def _options_key(options: ChunkOptions) -> str:
    # repr() of a dataclass is slow enough to show up per document; options rarely vary.
    key = _OPTION_KEYS.get(options)
    if key is None:
        key = _OPTION_KEYS[options] = repr(options)
    return key


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunk_options(settings: Settings) -> ChunkOptions:
    c = settings.chunking
    return ChunkOptions(
        max_chars=c.max_chars, docs_max_chars=c.docs_max_chars,
        sentences_per_chunk=c.sentences_per_chunk,
        size=c.size, overlap=c.overlap,
    )


def _fingerprint(doc: SourceDocument, roles: Sequence[str], origin: str, chunker: str,
                 options: str, text_hash: str) -> str:
    """Everything that decides a document's stored chunks and tokens, hashed."""
    parts = [PIPELINE_VERSION, text_hash, doc.source, doc.title,
             ",".join(sorted(roles)) + "@" + origin, chunker, options, str(doc.line_offset),
             doc.parser]
    # JSON only when present: most documents have neither, and dumps is the costly part.
    if doc.metadata:
        parts.append(json.dumps(doc.metadata, ensure_ascii=False, sort_keys=True, default=str))
    if doc.positions:
        parts.append(json.dumps({k: list(v) for k, v in sorted(doc.positions.items())}))
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector for the duration of an ingest.

    Ingest allocates millions of short-lived, acyclic objects (records, token lists), which
    refcounting frees; the generational collector only re-scans them. Pausing it measured
    ~10% less CPU per ingest.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_ingest(
    store: Store,
    paths: Sequence[str | Path],
    settings: Settings,
    rules: RolesRules,
    options: IngestOptions,
    progress: Progress | None = None,
) -> IngestReport:
    """Ingest ``paths`` into ``store`` (the caller then lets the indexes catch up)."""
    with _collector_paused(), store.bulk_writes():
        return _run_ingest(store, paths, settings, rules, options, progress)


def _run_ingest(
    store: Store,
    paths: Sequence[str | Path],
    settings: Settings,
    rules: RolesRules,
    options: IngestOptions,
    progress: Progress | None,
) -> IngestReport:
    started = time.perf_counter()
    report = IngestReport(default_roles=list(settings.ingest.default_roles))
    _check_options(options)
    include = list(options.include or settings.ingest.include) or None
    exclude = list(options.exclude or settings.ingest.exclude) or None
    follow = options.follow_external_links
    files, failures = discover(
        [Path(p) for p in paths], include=include, exclude=exclude,
        follow_external_links=settings.ingest.follow_external_links if follow is None else follow,
        supported=is_supported, skipped=report.skipped, skipped_paths=report.skipped_files,
    )
    report.failed.extend(failures)
    chunk_options = _chunk_options(settings)
    # Loaded at the first file that is not skipped: an unchanged re-ingest never needs it
    # (reading every document's fingerprint was most of its time).
    known_rows: dict[str, tuple[str, int, str | None, str]] | None = None

    def known() -> dict[str, tuple[str, int, str | None, str]]:
        nonlocal known_rows
        if known_rows is None:
            known_rows = store.fingerprints()
        return known_rows

    retired = store.retired_versions()
    seen: dict[str, str] = {}  # doc_id -> path it came from in this run
    claimed: set[str] = set()  # doc_ids refused because another file's document holds them
    read_ok: set[str] = set()  # files read without a file-level failure
    pending: list[NewDocument] = []
    pending_chars = 0
    pending_files: list[tuple[str, str | None, str, list[str]]] = []

    def flush() -> None:
        nonlocal pending_chars
        if not pending and not pending_files:
            return
        store.begin()
        try:
            store.write_documents(pending, known())
            # A file's record is written in the same transaction as (or after) its last
            # document, so a crash can never leave a file marked done with documents lost.
            store.write_files(pending_files)
            crash_point("ingest.before_commit")
            store.commit()
        except BaseException:
            store.rollback()
            raise
        pending.clear()
        pending_files.clear()
        pending_chars = 0
        crash_point("ingest.after_commit")

    base_key = _settings_key(settings, options, chunk_options)
    parse_options = _parse_options(settings)
    for number, (file, root) in enumerate(files, start=1):
        resolved = str(file.resolve())
        rule_roles = rules.match(resolved, link=Path(os.path.abspath(file)))
        file_key = hashlib.sha256(
            (base_key + "\x1f" + ",".join(rule_roles or ())).encode()
        ).hexdigest()
        digest = _file_digest(file, settings.ingest.max_file_bytes)
        unchanged = _skip_unchanged(store, resolved, digest, file_key, seen)
        if unchanged is not None:
            skipped, stored_origins = unchanged
            report.unchanged += len(skipped)
            seen.update(dict.fromkeys(skipped, str(file)))
            read_ok.add(resolved)
            _count_origins(report, str(file), (stored_origins[d] for d in skipped), rules)
            if progress is not None:
                progress(number, len(files))
            continue
        fingerprints = known()  # this file is read: its documents are checked against these
        result = read_file(file, root=root, max_bytes=settings.ingest.max_file_bytes,
                           parse_options=parse_options)
        report.failed.extend(result.errors)
        if result.hidden_dropped:
            report.hidden_dropped[str(file)] = result.hidden_dropped
        for parser in {doc.parser for doc in result.documents}:
            report.parsers.setdefault(parser, {"files": 0, "chunks": 0})["files"] += 1
        failed_before = len(report.failed)
        if not result.errors:
            # Only a cleanly read file may have its vanished records pruned: a broken line
            # could be the record that is "missing".
            read_ok.add(resolved)
        produced: list[str] = []
        origins: list[str] = []
        misanchored = (rules.misanchored(resolved, root)
                       if rules.rules and rule_roles is None else None)
        for doc in result.documents:
            if options.id_prefix:
                doc = dataclasses.replace(doc, doc_id=options.id_prefix + doc.doc_id)
            if doc.doc_id in seen:
                report.failed.append(FailedInput(
                    str(file),
                    f"doc_id {doc.doc_id!r} was already ingested from {seen[doc.doc_id]} "
                    "in this run; doc_ids must be unique",
                ))
                continue
            owner = _other_owner(doc, fingerprints, options)
            if owner is not None:
                claimed.add(doc.doc_id)
                report.failed.append(FailedInput(str(file), _claimed_message(doc, owner)))
                continue
            seen[doc.doc_id] = str(file)
            produced.append(doc.doc_id)
            roles, origin = _roles_for(doc, rule_roles, options, settings)
            if misanchored is not None and origin != ORIGIN_DOCUMENT:
                report.failed.append(FailedInput(str(file), f"{doc.doc_id}: {misanchored}"))
                continue
            origins.append(origin)
            try:
                new = _prepare(doc, roles, origin, settings, options, chunk_options, fingerprints,
                               retired)
            except GlassragError as exc:
                report.failed.append(FailedInput(str(file), f"{doc.doc_id}: {exc.message}"))
                continue
            if new is None:
                report.unchanged += 1
                continue
            if new.document.doc_id in fingerprints:
                report.updated += 1
            else:
                report.added += 1
            report.chunks += len(new.spans)
            report.parsers[doc.parser]["chunks"] += len(new.spans)
            pending.append(new)
            pending_chars += len(new.text)
            if (len(pending) >= settings.ingest.batch_size
                    or pending_chars >= settings.ingest.batch_chars):
                flush()
        _count_origins(report, str(file), origins, rules)
        clean = not result.errors and len(report.failed) == failed_before
        pending_files.append((resolved, digest if clean else None, file_key, produced))
        if progress is not None:
            progress(number, len(files))
    flush()
    if options.prune:
        report.deleted = _prune(store, files, paths, seen.keys() | claimed, read_ok)
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _check_options(options: IngestOptions) -> None:
    if options.chunker is not None:
        from glassrag.ingest.chunking import CHUNKERS

        if options.chunker not in CHUNKERS:
            raise InvalidInput(
                f"unknown chunker {options.chunker!r}; choose one of {', '.join(CHUNKERS)}",
                field="chunker",
            )
    if any(not isinstance(r, str) or not r.strip() for r in options.roles):
        # A blank role would make documents readable by no one, or (dropped) by everyone.
        raise InvalidInput("roles: every role must be a non-empty name", field="roles")
    if options.id_prefix != options.id_prefix.strip():
        raise InvalidInput("id_prefix must not begin or end with whitespace", field="id_prefix")


def _parse_options(settings: Settings) -> ParseOptions:
    """The parsers' options from ``[ingest]``, the per-file parse budget included."""
    s = settings.ingest
    budget = Budget(s.parse_timeout, s.parse_memory_mb) if s.parse_in_subprocess else None
    return ParseOptions(csv_template=s.csv_template or None, html_extractor=s.html_extractor,
                        keep_hidden=s.keep_hidden, budget=budget)


def _settings_key(settings: Settings, options: IngestOptions, chunk_options: ChunkOptions) -> str:
    """Everything besides a file's bytes and its roles rule that decides its documents."""
    return "\x1f".join([
        PIPELINE_VERSION, repr(chunk_options), settings.chunking.model_dump_json(),
        ",".join(settings.ingest.default_roles), ",".join(options.roles),
        options.chunker or "", settings.ingest.csv_template, settings.ingest.html_extractor,
        options.id_prefix,
        str(settings.ingest.keep_hidden),
    ])


def _roles_for(doc: SourceDocument, rule_roles: tuple[str, ...] | None,
               options: IngestOptions, settings: Settings) -> tuple[tuple[str, ...], str]:
    """A document's roles and where they came from, in order of precedence."""
    if doc.roles:
        return doc.roles, ORIGIN_DOCUMENT
    if rule_roles:
        return rule_roles, ORIGIN_RULE
    if options.roles:
        return options.roles, ORIGIN_OPTION
    return tuple(settings.ingest.default_roles), ORIGIN_DEFAULT


def _count_origins(report: IngestReport, path: str, origins: Iterable[str],
                   rules: RolesRules) -> None:
    """Count defaulted documents; list a file whose roles no rule decided while rules exist."""
    counts = Counter(origins)
    report.defaulted_roles += counts[ORIGIN_DEFAULT]
    if rules.rules and (counts[ORIGIN_OPTION] or counts[ORIGIN_DEFAULT]):
        report.no_rule_matched.append(path)


def _other_owner(doc: SourceDocument, known: dict[str, tuple[str, int, str | None, str]],
                 options: IngestOptions) -> str | None:
    """The path of another file whose stored document holds ``doc``'s doc_id, if any."""
    previous = known.get(doc.doc_id)
    if options.replace or previous is None or not previous[2] or previous[2] == doc.path:
        return None
    return previous[2]


def _claimed_message(doc: SourceDocument, owner: str) -> str:
    return (
        f"doc_id {doc.doc_id!r} already belongs to {owner}; not replaced by {doc.path} "
        "(pass --replace to replace it, or --id-prefix to give this folder's documents "
        "their own ids)"
    )


def _file_digest(file: Path, max_bytes: int) -> str | None:
    """sha256 of the file's bytes, or None when it cannot (or should not) be read here.

    JSONL is read record by record, so the cap is per record and the file may be larger.
    """
    try:
        if not file.is_file():
            return None
        if file.stat().st_size > max_bytes and file.suffix.lower() != ".jsonl":
            return None
        digest = hashlib.sha256()
        with open(file, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def _skip_unchanged(store: Store, path: str, digest: str | None, file_key: str,
                    seen: dict[str, str]) -> tuple[list[str], dict[str, str]] | None:
    """The doc_ids of a file whose bytes and settings match its last clean ingest, with the
    roles origin of each stored document of the file (doc_id -> origin), else None.

    Skipping means no parsing, chunking or analysis at all, which is what makes re-ingesting
    an unchanged corpus cheap. Any doubt (a document since removed, a doc_id also produced by
    another file in this run) means the file is processed normally.
    """
    if digest is None:
        return None
    record = store.file_record(path)
    if record is None or record[0] != digest or record[1] != file_key:
        return None
    doc_ids = record[2]
    stored = store.roles_origins(path)  # the documents stored from this file
    if not stored.keys() >= set(doc_ids) or not seen.keys().isdisjoint(doc_ids):
        return None
    return doc_ids, stored


def _prepare(
    doc: SourceDocument, roles: tuple[str, ...], origin: str, settings: Settings,
    options: IngestOptions, chunk_options: ChunkOptions,
    known: dict[str, tuple[str, int, str | None, str]], retired: dict[str, int],
) -> NewDocument | None:
    """Chunk and analyse one document, or return None when nothing about it changed."""
    chunker = options.chunker or doc.chunker or settings.chunker_for(doc.parser)
    text_hash = content_hash(doc.text)
    fingerprint = _fingerprint(doc, roles, origin, chunker, _options_key(chunk_options),
                               text_hash)
    previous = known.get(doc.doc_id)
    if previous is not None and previous[0] == fingerprint and previous[2] == doc.path:
        return None
    spans = chunk_text(doc.text, chunker, line_offset=doc.line_offset, options=chunk_options,
                       syntax="rst" if doc.parser == "rst" else "markdown")
    if not spans:
        raise InvalidInput("no text to index after chunking (the document is blank)")
    # The title is indexed with every chunk (as the overlap scorer scores title + text): a
    # chunk deep in a document is still about what the document is called.
    title_terms = analyze(doc.title) if doc.title else []
    # A docs chunk's index_text adds its heading path, so the section it sits in is searchable.
    tokens = [title_terms + analyze(span.index_text or span.text) for span in spans]
    # A deleted document that comes back continues its numbering: an old version number
    # keeps meaning the text (and roles) it was recorded with.
    version = retired.get(doc.doc_id, 0) + 1
    if previous is not None:
        version = previous[1] if previous[3] == text_hash else previous[1] + 1
    document = Document(
        doc_id=doc.doc_id, source=doc.source, title=doc.title, roles=tuple(sorted(set(roles))),
        content_hash=text_hash, version=version, parser=doc.parser, chunker=chunker,
        chunk_count=len(spans), path=doc.path, encoding=doc.encoding,
        line_offset=doc.line_offset, metadata=dict(doc.metadata),
    )
    return NewDocument(document=document, text=doc.text, fingerprint=fingerprint,
                       spans=spans, tokens=tokens, positions=dict(doc.positions),
                       roles_origin=origin)


def _prune(store: Store, files: Sequence[tuple[Path, Path]], paths: Sequence[str | Path],
           seen: Collection[str], read_ok: set[str]) -> int:
    """Delete documents that came from under ``paths`` and were not produced this run.

    A document is only pruned when its file is gone or was read cleanly without it (a record
    removed from a JSONL file); a file that failed to read keeps its documents.
    """
    roots = [Path(p).resolve() for p in paths]
    doomed = []
    for doc in store.documents():
        if doc.doc_id in seen or not doc.path:
            continue
        path = Path(doc.path)
        if not any(path == r or r in path.parents for r in roots):
            continue
        if not path.exists() or str(path) in read_ok:
            doomed.append(doc.doc_id)
    if doomed:
        store.begin()
        try:
            for doc_id in doomed:
                store.delete_document(doc_id)
            store.commit()
        except BaseException:
            store.rollback()
            raise
    return len(doomed)
