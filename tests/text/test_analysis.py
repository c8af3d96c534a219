"""Analysis: one token stream for indexing and querying, in English, Chinese, Japanese, Korean."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.text.analysis import (
    ENGLISH_STOPWORDS,
    analyze,
    analyze_runs,
    is_filler,
    is_particle,
    name_terms,
    unique_terms,
)


def test_english_stems_drops_stop_words_and_keeps_order_and_duplicates() -> None:
    tokens = analyze("The kettles were boiling; the kettle boils again!")
    assert tokens == ["kettl", "boil", "kettl", "boil"]


def test_english_splits_on_punctuation_and_underscores_and_keeps_digits() -> None:
    # The parts first, then each identifier whole (see the identifier tests below).
    assert analyze("Set PAGER_TIMEOUT=30 in v2.1 config-files") == [
        "set", "pager", "timeout", "30", "v2", "1", "config", "file",
        "pager_timeout=30", "pager_timeout", "v2.1", "config-files",
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


def test_a_chinese_question_asked_as_to_a_colleague_keeps_only_its_topic_words() -> None:
    # Pronouns, modal verbs and words of position and time are stop words, as "we", "should"
    # and "after" are in English: otherwise each weighs as a rare word no answer holds.
    tokens = set(analyze("我们这边的客户端在发送失败以后，我想让它能够多重试几次，"
                         "这个时候应该去改哪个参数呢？"))
    assert {"客户端", "发送", "失败", "参数"} <= tokens
    assert not tokens & {"我们", "这边", "以后", "我", "想", "让", "它", "能够", "这个", "时候",
                         "应该", "呢"}


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
    # Casefolding loses only the parts of camelCase words (they need the case to be found).
    assert set(analyze(folded)) <= set(tokens)
    assert analyze(unicodedata.normalize("NFKC", folded.casefold())) == analyze(folded)
    assert all(token and not any(ch.isspace() for ch in token) for token in tokens)
    assert [t for _, _, run_tokens in analyze_runs(query) for t in run_tokens] == tokens


# -- identifiers and names ---------------------------------------------------------------------

def test_an_identifier_is_a_token_whole_as_well_as_in_parts() -> None:
    tokens = analyze("Set `max_connections` and --max-http-header-size, hide_input=True.")
    assert {"max", "connect", "max_connections"} <= set(tokens)
    assert {"--max-http-header-size", "hide_input=true", "hide_input"} <= set(tokens)
    dotted = analyze("Call Context.call_on_close or read starlette.config")
    assert {"context.call_on_close", "call_on_close", "starlette.config"} <= set(dotted)


def test_a_backslash_escaped_character_is_read_as_itself() -> None:
    # Markdown written by converters from HTML escapes underscores and asterisks in prose:
    # ``enable\_js`` is the identifier enable_js, as a reader sees it and a question names it.
    assert analyze("Call enable\\_js(script\\_name) once.") == analyze(
        "Call enable_js(script_name) once.")
    assert "enable_js" in analyze("プラグインで enable\\_js を使う")
    assert analyze("a \\*args list") == analyze("a *args list")


def test_camel_case_words_also_give_their_stemmed_parts() -> None:
    tokens = analyze("Use RedirectResponse, not HTTPSRedirectMiddleware")
    assert {"redirectrespons", "redirect", "respons"} <= set(tokens)
    assert {"httpsredirectmiddlewar", "https", "middlewar"} <= set(tokens)
    # A capitals-led word alone in its text, with no lower-then-upper pair anywhere.
    assert {"jsonrespons", "json", "respons"} <= set(analyze("JSONResponse"))


def test_an_acronym_plural_is_one_word_not_an_acronym_and_a_capitalised_word() -> None:
    # "URLs" is "url", not also "ur" and "ls": those match nothing the text means, and
    # weigh as a question's rarest words because no answer holds them.
    assert analyze("download snippets from URLs") == analyze("download snippets from url")
    assert analyze("APIs and IDs") == ["api", "id"]
    assert {"geturl", "get", "url"} == set(analyze("getURLs"))
    assert {"jsonrespons", "json", "respons"} <= set(analyze("JSONResponse"))  # unchanged

def test_an_identifier_in_japanese_text_is_a_token_too() -> None:
    assert {"--force", "node_modules/.vite"} <= set(
        analyze("`--force` フラグで node_modules/.vite を削除します"))


def test_the_exact_identifier_outranks_one_sharing_its_parts(tmp_path: Path) -> None:
    from glassrag.kb import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "limits.md").write_text(
        "# Limits\n\n`max_keepalive_connections` caps idle connections kept for reuse; "
        "max connections per pool stay open.\n\n## Pool\n\n`max_connections` caps all "
        "open connections.\n")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([docs])
        hits = kb.search("max_connections").hits
    assert "`max_connections` caps all" in hits[0].chunk.text


def test_name_terms_are_identifiers_and_latin_words_in_cjk_text() -> None:
    assert name_terms("What Cache-Control header does StaticFiles send, cache_size?") == [
        ("cache-control",), ("staticfil",), ("cache_size",)]
    # A qualified name also goes by its last part; examples are not names.
    assert name_terms("Is click.Choice like --host in mytool.py, half-written?") == [
        ("click.choice", "choic")]
    assert set(name_terms("如何用 Prometheus 采集 RocketMQ 的指标？")) == {
        ("prometheus",), ("rocketmq",)}
    assert name_terms("How do refunds work?") == []


def test_a_capitalised_word_inside_an_english_question_is_a_name() -> None:
    assert name_terms("Which generator writes Bazel files for Kotlin and S3?") == [
        ("bazel",), ("kotlin",), ("s3",)]
    # Not the first word, not a short acronym, not a hyphenated key or a quoted example.
    assert name_terms("What happens on Ctrl-C with ISO dates in a URL, as 'Usage:' says?") == []
    # Capitalised words in a row are one name, known by either part (a first name the
    # documents leave out); a word with letters beyond ASCII is not cut into a name.
    assert name_terms("What did Graham Twigg propose to Temüjin?") == [("graham", "twigg")]


def test_particles_are_japanese_bigrams_starting_in_hiragana_or_kana_endings() -> None:
    assert [t for t in analyze("サーバーは起動しますか") if is_particle(t)] == [
        "ーは", "は起", "しま", "ます", "すか"]
    assert not any(is_particle(t) for t in ["起動", "動し", "サー", "refund", "检索"])


def test_english_filler_words_are_named_by_their_analysed_form() -> None:
    fillers = [t for t in analyze("Would someone really want many quick builds anyway?")
               if is_filler(t)]
    assert fillers == ["would", "someon", "realli", "want", "mani", "anyway"]
    # A word sharing a filler's stem is not a filler: "quit" (not "quite"), "severity".
    assert not any(is_filler(t) for t in analyze("quit severity build"))


def test_a_kanji_before_a_case_particle_and_a_lone_hiragana_are_particles() -> None:
    # 共通のタグを付ける: 通の and 定を end words; 付け is a verb's stem and stays a word.
    terms = analyze("共通のタグを設定を付けるKotlinのdata")
    assert [t for t in terms if is_particle(t)] == ["通の", "のタ", "グを", "を設", "定を", "を付",
                                                    "ける", "の"]
    assert not any(is_particle(t) for t in ["付け", "共通", "設定", "タグ", "a", "x"])


def test_an_identifier_with_a_letter_that_casefolds_to_ascii_is_found_either_way() -> None:
    # "ß" folds to "ss": the identifier is the one its casefolded spelling gives.
    assert "ss=0" in analyze("ß=0") and "ss=0" in analyze("ss=0")
    assert "strasse_name" in analyze("Straße_Name")


def test_analyze_query_is_analyze_and_remembers_short_queries() -> None:
    from glassrag.text import analysis

    for query in ("退款规则是什么", "Refunds within 5 days", "検索拡張生成の仕組み", "x" * 1001):
        assert analysis.analyze_query(query) == analyze(query)
    before = analysis._remembered.cache_info().hits
    analysis.analyze_query("退款规则是什么")
    assert analysis._remembered.cache_info().hits == before + 1
    # The caller may change its list without changing what is remembered.
    analysis.analyze_query("退款规则是什么").append("x")
    assert analysis.analyze_query("退款规则是什么") == analyze("退款规则是什么")


def test_a_chinese_run_is_segmented_once_and_its_terms_stay_the_callers() -> None:
    from glassrag.text import analysis

    text = "取消订单后，运费会在三个工作日内退回原账户。"
    first = analyze(text)
    misses = analysis._segmented.cache_info().misses
    again = analyze(text)
    assert again == first and analysis._segmented.cache_info().misses == misses
    # A caller changing its terms (analyze_runs gives the lists themselves) changes nothing
    # remembered.
    analyze_runs(text)[0][2].append("x")
    again.append("x")
    assert analyze(text) == first


def test_forget_queries_makes_the_next_query_a_first_seen_one() -> None:
    from glassrag.text import analysis

    analysis.analyze_query("退款规则是什么")
    analysis.forget_queries()
    misses = analysis._remembered.cache_info().misses
    assert analysis.analyze_query("退款规则是什么") == analyze("退款规则是什么")
    assert analysis._remembered.cache_info().misses == misses + 1  # analysed again


def test_a_one_letter_camel_case_part_is_a_prefix_not_a_term() -> None:
    # "CMake" and "CTest" are names, not the letter c plus a word: the letter would match
    # every C-language mention, and every query that names the tool
    assert analyze("CMake") == ["cmake", "make"]
    assert "c" not in analyze("Run CTest after CPack") and "test" in analyze("CTest")
    assert {"json", "respons"} <= set(analyze("JSONResponse"))  # longer parts stay
