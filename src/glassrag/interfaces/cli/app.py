"""The ``glassrag`` typer app and what its command modules share: the consoles, the exit
codes, the options every command spells the same way, and the one error shape.

Command modules (:mod:`.main`, :mod:`.answers`, :mod:`.server`) import this module and
register their commands on :data:`app`; nothing here imports them, so the imports point one
way.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text
from typer.core import TyperGroup

from glassrag.errors import GlassragError, InvalidInput, NotFound
from glassrag.kb import KnowledgeBase, resolve_kb_path
from glassrag.records import Mode, Principal, to_json

# Exit codes: 0 ok, 1 something failed (e.g. a file in an ingest), 2 bad input,
# 3 not found (knowledge base, document, trace).
EXIT_FAILED, EXIT_INVALID, EXIT_NOT_FOUND = 1, 2, 3
KB_HELP = ("Knowledge base directory, before or after the command [default: $GLASSRAG_KB or "
           "./.glassrag]")


class State:
    kb_path: Path | None = None


state = State()

# Nothing printed is read as Rich markup: "[dense] embedder" in a message, a document
# titled "[draft] ..." in a table, stay as they are.
out = Console(highlight=False, soft_wrap=True, markup=False)
err = Console(stderr=True, highlight=False, markup=False)


def _usage_error_types() -> tuple[type[Exception], ...]:
    """The exceptions of a command-line parse error: typer's own (it carries a copy of
    click since 0.29) and click's (older typer)."""
    found: list[type[Exception]] = []
    if hasattr(typer, "TyperException"):
        found.append(typer.TyperException)
    try:
        import click
    except ImportError:  # pragma: no cover - typer without click
        pass
    else:
        found.append(click.ClickException)
    return tuple(found)


USAGE_ERRORS = _usage_error_types()


def _before_separator(args: list[str]) -> list[str]:
    return args[: args.index("--")] if "--" in args else args


def _json_requested(args: list[str]) -> bool:
    """Whether ``--json`` was given as an option (not as an argument after ``--``)."""
    return "--json" in _before_separator(args)


def kb_first(args: list[str]) -> list[str]:
    """``args`` with every ``--kb PATH`` (or ``--kb=PATH``) moved to the front, where the
    root command reads it: ``glassrag ingest --kb PATH ...`` works as
    ``glassrag --kb PATH ingest ...`` does. Nothing after ``--`` moves; a ``--kb`` with no
    value left is given alone, for the root to say it needs one."""
    head = _before_separator(args)
    rest = args[len(head):]
    moved: list[str] = []
    kept: list[str] = []
    i = 0
    while i < len(head):
        arg = head[i]
        if arg == "--kb":
            if i + 1 == len(head):
                return ["--kb"]
            moved += head[i:i + 2]
            i += 2
            continue
        (moved if arg.startswith("--kb=") else kept).append(arg)
        i += 1
    return moved + kept + rest


def usage_error(exc: Exception) -> InvalidInput:
    """A command-line parse error as the engine's error, naming the option or argument."""
    field: str | None = getattr(exc, "option_name", None)  # an unknown option
    param: Any = getattr(exc, "param", None)  # a bad or missing value
    if field is None and param is not None:  # an option by its flag, an argument by name
        opts = getattr(param, "opts", None) or []
        is_option = getattr(param, "param_type_name", "") == "option" and opts
        field = max(opts, key=len) if is_option else getattr(param, "name", None)
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    return InvalidInput(message, **({"field": field} if field else {}))


class GlassragGroup(TyperGroup):
    """The root command. It takes ``--kb`` after the subcommand too, and under ``--json``
    prints a command-line parse error as the one JSON error shape on stdout (exit 2)
    instead of text on stderr."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        as_json = _json_requested(argv)
        argv = kb_first(argv)
        extra["windows_expand_args"] = windows_expand_args
        if not as_json:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except USAGE_ERRORS as exc:
            print(json.dumps(usage_error(exc).to_dict(detail=True), ensure_ascii=False))
            code = getattr(exc, "exit_code", EXIT_INVALID)
        except typer.Abort:
            err.print("Aborted!")
            code = EXIT_FAILED
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def sub_app(help_text: str) -> typer.Typer:
    """A command group (``glassrag docs ...``), with the root's settings."""
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode=None)


app = typer.Typer(
    cls=GlassragGroup,
    help="glassrag: a glass-box RAG engine. Permission-aware search with visible scores.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help texts are plain text: "[default: [server] setting]" keeps its "[server]".
    rich_markup_mode=None,
)
docs_app = sub_app("List, show and delete documents.")
app.add_typer(docs_app, name="docs")
traces_app = sub_app("List the traces of past questions.")
app.add_typer(traces_app, name="traces")
llm_app = sub_app("Check the model endpoint used by ask --llm.")
app.add_typer(llm_app, name="llm")
tokens_app = sub_app("Bearer tokens for glassrag serve and glassrag mcp.")
app.add_typer(tokens_app, name="tokens")


@app.callback()
def _root(kb: Path | None = typer.Option(None, "--kb", metavar="PATH", help=KB_HELP)) -> None:
    state.kb_path = kb


# Options shared by the commands: one definition, the same flag and help everywhere.
ROLE_OPTION = typer.Option(
    [], "--role", help="A role of the asking principal (repeatable; comma lists ok)")
MODE_OPTION = typer.Option(None, help=" | ".join(Mode))
TERMS_OPTION = typer.Option([], "--terms", help="Explicit keywords (1-5); mode terms")
EMBEDDER_OPTION = typer.Option(
    None, "--embedder", help="st:NAME_OR_PATH | openai:MODEL | hash:DIM (dense, hybrid)"
)
RERANK_OPTION = typer.Option(None, help="lexical | cross:PATH")
JSON_OPTION = typer.Option(False, "--json", help="Print JSON")
# The old spelling of --role where a command took --roles; hidden, still accepted.
ROLES_ALIAS = typer.Option([], "--roles", hidden=True)


def split_roles(*values: Sequence[str]) -> list[str]:
    """Roles from repeated and comma-separated ``--role`` values, in order, once each."""
    return list(dict.fromkeys(r.strip() for vs in values for v in vs for r in v.split(",")
                              if r.strip()))


def exit_code(exc: GlassragError) -> int:
    if isinstance(exc, NotFound):
        return EXIT_NOT_FOUND
    if isinstance(exc, InvalidInput):
        return EXIT_INVALID
    return EXIT_FAILED


def print_error(message: str) -> None:
    """``error: MESSAGE`` on stderr, the message as it is (never read as markup)."""
    err.print(Text.assemble(("error:", "red"), " ", message))


@contextmanager
def handle_errors(as_json: bool) -> Iterator[None]:
    """Turn engine errors into the one JSON error shape (``--json``, on stdout) or an
    ``error:`` line on stderr, and an exit code."""
    try:
        yield
    except GlassragError as exc:
        if as_json:
            print(json.dumps(exc.to_dict(detail=True), ensure_ascii=False))
        else:
            print_error(exc.message)
        raise typer.Exit(exit_code(exc)) from None


def open_kb(create: bool = False) -> KnowledgeBase:
    return KnowledgeBase.open(resolve_kb_path(state.kb_path), create=create)


def cli_principal(roles: Sequence[str] | None) -> Principal:
    """The principal of a command: ``cli`` with the ``--role`` roles (plus public)."""
    return Principal("cli", roles=split_roles(roles or ()))


def note_unknown_roles(kb: KnowledgeBase, roles: Sequence[str]) -> None:
    """Say on stderr which ``--role`` values no document carries: a mistyped role
    (``employe``) otherwise silently gives no access. The CLI is run by whoever holds the
    knowledge base, so naming its roles tells them nothing new."""
    asked = [r for r in split_roles(roles) if r != "public"]
    if not asked:
        return
    with kb.lock:
        carried = {r for roles_of in kb.store.rolesets().values() for r in roles_of}
    for role in asked:
        if role not in carried:
            err.print(f"note: no document has the role {role!r}")


def print_json(value: Any) -> None:
    print(json.dumps(to_json(value), ensure_ascii=False, indent=2))


@contextmanager
def progress_bar(label: str) -> Iterator[Any]:
    """A progress bar on stderr (when it is a terminal); yields ``tick(done, total)``."""
    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=err, transient=True, disable=not err.is_terminal)
    with bar:
        task = bar.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield tick
