"""A question asking which environment variable is answered only by a quote naming one."""

from __future__ import annotations

import pytest
from tests.answer.test_answer_choice import FLOOR_ONLY, make_hit, quotes

from glassrag.answer.extractive import extractive_answer
from glassrag.answer.semantic import semantic_answer
from glassrag.answer.values import asks_env_var, missing_value, names_env_var
from glassrag.dense.hash_embedder import HashEmbedder
from glassrag.records import ANSWERED, NO_EVIDENCE


@pytest.mark.parametrize("question", [
    "Which environment variable picks the editor that kettle opens?",
    "What env var does kettle read for its cache folder?",
    "Which environment variables does the brew hook see?",
    "kettle 打开编辑器时读取哪个环境变量？",
    "kettle がエディタを選ぶときはどの環境変数を読みますか？",
])
def test_which_environment_variable_is_asked(question: str) -> None:
    assert asks_env_var(question)


@pytest.mark.parametrize("question", [
    "Is there an environment variable that tells my code it runs under kettle?",
    "How do I pass environment variables to the brew hook?",
    "Which editor does kettle open?",
])
def test_other_questions_do_not_ask_for_a_variable_name(question: str) -> None:
    # A yes/no question may be answered without the name, and a how-to by the way to do it.
    assert not asks_env_var(question)


@pytest.mark.parametrize("text", [
    "Set `NO_COLOR` to turn colours off.",
    "kettle opens $EDITOR, or vi when it is unset.",
    "The cache lives under ${XDG_CACHE_HOME}/kettle.",
    "On Windows the folder is taken from %APPDATA%.",
    "Run it as `PAPERSIZE=a4 kettle print`.",
    "Users can override it with the PAGER environment variable.",
    "可以通过环境变量 PAGER 指定分页程序。",
])
def test_a_text_naming_an_environment_variable(text: str) -> None:
    assert names_env_var(text, "which environment variable does kettle read?")


@pytest.mark.parametrize("text", [
    # A constant in code, a capitalised word in a text that says nothing of the environment,
    # and the name the question itself gives.
    "Example::\n\n    MARKER = '# below this line is ignored'\n    kettle.edit(MARKER)",
    "kettle reads the API key from its config file.",
    "KETTLE_HOME is read once at start-up.",
])
def test_a_text_naming_no_new_environment_variable(text: str) -> None:
    assert not names_env_var(text, "when is the kettle_home environment variable read?")


def test_a_quote_naming_no_variable_is_refused_with_the_reason() -> None:
    question = "Which environment variable does kettle.edit() read to pick the editor?"
    example = make_hit("edit#1", (
        "kettle.edit() opens an editor on the text and returns what was saved, for example:"
        "\n\n    MARKER = '# below this line is ignored'\n"
        "    message = kettle.edit('\\n\\n' + MARKER)\n"), heading="Utilities › Editing")
    draft = extractive_answer(question, [example], FLOOR_ONLY)
    assert draft.status == NO_EVIDENCE
    assert "the name of an environment variable" in str(draft.notes["reason"])
    named = make_hit("edit#2", (
        "kettle.edit() opens the editor named by the `KETTLE_EDITOR` environment variable "
        "to pick the editor, or vi.\n"), heading="Utilities › Editing")
    assert quotes(question, [example, named], FLOOR_ONLY)[0].startswith(
        "kettle.edit() opens the editor named by the `KETTLE_EDITOR`")


def test_the_semantic_fallback_refuses_a_sentence_naming_no_variable() -> None:
    question = "Which environment variable makes kettle print its debug log to a file?"
    vague = make_hit("debug#1", "kettle can print a debug log while it brews.\n")
    draft = semantic_answer(question, [vague], HashEmbedder(256), 0.0)
    assert draft.status == NO_EVIDENCE
    assert "the name of an environment variable" in str(draft.notes["reason"])
    named = make_hit("debug#2", "Set KETTLE_DEBUG_FILE to print the debug log to a file.\n")
    assert semantic_answer(question, [named], HashEmbedder(256), 0.0).status == ANSWERED


def test_a_number_goes_missing_before_a_name() -> None:
    assert missing_value("How many environment variables does kettle read?",
                         ["kettle reads a few."]) == "a number (how many, which port or code, when)"
    assert missing_value("Which environment variable sets the port?",
                         ["The port is 8080 unless KETTLE_PORT says otherwise."]) is None
