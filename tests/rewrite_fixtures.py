"""Shared pieces of the query-rewrite tests: a small office knowledge base whose paraphrased
question BM25 misses, a knowledge base factory with [llm] settings, the stub fixture, and the
scripted rewrite failures."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_jsonl
from glassrag import KnowledgeBase
from llm_fixtures import stub as stub  # noqa: F401 - the env-pointing fixture, shared
from llm_stub import Reply

# "put", "bike" and "workday" occur in no document; the rewritten query's words do.
QUESTION = "Where do I put my bike during the workday?"
REWRITTEN = "bicycle parking rack cyclists"
QUOTE = "Cyclists park bicycles in the covered rack behind the east entrance."
# Only the facilities-only document matches this rewrite; the question matches nothing.
CAGE_QUESTION = "How do I unlock the downstairs enclosure?"
CAGE_REWRITTEN = "basement cage combination code"

PUBLIC_DOCS = [
    {"doc_id": "doc-bike-rack", "title": "Cycling facilities", "source": "office/cycling.md",
     "text": f"{QUOTE} The rack is open from 07:00 to 19:00 on weekdays."},
    {"doc_id": "doc-canteen-hours", "title": "Canteen hours", "source": "office/canteen.md",
     "text": "The canteen serves lunch between 11:30 and 14:00. Vegetarian dishes are "
             "marked green."},
]
# Canaries in every field that could leak: doc id, title, source and text.
SECRET = {"doc_id": "cagedocsecret", "title": "Cagetitlesecret combination",
          "source": "vault/cagesourcesecret.md", "roles": ["facilities"],
          "text": "The basement bicycle cage opens with combination VAULTCODE-5521. "
                  "Facilities staff rotate the cage code monthly."}
CANARIES = ["cagedocsecret", "Cagetitlesecret", "cagesourcesecret", "VAULTCODE-5521",
            "rotate the cage code"]


def rewrite_reply(query: str) -> str:
    return json.dumps({"query": query})


# Each way a rewrite can fail (with office_kb(timeout=0.5)), and a part of the error it gives.
FAILURES = {
    "timeout": (Reply(rewrite_reply(REWRITTEN), delay=2.0), "timed out"),
    "http_error": (Reply("overloaded", status=503), "HTTP 503"),
    "empty": (Reply(""), "empty reply"),
    "garbage": (Reply('{"answer": 42}'), 'no string "query"'),
    "too_long": (Reply(rewrite_reply("bicycle parking " * 25)), "characters long"),
    "refusal": (Reply(refusal="I cannot help with that."), "refused"),
}


def office_kb(tmp_path: Path, *, profile: bool = False, rewrite_query: bool | None = None,
              timeout: float | None = None, disclosure: str = "disclose",
              secret: bool = False) -> KnowledgeBase:
    """A knowledge base with the office documents and the given glassrag.toml changes."""
    kb_dir = tmp_path / "office"
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    text = config.read_text(encoding="utf-8")
    changes = [('disclosure = "disclose"', f'disclosure = "{disclosure}"')]
    if profile:
        changes.append(('# profile = "openai"', 'profile = "openai"'))
    if rewrite_query is not None:
        changes.append(("rewrite_query = false", f"rewrite_query = {str(rewrite_query).lower()}"))
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    if timeout is not None:  # [llm]'s own (other sections have a timeout too)
        head, llm = text.split("\n[llm]\n", 1)
        llm, rest = llm.split("\n[", 1)
        assert llm.count("\ntimeout = 30.0\n") == 1
        text = f"{head}\n[llm]\n{llm.replace('timeout = 30.0', f'timeout = {timeout}')}\n[{rest}"
    config.write_text(text, encoding="utf-8")
    kb = KnowledgeBase.open(kb_dir)
    docs = PUBLIC_DOCS + ([SECRET] if secret else [])
    kb.ingest([write_jsonl(tmp_path / "office.jsonl", docs)])
    return kb
