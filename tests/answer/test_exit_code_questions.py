"""A question asking which exit or status code needs a number in digits, as one asking which
port does: documentation writes a code as one ("exits with 2", "sends 307")."""

from __future__ import annotations

import pytest
from tests.answer.test_answer_choice import FLOOR_ONLY, make_hit, quotes

from glassrag.answer.extractive import extractive_answer
from glassrag.answer.values import lacks_quantity
from glassrag.records import NO_EVIDENCE


@pytest.mark.parametrize("question", [
    "What exit code does kettle return when the tank is empty?",
    "Which exit status does kettle check give when a filter is missing?",
    "What HTTP status code does the brew endpoint send for an empty tank?",
    "水箱为空时 kettle 返回什么状态码？",
    "水箱が空のとき kettle はどの終了コードで終わりますか？",
    "水箱が空のときの終了コードは何ですか？",
])
def test_a_code_question_needs_a_number_in_digits(question: str) -> None:
    assert lacks_quantity(question, ["kettle stops with an error when the tank is empty."])
    assert not lacks_quantity(question, ["kettle exits with 3 when the tank is empty."])


@pytest.mark.parametrize("question", [
    "What does exit status 3 mean for kettle?",
    "How do I set the exit code of a brew hook?",
    "状态码 404 是什么意思？",
    "終了コード 3 の意味は？",
])
def test_asking_what_a_given_code_means_or_how_to_set_one_needs_none(question: str) -> None:
    assert not lacks_quantity(question, ["kettle stops with an error when the tank is empty."])


def test_an_answer_naming_no_code_is_refused() -> None:
    question = "What exit code does kettle return when the tank is empty?"
    words = make_hit("exit#1", "When the tank is empty, kettle stops and returns an error "
                     "code to the shell.\n", heading="Exit codes")
    draft = extractive_answer(question, [words], FLOOR_ONLY)
    assert draft.status == NO_EVIDENCE and "asks for a number" in str(draft.notes["reason"])
    digits = make_hit("exit#2", "When the tank is empty, kettle returns exit code 3.\n",
                      heading="Exit codes")
    assert quotes(question, [words, digits], FLOOR_ONLY) == [
        "When the tank is empty, kettle returns exit code 3."]
