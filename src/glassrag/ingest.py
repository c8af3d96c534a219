"""Ingest: files -> SourceDocuments -> chunks and tokens -> SQLite (the index follows).

Incremental by fingerprint: a document whose text, metadata, roles and chunking settings are
unchanged costs a hash and nothing more. A changed document is re-chunked and replaces its
old chunks in one transaction. Every bad file or record becomes one entry in
``IngestReport.failed``; the rest of the batch goes on.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .analysis import analyze
from .chunking import ChunkOptions, chunk_text
from .discovery import discover
from .errors import GlassragError, InvalidInput
from .faults import crash_point
from .readers import read_file
from .records import Document, FailedInput, IngestReport, SourceDocument
from .roles_rules import RolesRules
from .settings import Settings
from .store import NewDocument, Store

# Part of every fingerprint: bump when analysis or chunking output changes for the same input,
# so the next ingest re-processes everything.
PIPELINE_VERSION = "1"
# Documents per SQLite transaction: big enough to amortise commits, small enough that a
# killed ingest loses little work.
BATCH_SIZE = 500

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IngestOptions:
    roles: tuple[str, ...] = ()
    chunker: str | None = None
    prune: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunk_options(settings: Settings) -> ChunkOptions:
    c = settings.chunking
    return ChunkOptions(
        max_chars=c.max_chars, sentences_per_chunk=c.sentences_per_chunk,
        size=c.size, overlap=c.overlap,
    )


def _fingerprint(doc: SourceDocument, roles: Sequence[str], chunker: str, options: ChunkOptions,
                 text_hash: str) -> str:
    payload = json.dumps(
        [PIPELINE_VERSION, text_hash, doc.source, doc.title, sorted(roles), chunker,
         repr(options), doc.line_offset, doc.parser, doc.metadata,
         {k: list(v) for k, v in doc.positions.items()}],
        ensure_ascii=False, sort_keys=True, default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def run_ingest(
    store: Store,
    paths: Sequence[str | Path],
    settings: Settings,
    rules: RolesRules,
    options: IngestOptions,
    progress: Progress | None = None,
) -> IngestReport:
    started = time.perf_counter()
    report = IngestReport()
    if options.chunker is not None:
        from .chunking import CHUNKERS

        if options.chunker not in CHUNKERS:
            raise InvalidInput(
                f"unknown chunker {options.chunker!r}; choose one of {', '.join(CHUNKERS)}",
                field="chunker",
            )
    include = list(options.include or settings.ingest.include) or None
    exclude = list(options.exclude or settings.ingest.exclude) or None
    files, failures = discover([Path(p) for p in paths], include=include, exclude=exclude)
    report.failed.extend(failures)
    chunk_options = _chunk_options(settings)
    known = store.fingerprints()
    seen: dict[str, str] = {}  # doc_id -> path it came from in this run
    read_ok: set[str] = set()  # files read without a file-level failure
    pending: list[NewDocument] = []

    def flush() -> None:
        if not pending:
            return
        store.begin()
        try:
            for new in pending:
                store.write_document(new)
            crash_point("ingest.before_commit")
            store.commit()
        except BaseException:
            store.rollback()
            raise
        pending.clear()
        crash_point("ingest.after_commit")

    for number, (file, root) in enumerate(files, start=1):
        result = read_file(file, root=root, max_bytes=settings.ingest.max_file_bytes)
        report.failed.extend(result.errors)
        if not result.errors:
            # Only a cleanly read file may have its vanished records pruned: a broken line
            # could be the record that is "missing".
            read_ok.add(str(file.resolve()))
        relpath = _relpath(file, root)
        for doc in result.documents:
            if doc.doc_id in seen:
                report.failed.append(FailedInput(
                    str(file),
                    f"doc_id {doc.doc_id!r} was already ingested from {seen[doc.doc_id]} "
                    "in this run; doc_ids must be unique",
                ))
                continue
            seen[doc.doc_id] = str(file)
            try:
                new = _prepare(doc, relpath, settings, rules, options, chunk_options, known)
            except GlassragError as exc:
                report.failed.append(FailedInput(str(file), f"{doc.doc_id}: {exc.message}"))
                continue
            if new is None:
                report.unchanged += 1
                continue
            if new.document.doc_id in known:
                report.updated += 1
            else:
                report.added += 1
            report.chunks += len(new.spans)
            pending.append(new)
            if len(pending) >= BATCH_SIZE:
                flush()
        if progress is not None:
            progress(number, len(files))
    flush()
    if options.prune:
        report.deleted = _prune(store, files, paths, seen, read_ok)
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _relpath(file: Path, root: Path) -> str:
    # The path as discovered (not symlink-resolved): roles.toml globs are written against
    # the tree a person sees.
    for candidate, base in ((file, root), (file.resolve(), root.resolve())):
        try:
            return candidate.relative_to(base).as_posix()
        except ValueError:
            continue
    return file.name


def _prepare(
    doc: SourceDocument, relpath: str, settings: Settings, rules: RolesRules,
    options: IngestOptions, chunk_options: ChunkOptions,
    known: dict[str, tuple[str, int, str | None, str]],
) -> NewDocument | None:
    """Chunk and analyse one document, or return None when nothing about it changed."""
    roles = (
        doc.roles
        or rules.roles_for(relpath)
        or options.roles
        or tuple(settings.ingest.default_roles)
    )
    chunker = options.chunker or doc.chunker or settings.chunker_for(doc.parser)
    text_hash = content_hash(doc.text)
    fingerprint = _fingerprint(doc, roles, chunker, chunk_options, text_hash)
    previous = known.get(doc.doc_id)
    if previous is not None and previous[0] == fingerprint and previous[2] == doc.path:
        return None
    spans = chunk_text(doc.text, chunker, line_offset=doc.line_offset, options=chunk_options)
    if not spans:
        raise InvalidInput("no text to index after chunking (the document is blank)")
    # The title is indexed with every chunk (as seed 000 scores title + text): a chunk deep
    # in a document is still about what the document is called.
    title_tokens = analyze(doc.title) if doc.title else []
    tokens = [title_tokens + analyze(span.text) for span in spans]
    version = 1
    if previous is not None:
        version = previous[1] if previous[3] == text_hash else previous[1] + 1
    document = Document(
        doc_id=doc.doc_id, source=doc.source, title=doc.title, roles=tuple(sorted(set(roles))),
        content_hash=text_hash, version=version, parser=doc.parser, chunker=chunker,
        chunk_count=len(spans), path=doc.path, encoding=doc.encoding,
        line_offset=doc.line_offset, metadata=dict(doc.metadata),
    )
    return NewDocument(document=document, text=doc.text, fingerprint=fingerprint,
                       spans=spans, tokens=tokens, positions=dict(doc.positions))


def _prune(store: Store, files: Sequence[tuple[Path, Path]], paths: Sequence[str | Path],
           seen: dict[str, str], read_ok: set[str]) -> int:
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
