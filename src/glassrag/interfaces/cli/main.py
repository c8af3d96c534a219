"""The ``glassrag`` command: a thin layer over :class:`glassrag.KnowledgeBase`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from glassrag.interfaces.cli.app import (
    EMBEDDER_OPTION,
    EXIT_FAILED,
    JSON_OPTION,
    MODE_OPTION,
    RERANK_OPTION,
    ROLE_OPTION,
    ROLES_ALIAS,
    TERMS_OPTION,
    app,
    cli_principal,
    docs_app,
    err,
    handle_errors,
    note_unknown_roles,
    open_kb,
    out,
    print_json,
    progress_bar,
    split_roles,
    state,
)
from glassrag.records import to_json
from glassrag.settings import MAX_TOP_K, resolve_kb_path


@app.command()
def init() -> None:
    """Create a knowledge base with a settings file that spells out every default."""
    with handle_errors(False):
        from glassrag.kb import KnowledgeBase

        kb = KnowledgeBase.init(resolve_kb_path(state.kb_path))
        out.print(f"knowledge base ready at {kb.path} (settings: {kb.path / 'glassrag.toml'})")
        kb.close()


@app.command()
def ingest(
    paths: list[Path] = typer.Argument(..., help="Files and directories to ingest"),
    role: list[str] = typer.Option(
        [], "--role", help="A role for documents that name none (repeatable; comma lists ok)"
    ),
    roles: list[str] = ROLES_ALIAS,
    chunker: str | None = typer.Option(
        None,
        help="docs | structure | sentences | punctuation | window [default: per input kind]",
    ),
    prune: bool = typer.Option(False, help="Remove documents whose files are gone"),
    include: list[str] = typer.Option([], help="Glob of files to include (repeatable)"),
    exclude: list[str] = typer.Option([], help="Glob of files to exclude (repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON"),
    embedder: str | None = typer.Option(
        None, "--embedder", help="st:NAME_OR_PATH | openai:MODEL | hash:DIM (dense, hybrid)"
    ),
    follow_external_links: bool | None = typer.Option(
        None, "--follow-external-links/--no-follow-external-links",
        help="Ingest symlink targets outside the ingested directory [default: "
        "[ingest] follow_external_links, false]", show_default=False,
    ),
    replace: bool = typer.Option(
        False, "--replace", help="Let these files replace documents stored from other files "
        "under the same doc_id"
    ),
    id_prefix: str = typer.Option(
        "", "--id-prefix", help="Put this before every doc_id of this ingest, e.g. hr/"
    ),
) -> None:
    """Ingest files and directories (.md, .rst, .txt, .jsonl, [doc:name] sectioned text; PDF,
    Word, PowerPoint, HTML, e-mail, CSV: see docs/formats.md)."""
    role_list = split_roles(role, roles)
    with handle_errors(as_json):
        report = _nothing_to_ingest(paths)
        if report is None:
            kb = open_kb(create=True)
            with progress_bar("ingesting") as tick:
                def waiting() -> None:
                    err.print(f"waiting for another writer to finish with {kb.path} ...")

                report = kb.ingest(
                    paths, roles=role_list, chunker=chunker, prune=prune,
                    include=include, exclude=exclude, progress=tick, embedder=embedder,
                    follow_external_links=follow_external_links, replace=replace,
                    id_prefix=id_prefix, on_wait=waiting,
                )
            kb.close()
    if as_json:
        print_json(report)
    else:
        out.print(
            f"added {report.added}, updated {report.updated}, unchanged {report.unchanged}, "
            f"deleted {report.deleted}, chunks {report.chunks}, failed {len(report.failed)} "
            f"({report.took_ms:.0f} ms)"
        )
        _print_parser_counts(report.parsers)
        if report.skipped:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items()))
            out.print(f"skipped {sum(report.skipped.values())} files ({reasons})")
        _print_roles_notes(report)
        if report.stale_answers:
            out.print(f"past answers whose citations changed: {report.stale_answers} "
                      "(glassrag traces stale lists them)")
        for path, count in sorted(report.hidden_dropped.items()):
            out.print(f"hidden content dropped: {path}: {count}")
        for failure in report.failed:
            err.print(f"failed: {failure.path}: {failure.error}", markup=False, style="red")
    if report.failed:
        raise typer.Exit(EXIT_FAILED)


def _nothing_to_ingest(paths: list[Path]) -> Any:
    """The ingest report of paths none of which exists, when there is no knowledge base
    yet: a mistyped path must not leave an empty knowledge base behind. None otherwise."""
    from glassrag.ingest.discovery import discover
    from glassrag.records import IngestReport
    from glassrag.settings import Settings, load_settings
    from glassrag.store.database import store_exists

    kb_dir = resolve_kb_path(state.kb_path)
    if any(os.path.exists(p) for p in paths) or store_exists(kb_dir, load_settings(kb_dir).store):
        return None
    _, failed = discover(paths)  # each path fails to stat, and says why
    err.print(f"nothing to ingest; no knowledge base was created at {kb_dir}")
    return IngestReport(failed=failed, default_roles=list(Settings().ingest.default_roles))


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for"),
    role: list[str] = ROLE_OPTION,
    top_k: int | None = typer.Option(None, "--top-k",
                                     help=f"How many hits, 1 to {MAX_TOP_K} [default: 10]"),
    mode: str | None = MODE_OPTION,
    terms: list[str] = TERMS_OPTION,
    as_json: bool = JSON_OPTION,
    embedder: str | None = EMBEDDER_OPTION,
    rerank: str | None = RERANK_OPTION,
) -> None:
    """Search as a principal with the given roles (plus public)."""
    with handle_errors(as_json):
        kb = open_kb()
        note_unknown_roles(kb, role)
        result = kb.search(query, principal=cli_principal(role), top_k=top_k, mode=mode,
                           terms=terms or None, embedder=embedder, rerank=rerank)
        kb.close()
    if as_json:
        print_json(result)
        return
    took = "" if result.took_ms is None else f", {result.took_ms:.2f} ms"
    table = Table(title=f"{len(result.hits)} hits ({result.mode}{took})")
    for column in ("#", "score", "chunk_id", "lines", "title", "matched", "text"):
        table.add_column(column, overflow="fold")
    for rank, hit in enumerate(result.hits, start=1):
        c = hit.chunk
        snippet = c.text if len(c.text) <= 160 else c.text[:157] + "..."
        where = f"{c.title} [{c.heading}]" if c.heading and c.heading != c.title else c.title
        table.add_row(str(rank), f"{hit.score:.3f}", c.chunk_id, f"{c.line_start}-{c.line_end}",
                      where, ", ".join(hit.matched_terms), snippet)
    out.print(table)
    out.print(f"query terms: {', '.join(result.query_terms)}")
    if result.blocked_count:
        out.print(f"matching chunks you may not read: {result.blocked_count}")


@app.command()
def analyze(text: str = typer.Argument(..., help="Text to analyse"),
            as_json: bool = JSON_OPTION) -> None:
    """Print the tokens glassrag indexes and queries for TEXT, per analyzer."""
    from glassrag.text.analysis import analyze as run_analyze
    from glassrag.text.analysis import analyze_runs

    runs = analyze_runs(text)
    if as_json:
        print_json({"text": text, "tokens": run_analyze(text),
                     "runs": [{"analyzer": a, "text": t, "tokens": toks} for a, t, toks in runs]})
        return
    for analyzer, run_text, tokens in runs:
        out.print(f"{analyzer:<9} {run_text!r} -> {' '.join(tokens)}")
    out.print(f"tokens: {' '.join(run_analyze(text))}")


@app.command()
def embed(
    embedder: str | None = typer.Option(
        None, "--embedder", help="st:NAME_OR_PATH | openai:MODEL | hash:DIM [default: the "
        "knowledge base's]"
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Embed every chunk that has no vector yet (resumes an interrupted embedding)."""
    with handle_errors(as_json):
        kb = open_kb()
        try:
            with progress_bar("embedding") as tick:
                report = kb.embed(embedder, progress=tick)
        finally:
            kb.close()
    if as_json:
        print_json({"embedded": report.embedded, "cached": report.cached,
                     "documents": len(report.doc_ids)})
    else:
        out.print(f"embedded {report.embedded} chunks ({report.cached} already had vectors)")


@app.command()
def reindex(
    index: str | None = typer.Option(
        None, "--index", help="Move to this search index: embedded | qdrant (docs/scale-out.md)"),
    url: str | None = typer.Option(None, "--url", help="Qdrant server or cluster URL"),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", help="The variable holding the Qdrant API key"),
    path: str | None = typer.Option(None, "--path", help="Qdrant local-mode directory"),
    collection: str | None = typer.Option(None, "--collection", help="Qdrant collection"),
) -> None:
    """Rebuild the search index from SQLite; --index moves the knowledge base to another."""
    options = {k: v for k, v in (("url", url), ("api_key_env", api_key_env), ("path", path),
                                 ("collection", collection)) if v is not None}
    with handle_errors(False):
        kb = open_kb()
        try:
            count = kb.reindex(index, **options)
            backend = kb.settings.index.backend
        finally:
            kb.close()
    out.print(f"reindexed {count} chunks ({backend} index)")


@app.command()
def status(as_json: bool = JSON_OPTION) -> None:
    """Counts of documents, chunks and versions, and where the index stands."""
    with handle_errors(as_json):
        kb = open_kb()
        info = kb.status()
        kb.close()
    if as_json:
        print_json(info)
    else:
        for key, value in _flat(info):
            out.print(f"{key}: {value}")


def _flat(info: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"dense": {"search": "hnsw"}}`` as ``[("dense.search", "hnsw")]`` for text output."""
    lines: list[tuple[str, Any]] = []
    for key, value in info.items():
        if isinstance(value, dict):
            lines += _flat(value, f"{prefix}{key}.")
        else:
            lines.append((f"{prefix}{key}", value))
    return lines


@docs_app.command("list")
def docs_list(as_json: bool = JSON_OPTION) -> None:
    """List documents with their roles, version and chunk count."""
    with handle_errors(as_json):
        kb = open_kb()
        docs = kb.documents()
        kb.close()
    if as_json:
        print_json([_doc_dict(d) for d in docs])
        return
    table = Table(title=f"{len(docs)} documents")
    for column in ("doc_id", "title", "source", "roles", "version", "chunks", "chunker"):
        table.add_column(column, overflow="fold")
    for d in docs:
        table.add_row(d.doc_id, d.title, d.source, ",".join(d.roles), str(d.version),
                      str(d.chunk_count), d.chunker)
    out.print(table)


@docs_app.command("show")
def docs_show(
    doc_id: str, as_json: bool = JSON_OPTION
) -> None:
    """Show a document's metadata and its chunks with line ranges."""
    with handle_errors(as_json):
        kb = open_kb()
        doc = kb.document(doc_id)
        chunks = kb.chunks(doc_id)
        kb.close()
    if as_json:
        print_json({**_doc_dict(doc), "positions": _position_runs(doc),
                     "chunks": [to_json(c) for c in chunks]})
        return
    for key, value in _doc_dict(doc).items():
        out.print(f"{key}: {value}")
    _print_positions(_position_runs(doc))
    for c in chunks:
        heading = f" [{c.heading}]" if c.heading else ""
        where = "".join(f" {k} {v}" for k, v in (("page", c.page), ("slide", c.slide)) if v)
        out.print(f"\n{c.chunk_id} lines {c.line_start}-{c.line_end}{where}{heading}",
                  markup=False)
        out.print(c.text)


@docs_app.command("delete")
def docs_delete(doc_ids: list[str] = typer.Argument(..., help="The doc_ids to delete")) -> None:
    """Delete documents (and their chunks) from the knowledge base."""
    with handle_errors(False):
        kb = open_kb()
        try:
            for doc_id in doc_ids:
                kb.delete(doc_id)
                out.print(f"deleted {doc_id}")
        finally:
            kb.close()


docs_app.command("rm", hidden=True)(docs_delete)  # the old name, still accepted


def _print_roles_notes(report: Any) -> None:
    """Say how many documents got the default roles, and which files no roles rule
    covered: both are how a document ends up readable by more people than meant."""
    if report.defaulted_roles:
        out.print(f"default roles ({', '.join(report.default_roles)}) given to "
                  f"{report.defaulted_roles} documents that name none")
    unmatched = report.no_rule_matched
    if unmatched:
        shown = ", ".join(unmatched[:10]) + (f" and {len(unmatched) - 10} more"
                                             if len(unmatched) > 10 else "")
        out.print(f"no rule in roles.toml matched {len(unmatched)} files: {shown}",
                  markup=False)


def _print_parser_counts(parsers: dict[str, dict[str, int]]) -> None:
    """One line per parser: how many files it read and chunks were written from them."""
    for name, counts in sorted(parsers.items()):
        out.print(f"  {name}: {counts['files']} files, {counts['chunks']} chunks")


def _position_runs(d: Any) -> dict[str, list[dict[str, int]]]:
    from glassrag.parsers import position_runs

    return position_runs(d.positions, d.line_offset)


def _print_positions(runs: dict[str, list[dict[str, int]]]) -> None:
    """The position map as runs: ``page 2: lines 14-30``."""
    for key, spans in runs.items():
        out.print(f"positions ({key}):")
        for run in spans:
            out.print(f"  {key} {run[key]}: lines {run['line_start']}-{run['line_end']}",
                      markup=False)


def _doc_dict(d: Any) -> dict[str, Any]:
    return {
        "doc_id": d.doc_id, "title": d.title, "source": d.source, "roles": list(d.roles),
        "version": d.version, "content_hash": d.content_hash, "parser": d.parser,
        "chunker": d.chunker, "chunk_count": d.chunk_count, "path": d.path,
        "encoding": d.encoding, "metadata": d.metadata, "updated_at": d.updated_at,
    }


@app.command()
def demo() -> None:
    """The workshop's four steps on the bundled examples, in a temporary knowledge base."""
    from glassrag.eval.demo import run_demo

    with handle_errors(False):
        ok = run_demo(lambda line: out.print(line))
    if not ok:
        raise typer.Exit(EXIT_FAILED)


# The other commands register themselves on `app` when imported; kept in their own
# modules so each stays readable.
from glassrag.interfaces.cli import answers as cli_answers  # noqa: E402,F401
from glassrag.interfaces.cli import over_time as cli_over_time  # noqa: E402,F401
from glassrag.interfaces.cli import server as cli_server  # noqa: E402,F401


def main(argv: list[str] | None = None) -> None:
    app(args=argv, prog_name="glassrag")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])

