"""Text and Markdown views of a :class:`glassrag.eval.docs_judge.DocsEvalReport`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassrag.records import DENSE_MODES

if TYPE_CHECKING:
    from glassrag.eval.docs_judge import DocsEvalReport

#: (column title, rate key, format) of the tables.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("answered", "answered_correct", "rate"),
    ("cited", "cited_correct", "rate"),
    ("both", "both_correct", "rate"),
    ("false_ref", "false_refusal", "rate"),
    ("no_evid", "no_evidence", "rate"),
    ("gold@5", "gold_in_top5", "rate"),
    ("len_p50", "answer_chars_p50", "int"),
    ("len_p90", "answer_chars_p90", "int"),
    ("ask_ms", "ask_ms_p50", "ms"),
)
#: Characters of a failure's answer shown in the text view (JSON has it whole).
SHOWN_ANSWER = 300
#: Files that failed to ingest listed per knowledge base in the text view.
SHOWN_FAILED = 5


def _cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "rate":
        return f"{value:.2f}"
    if kind == "ms":
        return f"{value:.1f}"
    return f"{value:.0f}"


def table_rows(report: DocsEvalReport) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(grouping, name, rates)`` in print order: overall, then corpus, lang and kind."""
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    for grouping, groups in report.groups.items():
        for name, figures in groups.items():
            out.append((grouping, name, figures))
    return out


def report_lines(report: DocsEvalReport, failures: int | None = 20) -> list[str]:
    o = report.overall
    s = report.settings
    dense = f", embedder {s.get('embedder')}, min_score {s.get('min_score')}" \
        if report.mode in DENSE_MODES else ""
    lines = [f"questions: {o['n_answerable'] + o['n_unanswerable']} ({o['n_answerable']} "
             f"answerable, {o['n_unanswerable']} unanswerable); mode {report.mode}, "
             f"min_coverage {s.get('min_coverage')}{dense}"]
    for build in report.builds:
        where = build.folder or build.kb_path
        failed = f", {len(build.failed)} files failed" if build.failed else ""
        name = build.name or Path(where).name
        lines.append(f"knowledge base {name}: {where} ({build.documents} "
                     f"documents, {build.chunks} chunks{failed})")
        lines += [f"  failed: {f['path']}: {f['error']}" for f in build.failed[:SHOWN_FAILED]]
        if len(build.failed) > SHOWN_FAILED:
            lines.append(f"  … and {len(build.failed) - SHOWN_FAILED} more (--json lists all)")
    head = f"{'group':<24} {'n_ans':>5} {'n_una':>5} " + " ".join(
        f"{title:>9}" for title, _, _ in COLUMNS)
    lines += ["", head, "-" * len(head)]
    for grouping, name, figures in table_rows(report):
        label = "overall" if grouping == "overall" else f"{grouping} {name}"
        lines.append(f"{label[:24]:<24} {figures['n_answerable']:>5} "
                     f"{figures['n_unanswerable']:>5} " + " ".join(
                         f"{_cell(figures[key], kind):>9}" for _, key, kind in COLUMNS))
    found = report.failures()
    shown = found if failures is None else found[:max(failures, 0)]
    lines += ["", f"failures: {len(found)}" + (f" (first {len(shown)} shown; --json has all)"
                                              if len(shown) < len(found) else "")]
    for row in shown:
        lines += failure_lines(row)
    return lines


def failure_lines(row: Mapping[str, Any]) -> list[str]:
    """A failure: the question, what came back, what was expected, the top hits."""
    answer = row["answer"].replace("\n", " ")
    if len(answer) > SHOWN_ANSWER:
        answer = answer[:SHOWN_ANSWER] + "…"
    checks = []
    if row["answerable"]:
        checks = [f"{key}={'yes' if row[key] else 'no'}"
                  for key in ("answered_correct", "cited_correct", "gold_in_top5")]
    out = [" ".join([f"- {row['id']} [{row['kind']}] status {row['status']}", *checks]),
           f"    question: {row['question']}"]
    if row["error"]:
        out.append(f"    error: {row['error']}")
    if answer:
        out.append(f"    answer: {answer}")
    if row["citations"]:
        out.append("    cited: " + ", ".join(_where(c) for c in row["citations"]))
    if row["answerable"]:
        golds = " | ".join(row["expected"])
        spans = ", ".join(f"{e['path']}:{e['line_start']}-{e['line_end']}"
                          for e in row["evidence"])
        out.append(f"    expected: {golds} at {spans}")
    else:
        out.append("    expected: no_evidence")
    if row["top_hits"]:
        out.append("    top hits: " + ", ".join(_where(h) for h in row["top_hits"]))
    return out


def _where(item: Mapping[str, Any]) -> str:
    return f"{item['source']}:{item['line_start']}-{item['line_end']}"


def markdown(report: DocsEvalReport, groupings: Sequence[str] = ("overall", "corpus", "kind"),
             ) -> list[str]:
    """The rates as a Markdown table (for ``benchmarks/RESULTS.md``)."""
    titles = ["group", "n ans", "n una", *(t for t, _, _ in COLUMNS)]
    out = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    for grouping, name, f in table_rows(report):
        if grouping not in groupings:
            continue
        label = "**overall**" if grouping == "overall" else f"{grouping} {name}"
        cells = [label, str(f["n_answerable"]), str(f["n_unanswerable"]),
                 *(_cell(f[key], kind) for _, key, kind in COLUMNS)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _figures(row: Mapping[str, Any]) -> str:
    return "  ".join(f"{name} {_cell(row.get(key), 'rate')}" for name, key in (
        ("answered", "answered_correct"), ("cited", "cited_correct"),
        ("false_ref", "false_refusal"), ("no_evid", "no_evidence")))


def _pair(row: Mapping[str, Any]) -> str:
    cosine = "" if row.get("min_score") is None else f", [dense] min_score {row['min_score']}"
    return f"[answer] min_coverage {row['min_coverage']}{cosine}"


def _gate(row: dict[str, Any]) -> str:
    return f"min_margin {row['min_margin']}, min_quote_cosine {row['min_quote_cosine']}"


def calibration_lines(report: Any) -> list[str]:
    """The recommendation, today's thresholds for comparison, and the sweep around it."""
    n = len(report.signals)
    lines = [f"calibration: {n} questions, mode {report.mode}"
             + (f", embedder {report.embedder}" if report.embedder else "")
             + f", false-refusal target {report.false_refusal_rate:.2f}"]
    if not report.reachable:
        lines.append("the target cannot be met: the fewest false refusals any thresholds "
                     "give is shown")
    lines += [f"recommended: {_pair(report.recommended)}",
              f"  would score: {_figures(report.recommended)}",
              f"current:     {_pair(report.current)}",
              f"  scores:      {_figures(report.current)}"]
    if not report.exact:
        lines.append("hybrid figures are estimates (the dense cut-off also changes the fused "
                     "candidates): confirm with `glassrag eval … --min-coverage T --min-score M`")
    lines += ["", "min_coverage sweep" + (f" (min_score {report.recommended['min_score']})"
                                          if report.embedder else "")]
    lines += [f"  {row['min_coverage']:>6.3f}  {_figures(row)}"
              for row in report.coverage_curve[::2]]
    if report.cosine_curve:
        lines += ["", f"min_score sweep (min_coverage {report.recommended['min_coverage']})"]
        step = max(len(report.cosine_curve) // 25, 1)
        lines += [f"  {row['min_score']:>6.3f}  {_figures(row)}"
                  for row in report.cosine_curve[::step]]
    if report.gate_recommended is not None:
        lines += ["", "dense gate (refuse when the margin is under min_margin and the quote's "
                  "cosine under min_quote_cosine)",
                  f"recommended: {_gate(report.gate_recommended)}",
                  f"  would score: {_figures(report.gate_recommended)}",
                  f"current:     {_gate(report.gate_current)}",
                  f"  scores:      {_figures(report.gate_current)}",
                  f"min_quote_cosine sweep (min_margin {report.gate_recommended['min_margin']})"]
        step = max(len(report.gate_curve) // 25, 1)
        lines += [f"  {row['min_quote_cosine']:>6.3f}  {_figures(row)}"
                  for row in report.gate_curve[::step]]
    errors = [s for s in report.signals if s["error"]]
    if errors:
        lines += ["", f"questions that failed ({len(errors)}; counted as not answered):"]
        lines += [f"  {s['id']}: {s['error']}" for s in errors]
    return lines
