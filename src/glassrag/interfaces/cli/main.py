"""The ``glassrag`` command: a thin layer over :class:`glassrag.KnowledgeBase`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from glassrag.errors import GlassragError, InvalidInput, NotFound
from glassrag.kb import KnowledgeBase, resolve_kb_path
from glassrag.records import Principal, to_json
from glassrag.settings import MAX_TOP_K

app = typer.Typer(
    help="glassrag: a glass-box RAG engine. Permission-aware search with visible scores.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
docs_app = typer.Typer(help="List, show and remove documents.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")
traces_app = typer.Typer(help="List the traces of past questions.", no_args_is_help=True)
app.add_typer(traces_app, name="traces")
llm_app = typer.Typer(help="Check the model endpoint used by ask --llm.", no_args_is_help=True)
app.add_typer(llm_app, name="llm")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

# Exit codes: 0 ok, 1 something failed (e.g. a file in an ingest), 2 bad input,
# 3 not found (knowledge base, document, trace).
EXIT_FAILED, EXIT_INVALID, EXIT_NOT_FOUND = 1, 2, 3


class State:
    kb_path: Path | None = None
    json_errors: bool = False


state = State()

# Options shared by search, ask and inspect: one definition, the same flag and help everywhere.
ROLE_OPTION = typer.Option([], "--role", help="A role of the asking principal")
MODE_OPTION = typer.Option(None, help="bm25 | dense | hybrid | overlap | terms")
TERMS_OPTION = typer.Option([], "--terms", help="Explicit keywords (1-5); mode terms")
EMBEDDER_OPTION = typer.Option(
    None, "--embedder", help="st:NAME_OR_PATH | openai:MODEL | hash:DIM (dense, hybrid)"
)
RERANK_OPTION = typer.Option(None, help="lexical | cross:PATH")


@app.callback()
def _root(
    kb: Path | None = typer.Option(
        None, "--kb", help="Knowledge base directory [default: $GLASSRAG_KB or ./.glassrag]"
    ),
) -> None:
    state.kb_path = kb


def _exit_code(exc: GlassragError) -> int:
    if isinstance(exc, NotFound):
        return EXIT_NOT_FOUND
    if isinstance(exc, InvalidInput):
        return EXIT_INVALID
    return EXIT_FAILED


@contextmanager
def _errors(as_json: bool) -> Iterator[None]:
    """Turn engine errors into one JSON error shape (``--json``) or a red line, and an exit code."""
    try:
        yield
    except GlassragError as exc:
        if as_json:
            print(json.dumps(exc.to_dict(detail=True), ensure_ascii=False))
        else:
            err.print(f"[red]error:[/red] {exc.message}", markup=True)
        raise typer.Exit(_exit_code(exc)) from None


def _open(create: bool = False) -> KnowledgeBase:
    return KnowledgeBase.open(resolve_kb_path(state.kb_path), create=create)


def _principal(roles: list[str] | None) -> Principal:
    return Principal("cli", roles=roles or [])


def _print_json(value: Any) -> None:
    print(json.dumps(to_json(value), ensure_ascii=False, indent=2))


@app.command()
def init() -> None:
    """Create a knowledge base with a settings file that spells out every default."""
    with _errors(False):
        kb = KnowledgeBase.init(resolve_kb_path(state.kb_path))
        out.print(f"knowledge base ready at {kb.path} (settings: {kb.path / 'glassrag.toml'})")
        kb.close()


@app.command()
def ingest(
    paths: list[Path] = typer.Argument(..., help="Files and directories to ingest"),
    roles: list[str] = typer.Option(
        [], "--roles", help="Roles for documents that name none (repeatable; comma lists ok)"
    ),
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
    """Ingest files and directories (.md, .rst, .txt, .jsonl, \\[doc:name] sectioned text; PDF,
    Word, PowerPoint, HTML, e-mail, CSV: see docs/formats.md)."""
    role_list = [r.strip() for value in roles for r in value.split(",") if r.strip()]
    with _errors(as_json):
        kb = _open(create=True)
        progress = Progress(
            TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, transient=True, disable=not err.is_terminal,
        )
        with progress:
            task = progress.add_task("ingest", total=None)

            def tick(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            def waiting() -> None:
                err.print(f"waiting for another writer to finish with {kb.path} ...",
                          markup=False)

            report = kb.ingest(
                paths, roles=role_list, chunker=chunker, prune=prune,
                include=include, exclude=exclude, progress=tick, embedder=embedder,
                follow_external_links=follow_external_links, replace=replace,
                id_prefix=id_prefix, on_wait=waiting,
            )
        kb.close()
    if as_json:
        _print_json(report)
    else:
        out.print(
            f"added {report.added}, updated {report.updated}, unchanged {report.unchanged}, "
            f"deleted {report.deleted}, chunks {report.chunks}, failed {len(report.failed)} "
            f"({report.took_ms:.0f} ms)"
        )
        _print_parser_counts(report.parsers)
        if report.skipped:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items()))
            out.print(f"skipped {sum(report.skipped.values())} files ({reasons})", markup=False)
        _print_roles_notes(report)
        for path, count in sorted(report.hidden_dropped.items()):
            out.print(f"hidden content dropped: {path}: {count}", markup=False)
        for failure in report.failed:
            err.print(f"failed: {failure.path}: {failure.error}", markup=False, style="red")
    if report.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for"),
    role: list[str] = ROLE_OPTION,
    top_k: int | None = typer.Option(None, "--top-k",
                                     help=f"How many hits, 1 to {MAX_TOP_K} [default: 10]"),
    mode: str | None = MODE_OPTION,
    terms: list[str] = TERMS_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
    embedder: str | None = EMBEDDER_OPTION,
    rerank: str | None = RERANK_OPTION,
) -> None:
    """Search as a principal with the given roles (plus public)."""
    with _errors(as_json):
        kb = _open()
        result = kb.search(query, principal=_principal(role), top_k=top_k, mode=mode,
                           terms=terms or None, embedder=embedder, rerank=rerank)
        kb.close()
    if as_json:
        _print_json(result)
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
    out.print(table, markup=False)
    out.print(f"query terms: {', '.join(result.query_terms)}", markup=False)
    if result.blocked_count:
        out.print(f"matching chunks you may not read: {result.blocked_count}")


@app.command()
def analyze(text: str = typer.Argument(..., help="Text to analyse"),
            as_json: bool = typer.Option(False, "--json", help="Print JSON")) -> None:
    """Print the tokens glassrag indexes and queries for TEXT, per analyzer."""
    from glassrag.text.analysis import analyze as run_analyze
    from glassrag.text.analysis import analyze_runs

    runs = analyze_runs(text)
    if as_json:
        _print_json({"text": text, "tokens": run_analyze(text),
                     "runs": [{"analyzer": a, "text": t, "tokens": toks} for a, t, toks in runs]})
        return
    for analyzer, run_text, tokens in runs:
        out.print(f"{analyzer:<9} {run_text!r} -> {' '.join(tokens)}", markup=False)
    out.print(f"tokens: {' '.join(run_analyze(text))}", markup=False)


@app.command()
def embed(
    embedder: str | None = typer.Option(
        None, "--embedder", help="st:NAME_OR_PATH | openai:MODEL | hash:DIM [default: the "
        "knowledge base's]"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Embed every chunk that has no vector yet (resumes an interrupted embedding)."""
    with _errors(as_json):
        kb = _open()
        try:
            with _progress("embedding") as tick:
                report = kb.embed(embedder, progress=tick)
        finally:
            kb.close()
    if as_json:
        _print_json({"embedded": report.embedded, "cached": report.cached,
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
    with _errors(False):
        kb = _open()
        try:
            count = kb.reindex(index, **options)
            backend = kb.settings.index.backend
        finally:
            kb.close()
    out.print(f"reindexed {count} chunks ({backend} index)")


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="Print JSON")) -> None:
    """Counts of documents, chunks and versions, and where the index stands."""
    with _errors(as_json):
        kb = _open()
        info = kb.status()
        kb.close()
    if as_json:
        _print_json(info)
    else:
        for key, value in _flat(info):
            out.print(f"{key}: {value}", markup=False)


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
def docs_list(as_json: bool = typer.Option(False, "--json", help="Print JSON")) -> None:
    """List documents with their roles, version and chunk count."""
    with _errors(as_json):
        kb = _open()
        docs = kb.documents()
        kb.close()
    if as_json:
        _print_json([_doc_dict(d) for d in docs])
        return
    table = Table(title=f"{len(docs)} documents")
    for column in ("doc_id", "title", "source", "roles", "version", "chunks", "chunker"):
        table.add_column(column, overflow="fold")
    for d in docs:
        table.add_row(d.doc_id, d.title, d.source, ",".join(d.roles), str(d.version),
                      str(d.chunk_count), d.chunker)
    out.print(table, markup=False)


@docs_app.command("show")
def docs_show(
    doc_id: str, as_json: bool = typer.Option(False, "--json", help="Print JSON")
) -> None:
    """Show a document's metadata and its chunks with line ranges."""
    with _errors(as_json):
        kb = _open()
        doc = kb.document(doc_id)
        chunks = kb.chunks(doc_id)
        kb.close()
    if as_json:
        _print_json({**_doc_dict(doc), "positions": _position_runs(doc),
                     "chunks": [to_json(c) for c in chunks]})
        return
    for key, value in _doc_dict(doc).items():
        out.print(f"{key}: {value}", markup=False)
    _print_positions(_position_runs(doc))
    for c in chunks:
        heading = f" [{c.heading}]" if c.heading else ""
        where = "".join(f" {k} {v}" for k, v in (("page", c.page), ("slide", c.slide)) if v)
        out.print(f"\n{c.chunk_id} lines {c.line_start}-{c.line_end}{where}{heading}",
                  markup=False)
        out.print(c.text, markup=False)


@docs_app.command("rm")
def docs_rm(doc_ids: list[str]) -> None:
    """Remove documents (and their chunks) from the knowledge base."""
    with _errors(False):
        kb = _open()
        try:
            for doc_id in doc_ids:
                kb.delete(doc_id)
                out.print(f"removed {doc_id}", markup=False)
        finally:
            kb.close()


def _print_roles_notes(report: Any) -> None:
    """Say how many documents got the default roles, and which files no roles rule
    covered: both are how a document ends up readable by more people than meant."""
    if report.defaulted_roles:
        out.print(f"default roles ({', '.join(report.default_roles)}) given to "
                  f"{report.defaulted_roles} documents that name none", markup=False)
    unmatched = report.no_rule_matched
    if unmatched:
        shown = ", ".join(unmatched[:10]) + (f" and {len(unmatched) - 10} more"
                                             if len(unmatched) > 10 else "")
        out.print(f"no rule in roles.toml matched {len(unmatched)} files: {shown}",
                  markup=False)


def _print_parser_counts(parsers: dict[str, dict[str, int]]) -> None:
    """One line per parser: how many files it read and chunks were written from them."""
    for name, counts in sorted(parsers.items()):
        out.print(f"  {name}: {counts['files']} files, {counts['chunks']} chunks", markup=False)


def _position_runs(d: Any) -> dict[str, list[dict[str, int]]]:
    from glassrag.parsers import position_runs

    return position_runs(d.positions, d.line_offset)


def _print_positions(runs: dict[str, list[dict[str, int]]]) -> None:
    """The position map as runs: ``page 2: lines 14-30``."""
    for key, spans in runs.items():
        out.print(f"positions ({key}):", markup=False)
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


@contextmanager
def _progress(label: str) -> Iterator[Any]:
    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=err, transient=True, disable=not err.is_terminal)
    with bar:
        task = bar.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield tick


@app.command()
def demo() -> None:
    """The seed workshop's four steps on the bundled examples, in a temporary knowledge base."""
    from glassrag.eval.demo import run_demo

    with _errors(False):
        ok = run_demo(lambda line: out.print(line, markup=False))
    if not ok:
        raise typer.Exit(EXIT_FAILED)


# -- server, tokens, MCP -------------------------------------------------------------------
tokens_app = typer.Typer(help="Bearer tokens for glassrag serve and glassrag mcp.",
                         no_args_is_help=True)
app.add_typer(tokens_app, name="tokens")


# The other command groups register themselves on `app` when imported; kept in their own
# modules so each stays readable.
from glassrag.interfaces.cli import answers as cli_answers  # noqa: E402,F401
from glassrag.interfaces.cli import server as cli_server  # noqa: E402,F401


def main(argv: list[str] | None = None) -> None:
    app(args=argv, prog_name="glassrag")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])

