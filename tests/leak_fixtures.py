"""The leak probes' corpus and checks: principals, canary-carrying secret documents, the
example queries, and the check that no canary a principal may not read is in an output."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLES, write_jsonl
from glassrag import KnowledgeBase, Principal

ROLES = ["employee", "finance", "hr"]


PRINCIPALS = [Principal("p0")] + [Principal(f"p-{r}", roles=[r]) for r in ROLES] + [
    Principal("p-multi", roles=["employee", "finance"])
]


def _secret(role: str, n: int) -> dict:
    # Each secret shares ordinary words with the public examples (so it competes in
    # rankings) and carries unique canaries in every field that could leak.
    return {
        "doc_id": f"secretdoc-{role}-{n}",
        "title": f"Secrettitle {role} {n} refund roadmap",
        "source": f"vault/{role}/sourcecanary{n}.md",
        "roles": [role],
        "text": f"Refunds days learners API key roadmap beta Q4 退票 手续费 检索 片段 "
                f"textcanary{role}{n} zebracanary. Second sentence textcanary{role}{n}.",
    }


SECRETS = [_secret(role, n) for role in ROLES for n in range(3)]


QUERIES = [
    "How many days do learners have for refunds?",
    "Where should I store the API key?",
    "What is the private beta roadmap for Q4?",
    "What is the cafeteria menu today?",
    "距离起飞不足4小时退票，退票费是多少？",
    "退款多久到账",
    "RAG 检索 片段",
    "zebracanary textcanaryemployee0 secrettitle sourcecanary0",
]


# (query, mode) pairs with no searchable terms: the overlap tokenizer finds no words in
# unspaced Chinese. Every other pair must be answered; these must be this error, whoever
# asks (so the error tells nothing about what they may read).
UNSEARCHABLE = {("退款多久到账", "overlap")}


def _forbidden(principal: Principal) -> list[str]:
    strings = []
    for doc in SECRETS:
        if principal.can_read(doc["roles"]):
            continue
        role, n = doc["roles"][0], doc["doc_id"].rsplit("-", 1)[1]
        # Text needles carry context the queries never contain, so that a query echoing a
        # canary word back to its own asker is not mistaken for a leak.
        strings += [doc["doc_id"], doc["title"], doc["source"],
                    f"textcanary{role}{n} zebracanary", f"Second sentence textcanary{role}{n}"]
    return strings


def build_leak_kb(root: Path) -> Path:
    """The bundled examples plus the per-role secrets; shared by every interface's leak test."""
    kb_dir = root / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([EXAMPLES, write_jsonl(root / "secrets.jsonl", SECRETS)],
                           exclude=["**/*.yaml", "README.md"])
        assert report.failed == []
    return kb_dir


def _without_echo(output: str) -> str:
    """Drop the echo of the principal's own query: typing a secret word is not a leak."""
    try:
        data = json.loads(output)
    except ValueError:
        return "\n".join(
            line for line in output.splitlines() if not line.startswith("query terms:")
        )
    if isinstance(data, dict):
        data.pop("query", None)
        data.pop("query_terms", None)
    return json.dumps(data, ensure_ascii=False)


def _check(output: str, principal: Principal, where: str) -> None:
    low = _without_echo(output).casefold()
    for needle in _forbidden(principal):
        assert needle.casefold() not in low, f"{needle!r} leaked to {principal} via {where}"
