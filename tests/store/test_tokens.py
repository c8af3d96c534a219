"""Bearer tokens: stored hashed, shown once, revocable; and the CLI commands for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glassrag import KnowledgeBase, Principal
from glassrag.errors import InvalidInput, NotFound
from glassrag.interfaces.cli.main import app
from glassrag.store.bearer_tokens import (
    create_token,
    hash_token,
    list_tokens,
    principal_for,
    revoke_token,
)


def test_tokens_are_stored_hashed_and_map_to_their_principal(kb: KnowledgeBase) -> None:
    token = create_token(kb.store, "alice", ["employee", "hr"])
    other = create_token(kb.store, "root", admin=True)
    assert token != other and len(token) > 40
    dump = "\n".join(kb.store.db.iterdump())
    assert token not in dump and hash_token(token) in dump
    assert principal_for(kb.store, token) == Principal("alice", ["employee", "hr"])
    assert principal_for(kb.store, other) == Principal("root", admin=True)
    assert principal_for(kb.store, "grt_wrong") is None
    assert principal_for(kb.store, "") is None
    assert principal_for(kb.store, None) is None


def test_list_and_revoke(kb: KnowledgeBase) -> None:
    token = create_token(kb.store, "alice", ["employee"])
    second = create_token(kb.store, "bob")
    rows = list_tokens(kb.store)
    assert [r["principal_id"] for r in rows] == ["alice", "bob"]
    assert all(token not in json.dumps(r) for r in rows)
    revoke_token(kb.store, rows[0]["token_id"])
    assert principal_for(kb.store, token) is None
    assert principal_for(kb.store, second) is not None
    revoke_token(kb.store, second)
    assert principal_for(kb.store, second) is None
    assert all(r["revoked_at"] for r in list_tokens(kb.store))
    with pytest.raises(NotFound):
        revoke_token(kb.store, "deadbeefdeadbeef")
    with pytest.raises(InvalidInput):
        revoke_token(kb.store, "x")


def test_reserved_and_empty_principals_are_refused(kb: KnowledgeBase) -> None:
    for name in ("", "  ", "anonymous"):
        with pytest.raises(InvalidInput):
            create_token(kb.store, name)


def test_cli_tokens_create_list_revoke(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    runner = CliRunner()
    base = ["--kb", str(kb_dir), "tokens"]
    created = runner.invoke(app, [*base, "create", "--principal", "alice",
                                  "--roles", "employee,hr", "--json"])
    assert created.exit_code == 0, created.output
    token = json.loads(created.output)["token"]
    listed = runner.invoke(app, [*base, "list", "--json"])
    rows = json.loads(listed.output)
    assert rows[0]["principal_id"] == "alice" and rows[0]["roles"] == ["employee", "hr", "public"]
    assert token not in listed.output
    assert runner.invoke(app, [*base, "revoke", token]).exit_code == 0
    with KnowledgeBase.open(kb_dir) as kb:
        assert principal_for(kb.store, token) is None
    missing = runner.invoke(app, [*base, "revoke", "deadbeefdeadbeef"])
    assert missing.exit_code == 3
