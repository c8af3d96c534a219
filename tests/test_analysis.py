"""Analysis: one token stream for indexing and querying, in English, Chinese, Japanese, Korean."""

from __future__ import annotations

import subprocess
import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.text.analysis import (
    ENGLISH_STOPWORDS,
    analyze,
    analyze_runs,
    unique_terms,
)


def test_english_stems_drops_stop_words_and_keeps_order_and_duplicates() -> None:
    tokens = analyze("The kettles were boiling; the kettle boils again!")
    assert tokens == ["kettl", "boil", "kettl", "boil"]


def test_english_splits_on_punctuation_and_underscores_and_keeps_digits() -> None:
    assert analyze("Set PAGER_TIMEOUT=30 in v2.1 config-files") == [
        "set", "pager", "timeout", "30", "v2", "1", "config", "file",
    ]  # fmt: skip


def test_stop_list_is_a_standard_size_and_has_contraction_fragments() -> None:
    assert 120 <= len(ENGLISH_STOPWORDS) <= 400
    assert {"the", "and", "which", "t", "don"} <= ENGLISH_STOPWORDS
    assert analyze("don't stop") == ["stop"]
    assert analyze("don’t stop") == ["stop"]  # typographic apostrophe too


def test_nfkc_and_casefold_make_full_width_and_case_irrelevant() -> None:
    expected = ["gpu", "memori", "16"]
    assert analyze("ＧＰＵ Ｍｅｍｏｒｙ １６") == analyze("gpu MEMORY 16") == expected
    assert analyze("Straße") == analyze("STRASSE")


def test_mixed_latin_and_han_gives_both() -> None:
    tokens = analyze("RAG流程是什么")
    assert "rag" in tokens and "流程" in tokens
    assert "是" not in tokens and "什么" not in tokens  # function/question words dropped


def test_chinese_uses_jieba_search_mode_and_drops_function_words() -> None:
    tokens = analyze("我们的检索系统支持中华人民共和国的地名。")
    assert "检索" in tokens and "系统" in tokens
    # search mode also emits the parts of a long word, so a shorter query still matches
    assert {"中华人民共和国", "共和国", "人民"} <= set(tokens)
    assert "的" not in tokens and "。" not in tokens


def test_chinese_query_matches_chinese_text() -> None:
    query = analyze("运费多久能退回？")
    text = analyze("取消订单后，运费会在三个工作日内退回原账户。")
    assert {"运费", "退回"} <= set(query) & set(text)


def test_japanese_query_matches_japanese_text() -> None:
    query = analyze("払い戻しはいつ届きますか")
    text = analyze("払い戻しの手続きは申請から五日以内に届きます。")
    assert {"払い", "戻し"} <= set(query) & set(text)


def test_japanese_kanji_only_runs_are_bigrams_like_the_query() -> None:
    # "議事録作成" sits between punctuation in the text but inside kana in the query.
    text = analyze("本日は、議事録作成（メモ）を説明します。")
    query = analyze("議事録作成の手順を教えて")
    assert {"議事", "事録", "録作", "作成"} <= set(text) & set(query)
    assert [name for name, _, _ in analyze_runs("議事録作成を説明")] == ["japanese"]


def test_korean_bigrams_and_single_characters() -> None:
    assert analyze("환불 규정은") == ["환불", "규정", "정은"]
    assert analyze("값") == ["값"]
    assert analyze("猫") == ["猫"]


def test_analyze_runs_names_each_analyzer_and_matches_analyze() -> None:
    text = "Refund 政策 説明します 환불 policy"
    runs = analyze_runs(text)
    assert [name for name, _, _ in runs] == ["english", "japanese", "japanese", "korean", "english"]
    assert [run for _, run, _ in runs] == ["refund", "政策", "説明します", "환불", "policy"]
    assert [token for _, _, tokens in runs for token in tokens] == analyze(text)
    assert analyze_runs("退款规则") == [("chinese", "退款规则", ["退款", "规则"])]


def test_unique_terms_keeps_first_order() -> None:
    assert unique_terms(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert unique_terms(analyze("refund refunds refunded")) == ["refund"]


def test_jieba_is_lazy_and_silent() -> None:
    # A fresh interpreter: English text must not load jieba, and loading it prints nothing.
    code = (
        "import sys\n"
        "from glassrag.text.analysis import analyze\n"
        "analyze('plain english only')\n"
        "assert 'jieba' not in sys.modules\n"
        "tokens = analyze('检索增强生成')\n"
        "sys.stderr.flush()\n"
        "print('|'.join(tokens))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "检索|增强|生成\n"
    assert done.stderr == ""


_MIXED = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from(
            ["检索流程", "退款规则。", "説明します", "議事録", "환불 규정", "Refunds", " ", "、"]
        ),
    ),
    max_size=6,
).map("".join)


@settings(max_examples=60, deadline=None)
@given(_MIXED)
def test_analyze_is_deterministic_and_normalisation_idempotent(query: str) -> None:
    tokens = analyze(query)
    assert analyze(query) == tokens
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", query).casefold())
    assert analyze(folded) == tokens
    assert all(token and not any(ch.isspace() for ch in token) for token in tokens)
    assert [t for _, _, run_tokens in analyze_runs(query) for t in run_tokens] == tokens
