"""Leak probes: canaries planted in hidden documents, and many questions fired at them
through every interface, under both disclosure policies.

Each hidden document (roles ``hr`` or ``finance``) carries a unique canary in its doc_id,
its title, its source and twice in its text, next to ordinary words that also occur in the
public documents (so hidden chunks compete in every ranking). Questions are generated
from the canaries' own words, the ordinary words, the bundled examples' questions,
Chinese terms, and degenerate inputs. Every output a principal receives is searched:

- **canary leak**: any canary of a document the principal may not read. A canary the
  question itself contains is searched for in the output's values with the question's
  echo removed (``question``, ``query``, ``query_terms``, ``matched_terms``… and the
  question's text inside prompt bodies); every other canary in the raw output, keys too.
- **count leak** (``conceal`` only): a non-zero ``blocked_count``, the status
  ``blocked_by_permission``, or blocked candidates in a non-admin's trace.
- **existence leak**: ``GET /documents/{hidden id}`` (and ``/lines``) answering other
  than a missing id does.
- **score dependence** (``conceal``, Python API): the same search by the same principal
  gives different hits or scores with and without the hidden documents present. Reported
  on its own line: it is what issue 13 item 1 (BM25 statistics) is about.

A reader of ``hr`` is probed too, as a control: it must find its own canaries (else the
probes prove nothing). Interfaces: the Python API, the CLI (``--json``, in process through
typer's runner), HTTP (a real uvicorn server on 127.0.0.1: /search, /ask, /traces,
/documents, /lines) and MCP (a real ``glassrag mcp`` process over stdio per principal).
Only public interfaces are used, so the script does not depend on how scores are computed.

    python benchmarks/leak_probes.py [--questions 150] [--out benchmarks/out/leak_probes.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glassrag import KnowledgeBase, Principal
from glassrag.eval.examples import examples_dir

HIDDEN_ROLES = ("hr", "finance")
DOCS_PER_ROLE = 4
ORDINARY = ["refund", "days", "learners", "API", "key", "roadmap", "beta", "cafeteria", "menu",
            "garage", "parking", "budget", "salary", "review", "退款", "检索", "片段"]
ECHO_KEYS = {"question", "query", "query_terms", "question_terms", "terms", "matched_terms",
             "rewritten_query",
             "contributions"}
EXAMPLE_QUESTIONS = [
    "How many days do learners have for refunds?", "Where should I store the API key?",
    "What is the private beta roadmap for Q4?", "What is the cafeteria menu today?",
    "距离起飞不足4小时退票，退票费是多少？", "退款多久到账", "RAG 检索 片段",
]
DEGENERATE = ["the of and", "???", "a" * 300, "退", "refund " * 40, "Q4 Q4 Q4", "API-key"]


# -- the planted documents ---------------------------------------------------------------------
def hidden_docs() -> list[dict[str, Any]]:
    docs = []
    for role in HIDDEN_ROLES:
        for n in range(DOCS_PER_ROLE):
            tag = f"{role}{n}"
            docs.append({
                "doc_id": f"cnrydoc{tag}", "roles": [role],
                "title": f"Cnrytitle{tag} refund schedule",
                "source": f"vault/{role}/cnrysource{tag}.md",
                "text": f"{' '.join(ORDINARY)}. The cnrytext{tag} budget is confidential. "
                        f"Second line cnrytext{tag} and cnryextra{tag} salary review.",
            })
    return docs


def canaries(doc: dict[str, Any]) -> list[str]:
    tag = doc["doc_id"].removeprefix("cnrydoc")
    return [f"cnry{kind}{tag}" for kind in ("doc", "title", "source", "text", "extra")]


def forbidden(principal: Principal, docs: list[dict[str, Any]]) -> list[str]:
    return [c for d in docs if not principal.can_read(d["roles"]) for c in canaries(d)]


def questions(docs: list[dict[str, Any]], count: int, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    all_canaries = [c for d in docs for c in canaries(d)]
    out = list(EXAMPLE_QUESTIONS) + list(DEGENERATE) + all_canaries
    while len(out) < count:
        words = rng.sample(ORDINARY, rng.randint(1, 3))
        if rng.random() < 0.6:
            words.insert(rng.randrange(len(words) + 1), rng.choice(all_canaries))
        if rng.random() < 0.3:
            words.append(rng.choice(all_canaries).upper())
        out.append(("What is the " if rng.random() < 0.3 else "") + " ".join(words) + "?")
    return out[:count]


# -- checking one output -----------------------------------------------------------------------
@dataclass
class Tally:
    probes: Counter[str] = field(default_factory=Counter)
    canary: Counter[str] = field(default_factory=Counter)
    count: Counter[str] = field(default_factory=Counter)
    existence: Counter[str] = field(default_factory=Counter)
    control: Counter[str] = field(default_factory=Counter)  # a reader found its own canary
    examples: list[str] = field(default_factory=list)

    def leak(self, kind: str, interface: str, what: str) -> None:
        getattr(self, kind)[interface] += 1
        if len(self.examples) < 20:
            self.examples.append(f"{kind} via {interface}: {what}")


def _values(data: Any, probe: str) -> Iterator[str]:
    """Every string value outside the echo keys, with the probe's own text removed."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key not in ECHO_KEYS:
                yield from _values(value, probe)
    elif isinstance(data, list):
        for value in data:
            yield from _values(value, probe)
    elif isinstance(data, str):
        yield data.replace(probe, " ") if probe else data


def check(tally: Tally, interface: str, principal: Principal, probe: str, output: Any,
          docs: list[dict[str, Any]], conceal: bool) -> None:
    """Count one probe and any canary or count leak in its ``output`` (JSON or text)."""
    tally.probes[interface] += 1
    if isinstance(output, str):
        with suppress(ValueError):
            output = json.loads(output)
    raw = (json.dumps(output, ensure_ascii=False) if not isinstance(output, str)
           else output).casefold()
    echoed = probe.casefold()
    values = " ".join(_values(output, probe)).casefold() if not isinstance(output, str) \
        else raw.replace(echoed, " ")
    for canary in forbidden(principal, docs):
        seen = values if canary in echoed else raw
        if canary in seen:
            tally.leak("canary", interface, f"{canary} to {principal.principal_id} ({probe!r})")
    if principal.can_read(["hr"]) and any(c in raw.replace(echoed, " ") for d in docs
                                          if "hr" in d["roles"] for c in canaries(d)):
        tally.control[interface] += 1
    if conceal and not principal.admin and isinstance(output, dict):
        for problem in _count_problems(output):
            tally.leak("count", interface, f"{problem} to {principal.principal_id} ({probe!r})")


def _count_problems(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "blocked_count" and value:
                yield f"blocked_count {value}"
            elif key == "status" and value == "blocked_by_permission":
                yield "status blocked_by_permission"
            elif key == "permitted" and value is False:
                yield "a blocked candidate"
            else:
                yield from _count_problems(value)
    elif isinstance(data, list):
        for value in data:
            yield from _count_problems(value)


# -- the knowledge bases -----------------------------------------------------------------------
def build_kb(root: Path, disclosure: str, with_hidden: bool = True) -> Path:
    kb_dir = root / f"kb-{disclosure}{'' if with_hidden else '-public'}"
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        'disclosure = "disclose"', f'disclosure = "{disclosure}"'), encoding="utf-8")
    hidden = root / "hidden.jsonl"
    hidden.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in hidden_docs()),
                      encoding="utf-8")
    with KnowledgeBase.open(kb_dir) as kb:
        paths = [examples_dir(), *([hidden] if with_hidden else [])]
        report = kb.ingest(paths, exclude=["**/*.yaml", "README.md"])
        assert not report.failed, report.failed
    return kb_dir


PRINCIPALS = [Principal("probe-public"), Principal("probe-employee", ["employee"]),
              Principal("probe-hr", ["hr"]), Principal("probe-admin", admin=True)]


def _guarded(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The JSON of ``fn(*args, **kwargs)``, or its error as output (an error message must
    not leak either)."""
    from glassrag.errors import GlassragError

    try:
        result = fn(*args, **kwargs)
    except GlassragError as exc:
        return exc.to_dict()
    return result.to_dict() if hasattr(result, "to_dict") else result


# -- the interfaces ----------------------------------------------------------------------------
def probe_python(tally: Tally, kb_dir: Path, asked: list[str], docs: list[dict[str, Any]],
                 conceal: bool) -> None:
    with KnowledgeBase.open(kb_dir) as kb:
        for principal in PRINCIPALS:
            for q in asked:
                for mode in ("bm25", "overlap"):
                    out = _guarded(kb.search, q, principal=principal, top_k=50, mode=mode)
                    check(tally, "python", principal, q, out, docs, conceal)
                answer = _guarded(kb.ask, q, principal=principal, top_k=10)
                check(tally, "python", principal, q, answer, docs, conceal)
                if "trace_id" in answer:
                    trace = _guarded(kb.trace, answer["trace_id"], principal)
                    check(tally, "python", principal, q, trace, docs, conceal)
                for view in (kb.inspect, kb.dry_run):
                    check(tally, "python", principal, q, _guarded(view, q, principal=principal),
                          docs, conceal)
            listed = [d.doc_id + d.title + d.source for d in kb.documents(principal)]
            check(tally, "python", principal, "", listed, docs, conceal)


def score_dependence(kb_dir: Path, public_dir: Path, asked: list[str]) -> tuple[int, int]:
    """(searches compared, searches whose hits or scores differ) for non-admins, bm25."""
    compared = differ = 0
    with KnowledgeBase.open(kb_dir) as full, KnowledgeBase.open(public_dir) as bare:
        for principal in PRINCIPALS[:2]:
            for q in asked:
                a = _guarded(full.search, q, principal=principal, top_k=50)
                b = _guarded(bare.search, q, principal=principal, top_k=50)
                for out in (a, b):
                    if isinstance(out, dict):
                        out.pop("took_ms", None)
                compared += 1
                differ += json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)
    return compared, differ


def probe_cli(tally: Tally, kb_dir: Path, asked: list[str], docs: list[dict[str, Any]],
              conceal: bool) -> None:
    from typer.testing import CliRunner

    from glassrag.interfaces.cli.main import app

    runner = CliRunner()
    for principal in PRINCIPALS[:3]:  # the CLI has no admin flag: it is the file's owner
        roles = [a for r in principal.roles if r != "public" for a in ("--role", r)]
        cli_principal = Principal("cli", principal.roles)
        for q in asked:
            for command in (["search", q, "--json", "--top-k", "50"], ["ask", q, "--json"]):
                result = runner.invoke(app, ["--kb", str(kb_dir), *command, *roles])
                check(tally, "cli", cli_principal, q, result.output, docs, conceal)


@contextmanager
def http_server(kb_dir: Path) -> Iterator[tuple[str, dict[str, str]]]:
    import uvicorn

    from glassrag.interfaces.http.app import create_app
    from glassrag.interfaces.http.serve import uvicorn_config
    from glassrag.store.bearer_tokens import create_token

    app = create_app(kb_dir)
    with app.state.kb.lock:
        tokens = {p.principal_id: create_token(app.state.kb.store, p.principal_id, p.roles,
                                               p.admin) for p in PRINCIPALS}
    settings = app.state.kb.settings.server
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", 0, settings, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", tokens
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def probe_http(tally: Tally, kb_dir: Path, asked: list[str], docs: list[dict[str, Any]],
               conceal: bool) -> None:
    import httpx

    with http_server(kb_dir) as (url, tokens), httpx.Client(base_url=url, timeout=30) as http:
        for principal in PRINCIPALS:
            auth = {"Authorization": f"Bearer {tokens[principal.principal_id]}"}
            for q in asked:
                for mode in ("bm25", "overlap"):
                    r = http.post("/search", json={"query": q, "top_k": 50, "mode": mode},
                                  headers=auth)
                    check(tally, "http", principal, q, r.text, docs, conceal)
                r = http.post("/ask", json={"question": q, "top_k": 10}, headers=auth)
                check(tally, "http", principal, q, r.text, docs, conceal)
                if r.status_code == 200:
                    trace = http.get(f"/traces/{r.json()['trace_id']}", headers=auth)
                    check(tally, "http", principal, q, trace.text, docs, conceal)
            check(tally, "http", principal, "", http.get("/documents", headers=auth).text,
                  docs, conceal)
            for doc in docs:
                for suffix in ("", "/lines"):
                    got = http.get(f"/documents/{doc['doc_id']}{suffix}", headers=auth)
                    # The id asked for is the probe: a 404 naming it echoes it.
                    check(tally, "http", principal, doc["doc_id"], got.text, docs, conceal)
                    if principal.can_read(doc["roles"]):
                        continue
                    absent = http.get(f"/documents/nosuchdoc000{suffix}", headers=auth)
                    if (got.status_code, got.text.replace(doc["doc_id"], "X")) != \
                            (absent.status_code, absent.text.replace("nosuchdoc000", "X")):
                        tally.leak("existence", "http", f"{doc['doc_id']}{suffix}")


def probe_mcp(tally: Tally, kb_dir: Path, asked: list[str], docs: list[dict[str, Any]],
              conceal: bool) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    from glassrag.store.bearer_tokens import create_token

    for principal in PRINCIPALS:
        with KnowledgeBase.open(kb_dir) as kb, kb.lock:
            token = create_token(kb.store, principal.principal_id, principal.roles,
                                 principal.admin)
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "glassrag", "--kb", str(kb_dir), "mcp"],
            env={"GLASSRAG_TOKEN": token, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})

        async def session(principal: Principal = principal,
                          params: StdioServerParameters = params) -> None:
            async with Client(params) as client:
                for q in asked:
                    for name, args in (("search_knowledge_base", {"query": q, "top_k": 50}),
                                       ("search_knowledge_base", {"query": q, "top_k": 50,
                                                                  "mode": "overlap"}),
                                       ("ask", {"question": q, "top_k": 10})):
                        result = await client.call_tool(name, args)
                        output: Any = (result.structured_content if not result.is_error
                                       else " ".join(c.text for c in result.content))
                        check(tally, "mcp", principal, q, output, docs, conceal)

        anyio.run(session)


# -- the run -----------------------------------------------------------------------------------
def run(count: int) -> dict[str, Any]:
    docs = hidden_docs()
    asked = questions(docs, count)
    report: dict[str, Any] = {"questions": len(asked), "hidden_docs": len(docs),
                              "principals": [p.principal_id for p in PRINCIPALS]}
    with tempfile.TemporaryDirectory(prefix="glassrag-leak-") as tmp:
        root = Path(tmp)
        for disclosure in ("disclose", "conceal"):
            kb_dir = build_kb(root, disclosure)
            tally = Tally()
            conceal = disclosure == "conceal"
            timings = {}
            for name, probe in (("python", probe_python), ("cli", probe_cli),
                                ("http", probe_http), ("mcp", probe_mcp)):
                started = time.perf_counter()
                probe(tally, kb_dir, asked, docs, conceal)
                timings[name] = round(time.perf_counter() - started, 1)
                print(f"{disclosure} {name}: {tally.probes[name]} probes, "
                      f"{timings[name]} s", file=sys.stderr)
            entry: dict[str, Any] = {
                "probes": dict(tally.probes), "canary_leaks": dict(tally.canary),
                "count_leaks": dict(tally.count), "existence_leaks": dict(tally.existence),
                "reader_controls": dict(tally.control), "seconds": timings,
                "examples": tally.examples,
            }
            if conceal:
                compared, differ = score_dependence(kb_dir, build_kb(root, disclosure, False),
                                                    asked)
                entry["score_dependence"] = {"compared": compared, "differ": differ}
            report[disclosure] = entry
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = ["| policy | interface | probes | canary leaks | count leaks | existence leaks "
             "| reader found own canaries |", "|---|---|---:|---:|---:|---:|---:|"]
    for policy in ("disclose", "conceal"):
        entry = report[policy]
        for interface in ("python", "cli", "http", "mcp"):
            lines.append(
                f"| {policy} | {interface} | {entry['probes'].get(interface, 0)} | "
                f"{entry['canary_leaks'].get(interface, 0)} | "
                f"{entry['count_leaks'].get(interface, 0) if policy == 'conceal' else 'n/a'} | "
                f"{entry['existence_leaks'].get(interface, 0) if interface == 'http' else 'n/a'}"
                f" | {entry['reader_controls'].get(interface, 0)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/leak_probes.json"))
    args = parser.parse_args()
    report = run(args.questions)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    print(markdown(report))
    dependence = report["conceal"]["score_dependence"]
    print(f"\nconceal, Python API bm25: {dependence['differ']} of {dependence['compared']} "
          "searches differ with the hidden documents present (scores or hits)")
    for policy in ("disclose", "conceal"):
        for example in report[policy]["examples"]:
            print(f"{policy}: {example}")


if __name__ == "__main__":
    main()
