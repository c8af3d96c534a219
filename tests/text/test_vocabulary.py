"""Everyday English words against the rarer words a question may name
(glassrag.text.vocabulary)."""

from __future__ import annotations

from glassrag.text.vocabulary import (
    is_common,
    one_edit_away,
    uncommon_words,
    written_short_or_long,
)


def test_everyday_words_with_their_inflections_and_negations_are_common() -> None:
    for word in ("stay", "Gone", "widest", "biggest", "uncompressed", "rotates", "honour",
                 "parcel's", "server-sent"):
        assert is_common(word), word


def test_a_word_whose_inflection_turned_y_into_i_is_as_common_as_the_word() -> None:
    # "lazily" is "lazy", "copied" "copy", "emptier" "empty": everyday words, however written.
    for word in ("lazily", "copied", "emptier", "busiest", "replies"):
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


def test_a_misspelt_everyday_word_is_everyday_and_short_words_are_taken_as_written() -> None:
    # One letter left out, added, changed or two swapped, in a word of six letters or more.
    for typo in ("betwen", "parliment", "coruption", "chainging", "buidling"):
        assert is_common(typo), typo
    assert not is_common("coroutines") and not is_common("blockchain")
    # "async" is one letter from "sync" and "emoji" from nothing: under six letters a word
    # is taken as written.
    assert not is_common("async") and not is_common("emoji")


def test_one_edit_away_covers_the_four_kinds_of_slip() -> None:
    words = {"ctenophor", "between"}
    assert one_edit_away("ctenohor", words)  # a letter left out
    assert one_edit_away("ctenophorr", words)  # one added
    assert one_edit_away("ctenaphor", words)  # one changed
    assert one_edit_away("ctneophor", words)  # two neighbours swapped
    assert not one_edit_away("ctenophor", words - {"ctenophor"})
    assert not one_edit_away("btewene", words)


def test_a_pasted_passage_has_no_uncommon_words_to_refuse_on() -> None:
    # Its rare words are its context (an error message, a paragraph): only a question of
    # at most MAX_QUESTION_WORDS words names what it asks about.
    from glassrag.text.vocabulary import MAX_QUESTION_WORDS

    question = "Why does the keyring backend fail?"
    assert uncommon_words(question) == [("keyring", ("keyr",))]
    passage = question + " It printed:" + " the keyring daemon said" * MAX_QUESTION_WORDS
    assert uncommon_words(passage) == []
