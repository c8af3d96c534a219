"""Everyday English words against the rarer words a question may name
(glassrag.text.vocabulary)."""

from __future__ import annotations

from glassrag.text.vocabulary import is_common, uncommon_words, written_short_or_long


def test_everyday_words_with_their_inflections_and_negations_are_common() -> None:
    for word in ("stay", "Gone", "widest", "biggest", "uncompressed", "rotates", "honour",
                 "parcel's", "server-sent"):
        assert is_common(word), word


def test_rarer_and_technical_words_are_not() -> None:
    for word in ("keyring", "coroutines", "async", "timeout", "emoji", "blockchain",
                 "re-keyring"):
        assert not is_common(word), word


def test_uncommon_words_leave_out_identifiers_flags_paths_and_calls() -> None:
    question = ("Does --keyring-backend or keyring_path in conf/keyring.toml, or "
                "keyring.get() or my@keyring, store the password in the system keyring?")
    assert uncommon_words(question) == [("keyring", ("keyr",))]


def test_uncommon_words_are_given_once_with_their_terms_in_order() -> None:
    assert uncommon_words("Are async coroutines, Async or not, awaited?") == [
        ("async", ("async",)), ("coroutines", ("coroutin",))]


def test_a_cjk_question_has_none_its_latin_words_are_names() -> None:
    assert uncommon_words("如何用 Kubernetes 部署集群？") == []


def test_words_written_short_or_long_are_the_same_thing() -> None:
    assert written_short_or_long(["config", "async"], {"configur", "asynchron"}) == {
        "config", "async"}
    assert written_short_or_long(["configur"], {"config"}) == {"configur"}
    assert written_short_or_long(["cap"], {"capac"}) == frozenset()  # under five letters
