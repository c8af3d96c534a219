"""The ``glassrag`` commands about answers: ask, inspect, trace, traces, llm check,
evaluate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from glassrag.errors import InvalidInput
from glassrag.interfaces.cli.app import (
    EMBEDDER_OPTION,
    EXIT_FAILED,
    JSON_OPTION,
    MODE_OPTION,
    RERANK_OPTION,
    ROLE_OPTION,
    TERMS_OPTION,
    app,
    cli_principal,
    handle_errors,
    llm_app,
    note_unknown_roles,
    open_kb,
    out,
    print_json,
    progress_bar,
    state,
    traces_app,
)
from glassrag.records import Fusion

# Shared by ask and inspect: the same flag, default rule and help in both.
REWRITE_OPTION = typer.Option(
    None, "--rewrite/--no-rewrite", help="Ask the model for a search query first and "
    "search with both (only with a model) [default: [llm] rewrite_query]",
)


@app.command()
def ask(
    question: str = typer.Argument(..., help="The question"),
    role: list[str] = ROLE_OPTION,
    top_k: int | None = typer.Option(None, "--top-k", help="Evidence chunks [default: 5]"),
    mode: str | None = MODE_OPTION,
    terms: list[str] = TERMS_OPTION,
    as_json: bool = JSON_OPTION,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the evidence and the exact model request; no trace"
    ),
    llm: str | None = typer.Option(
        None, "--llm", help="Answer with a model profile: openai, openai-responses, deepseek, "
        "ollama, vllm, llamacpp [default: the [llm] settings, else extractive]",
    ),
    embedder: str | None = EMBEDDER_OPTION,
    rerank: str | None = RERANK_OPTION,
    rewrite: bool | None = REWRITE_OPTION,
) -> None:
    """Answer from permitted evidence with verified citations, or say why not."""
    with handle_errors(as_json):
        kb = open_kb()
        try:
            note_unknown_roles(kb, role)
            if dry_run:
                print_json(kb.dry_run(question, principal=cli_principal(role), top_k=top_k,
                                       mode=mode, terms=terms or None, llm=llm,
                                       embedder=embedder, rerank=rerank, rewrite=rewrite))
                return
            answer = kb.ask(question, principal=cli_principal(role), top_k=top_k, mode=mode,
                            terms=terms or None, llm=llm, embedder=embedder, rerank=rerank,
                            rewrite=rewrite)
        finally:
            kb.close()
    if as_json:
        print_json(answer)
        return
    out.print(f"status: {answer.status}", markup=False)
    out.print(f"answer: {answer.answer}", markup=False)
    if answer.citations:
        out.print("citations:", markup=False)
    for n, c in enumerate(answer.citations, start=1):
        page = f" page {c.page}" if c.page is not None else ""
        page += f" [{c.heading}]" if c.heading else ""
        out.print(f"  [{n}] {c.source}{page} lines {c.line_start}-{c.line_end} "
                  f"({c.chunk_id}, version {c.doc_version}): {c.quote}", markup=False)
    out.print(f"trace_id: {answer.trace_id}", markup=False)


@app.command()
def inspect(
    question: str = typer.Argument(..., help="The question"),
    role: list[str] = ROLE_OPTION,
    top_k: int | None = typer.Option(None, "--top-k", help="How many get selected"),
    mode: str | None = MODE_OPTION,
    terms: list[str] = TERMS_OPTION,
    as_json: bool = JSON_OPTION,
    embedder: str | None = EMBEDDER_OPTION,
    rerank: str | None = RERANK_OPTION,
    llm: str | None = typer.Option(
        None, "--llm", help="The model profile that rewrites the query (with --rewrite); "
        "inspect never asks for an answer [default: the [llm] settings]",
    ),
    rewrite: bool | None = REWRITE_OPTION,
) -> None:
    """Every candidate ranked: score, per-term contributions, lines, selected or not and why.
    With --rewrite the model's search query is ranked too, as ask would."""
    with handle_errors(as_json):
        kb = open_kb()
        try:
            note_unknown_roles(kb, role)
            view = kb.inspect(question, principal=cli_principal(role), top_k=top_k, mode=mode,
                              terms=terms or None, embedder=embedder, rerank=rerank, llm=llm,
                              rewrite=rewrite)
        finally:
            kb.close()
    if as_json:
        print_json(view)
        return
    table = Table(title=f"{len(view['candidates'])} candidates ({view['mode']}, "
                        f"top_k {view['top_k']})")
    for column in ("#", "score", "chunk_id", "lines", "matched", "contributions", "selected",
                   "why"):
        table.add_column(column, overflow="fold")
    for row in view["candidates"]:
        contributions = ", ".join(f"{t}={v:.3f}" for t, v in row["contributions"].items())
        table.add_row(str(row["rank"]), f"{row['score']:.3f}", row["chunk_id"],
                      f"{row['line_start']}-{row['line_end']}", ", ".join(row["matched_terms"]),
                      contributions, "yes" if row["selected"] else "no", row["why"])
    out.print(table, markup=False)
    out.print(f"rewrite: {_rewrite_line(view['rewrite'])}", markup=False)
    out.print(f"query terms: {', '.join(view['query_terms'])}", markup=False)
    out.print(f"selected_ids: {', '.join(view['selected_ids']) or 'none'}", markup=False)
    if view["blocked_count"]:
        out.print(f"matching chunks you may not read: {view['blocked_count']}")


@app.command()
def trace(
    trace_id: str = typer.Argument(..., help="A trace id from ask"),
    as_json: bool = JSON_OPTION,
    export: Path | None = typer.Option(
        None, "--export", help="Write the run records (JSON files) into this directory"
    ),
) -> None:
    """Show a trace: question, candidates, evidence versions, verdicts, answer, timings."""
    with handle_errors(as_json):
        kb = open_kb()
        try:
            if export is not None:
                for path in kb.export_trace(trace_id, export):
                    out.print(str(path), markup=False)
                return
            body = kb.trace(trace_id)
        finally:
            kb.close()
    if as_json:
        print_json(body)
        return
    out.print(f"trace_id: {body['trace_id']}  ({body['created_at']})", markup=False)
    p = body["principal"]
    out.print(f"principal: {p['principal_id']} roles={','.join(p['roles'])}", markup=False)
    out.print(f"question: {body['question']}", markup=False)
    if body.get("rewrite"):  # traces written before query rewriting have none
        out.print(f"rewrite: {_rewrite_line(body['rewrite'])}", markup=False)
    out.print(f"settings: {json.dumps(body['settings'], ensure_ascii=False)}", markup=False)
    out.print(f"permitted_count: {body['permitted_count']}  "
              f"blocked_count: {body['blocked_count']}", markup=False)
    for c in body["candidates"]:
        tag = "permitted" if c["permitted"] else "BLOCKED"
        out.print(f"  candidate {c['chunk_id']} score={c['score']:.3f} {tag} "
                  f"lines {c['line_start']}-{c['line_end']}", markup=False)
    for e in body["evidence"]:
        out.print(f"  evidence {e['chunk_id']} {e['source']} v{e['doc_version']} "
                  f"sha256:{e['content_hash'][:12]}", markup=False)
    out.print(f"status: {body['status']} (reported: {body['reported_status']})", markup=False)
    out.print(f"answer: {body['answer']}", markup=False)
    out.print(f"verification: {'ok' if body['verification']['ok'] else 'FAILED'} "
              f"{'; '.join(body['verification']['problems'])}", markup=False)
    out.print(f"timings_ms: {json.dumps(body['timings_ms'])}", markup=False)


def _rewrite_line(stage: dict[str, Any]) -> str:
    """One line for the trace's rewrite stage: what was searched and why."""
    status = stage["status"]
    if status == "skipped":
        return f"skipped ({stage['skipped_reason']})"
    if status == "off":
        return "off"
    by = ", ".join(str(x) for x in (stage["rewriter"], stage["model"]) if x)
    took = f", {stage['latency_ms']:.1f} ms" if stage.get("latency_ms") is not None else ""
    if status == "failed":
        return f"failed ({by}{took}): {stage['error']}; the question was searched as asked"
    return f"{status} ({by}{took}): {json.dumps(stage['rewritten_query'], ensure_ascii=False)}"


@traces_app.command("list")
def traces_list(
    limit: int = typer.Option(20, help="How many, newest first"),
    as_json: bool = JSON_OPTION,
) -> None:
    """The most recent traces."""
    with handle_errors(as_json):
        kb = open_kb()
        rows = kb.traces(limit=limit)
        kb.close()
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"{len(rows)} traces")
    for column in ("trace_id", "created_at", "principal", "status", "question"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(r["trace_id"], r["created_at"], r["principal_id"], r["status"],
                      r["question"])
    out.print(table, markup=False)


@llm_app.command("check")
def llm_check(
    llm: str | None = typer.Option(None, "--llm", help="Profile [default: the [llm] settings]"),
    all_modes: bool = typer.Option(False, "--all", help="Try every structured-output mode"),
) -> None:
    """Send one tiny request and report what the endpoint supports."""
    from glassrag.llm.client import check
    from glassrag.settings import Settings, load_settings, resolve_kb_path

    with handle_errors(True):
        kb_dir = resolve_kb_path(state.kb_path)
        settings = load_settings(kb_dir) if kb_dir.exists() else Settings()
        report = check(settings.llm.with_profile(llm), all_modes=all_modes)
    print_json(report)
    if not report.get("ok"):
        raise typer.Exit(EXIT_FAILED)


@app.command(name="evaluate")
def evaluate_command(
    cases: Path | None = typer.Argument(
        None, help="Case file (.yaml or .jsonl), or question file (.jsonl or .yaml with "
        "answerable, answers, evidence)"),
    docs: Path | None = typer.Option(
        None, "--docs", help="Questions: build the knowledge base from this folder "
        "(kept in the global --kb if given) [default: ask the current knowledge base]"),
    calibrate: bool = typer.Option(
        False, "--calibrate", help="Questions: recommend no_evidence thresholds instead"),
    false_refusal_rate: float = typer.Option(
        0.1, "--false-refusal-rate", help="--calibrate: the most answerable questions "
        "that may be refused"),
    min_coverage: float | None = typer.Option(
        None, "--min-coverage", help="Questions: [answer] min_coverage for this run"),
    min_score: float | None = typer.Option(
        None, "--min-score", help="Questions: [dense] min_score for this run"),
    no_evidence_rate: float | None = typer.Option(
        None, "--no-evidence-rate", help="--calibrate: also refuse at least this share of "
        "the unanswerable questions, and then answer the most questions correctly"),
    min_margin: float | None = typer.Option(
        None, "--min-margin", help="Questions: [dense] min_margin for this run"),
    min_quote_cosine: float | None = typer.Option(
        None, "--min-quote-cosine", help="Questions: [dense] min_quote_cosine for this run"),
    failures: int = typer.Option(20, "--failures", help="Questions: failures to print"),
    role: list[str] = ROLE_OPTION,
    qa: Path | None = typer.Option(None, "--qa", help="A QA set in BEIR layout"),
    beir: Path | None = typer.Option(None, "--beir", help="A retrieval set in BEIR layout"),
    mode: str | None = MODE_OPTION,
    embedder: str | None = typer.Option(None, "--embedder", help="For dense and hybrid"),
    split: str = typer.Option("test", help="--beir: the qrels split"),
    compare: str | None = typer.Option(
        None, help="--beir: a second configuration, e.g. 'hybrid,fusion=weighted'"
    ),
    rerank: str | None = typer.Option(None, help="--beir: lexical | cross:PATH"),
    fusion: str | None = typer.Option(None, help=f"--beir, hybrid: {' | '.join(Fusion)}"),
    top_k: int | None = typer.Option(None, "--top-k", help="Evidence chunks per question"),
    limit: int | None = typer.Option(None, help="--qa/--beir: only the first N questions"),
    as_json: bool = JSON_OPTION,
    as_roles: str | None = typer.Option(
        None, "--as-roles", help="Cases: ask each once per role set, e.g. "
        "'public;employee;employee,finance', and print the matrix of statuses"),
) -> None:
    """Run behavioural cases (PASS/FAIL, passed: N/M), questions about your documentation
    (QUESTIONS.jsonl [--docs DIR]: answered and cited correctly, false refusals, no_evidence
    on unanswerable questions, gold passage in the top 5; --calibrate: the thresholds to use),
    a QA benchmark (--qa DIR) or a retrieval benchmark (--beir DIR: nDCG@10, recall@100,
    MRR@10). --docs, --qa and --beir build a temporary knowledge base, or keep and reuse the
    one given with the global --kb."""
    from glassrag.eval.cases import load_cases, run_cases
    from glassrag.eval.docs_questions import is_question_file
    from glassrag.eval.qa import run_qa

    if as_roles is not None:
        from glassrag.interfaces.cli.over_time import eval_role_matrix

        return eval_role_matrix(cases, as_roles, as_json)
    with handle_errors(as_json):
        if sum(x is not None for x in (cases, qa, beir)) != 1:
            raise InvalidInput("give one of: a case file, a question file, --qa DIR, "
                               "--beir DIR")
        if cases is None and (docs is not None or calibrate):
            raise InvalidInput("--docs and --calibrate need a question file",
                               field="--docs" if docs is not None else "--calibrate")
    report: Any
    if cases is not None and (docs is not None or calibrate or is_question_file(cases)):
        options = {"mode": mode, "embedder": embedder, "top_k": top_k,
                   "principal": cli_principal(role) if role else None}
        with handle_errors(as_json):
            _eval_docs(cases, docs, calibrate, false_refusal_rate, options,
                       {"min_coverage": min_coverage, "min_score": min_score,
                        "min_margin": min_margin, "min_quote_cosine": min_quote_cosine},
                       failures, as_json, no_evidence_rate)
        return
    with handle_errors(as_json):
        if beir is not None:
            first = {"mode": mode or "bm25", "embedder": embedder, "rerank": rerank,
                     "fusion": fusion}
            _eval_beir(beir, first, split, compare, limit, as_json)
            return
        if qa is not None:
            with progress_bar("asking") as tick:
                report = run_qa(qa, mode=mode or "bm25", top_k=top_k, limit=limit,
                                progress=tick, kb_path=state.kb_path)
            ok = True
        else:
            kb = open_kb()
            try:
                case_list = load_cases(cases)  # type: ignore[arg-type]
                with progress_bar("evaluating") as tick:
                    report = run_cases(kb, case_list, progress=tick)
            finally:
                kb.close()
            ok = report.passed == report.total
    if as_json:
        print_json(report)
    else:
        for line in report.lines():
            out.print(line, markup=False)
    if not ok:
        raise typer.Exit(EXIT_FAILED)


app.command(name="eval", hidden=True)(evaluate_command)  # the old name, still accepted


def _eval_beir(directory: Path, first: dict[str, Any], split: str, compare: str | None,
               limit: int | None, as_json: bool) -> None:
    """``first`` is the configuration (mode, embedder, rerank, fusion); ``compare`` a second
    one, which takes only the embedder from the first."""
    from glassrag.eval.beir import compare as side_by_side
    from glassrag.eval.beir import parse_spec, run_beir, run_pair

    embedder = first["embedder"]
    # Only an explicit --kb is used ($GLASSRAG_KB or ./.glassrag may be someone's real one).
    common: dict[str, Any] = {"split": split, "limit": limit, "kb_path": state.kb_path}
    with progress_bar("retrieving") as tick:
        if compare is None:
            reports = [run_beir(directory, progress=tick, **common, **first)]
        else:
            second = {"embedder": embedder, **parse_spec(compare)}
            reports = list(run_pair(directory, first, second, progress=tick, **common))
    if as_json:
        print_json([r.to_dict() for r in reports])
    else:
        lines = reports[0].lines() if len(reports) == 1 else side_by_side(*reports) + [
            f"{r.label}: {len(r.failed_queries)} queries failed (scored 0; --json lists them)"
            for r in reports if r.failed_queries]
        for line in lines:
            out.print(line, markup=False)
    if any(r.failed_queries for r in reports):  # figures printed, but not all queries ran
        raise typer.Exit(EXIT_FAILED)


def _eval_docs(questions_path: Path, docs: Path | None, calibrate: bool, target: float,
               options: dict[str, Any], thresholds: dict[str, float | None], failures: int,
               as_json: bool, no_evidence: float | None = None) -> None:
    """Questions about documentation: judged answers, or (``calibrate``) thresholds.
    Exits 1 when a question could not be asked (the others are still reported)."""
    from glassrag.eval.docs import run_docs_eval
    from glassrag.eval.docs_questions import load_questions
    from glassrag.eval.refusal_calibration import calibrate as run_calibration

    questions = load_questions(questions_path)
    overrides: dict[str, dict[str, float]] = {}
    for key, value in thresholds.items():
        if value is not None:
            overrides.setdefault("answer" if key == "min_coverage" else "dense", {})[key] = value
    if calibrate and overrides:
        raise InvalidInput("--calibrate sweeps the thresholds itself; drop --min-coverage, "
                           "--min-score, --min-margin and --min-quote-cosine",
                           field="--calibrate")
    # With --docs only an explicit --kb is written to; without it, the current one is read.
    kb = None if docs is not None else open_kb()
    where: dict[str, Any] = {"kb": kb} if kb is not None else {"kb_path": state.kb_path}
    try:
        with progress_bar("asking") as tick:
            if calibrate:
                report: Any = run_calibration(questions, docs, false_refusal_rate=target,
                                              no_evidence_rate=no_evidence,
                                              progress=tick, **where, **options)
            else:
                report = run_docs_eval(questions, docs, overrides=overrides, progress=tick,
                                       **where, **options)
    finally:
        if kb is not None:
            kb.close()
    if as_json:
        print_json(report)
    else:
        lines = report.lines() if calibrate else report.lines(failures=failures)
        for line in lines:
            out.print(line, markup=False)
    failed = [s for s in report.signals if s["error"]] if calibrate else report.errors
    if failed:
        raise typer.Exit(EXIT_FAILED)
