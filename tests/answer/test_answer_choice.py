"""Choosing the answer on documentation: the shapes facts take in docs (a name then its value,
a sentence introducing a list or code, a section named by its heading, a FAQ question), and
the refusal of a question naming something the documents never mention."""

from __future__ import annotations

from dataclasses import replace

import pytest

from glassrag.answer.blocks import (
    introduced_end,
    links_only,
    markup_only,
    sentences,
    title_span,
)
from glassrag.answer.extractive import extractive_answer
from glassrag.answer.passages import hit_standing, units
from glassrag.answer.semantic import semantic_answer
from glassrag.answer.values import (
    asks_count,
    asks_default,
    asks_when,
    asks_yes_no,
    has_literal,
    lacks_quantity,
    literals,
    names_default,
    of_kind,
    seeks_literal,
    states_default,
    states_quantity,
    unset_phrases,
    value_kind,
)
from glassrag.dense.hash_embedder import HashEmbedder
from glassrag.records import ANSWERED, NO_EVIDENCE, Chunk, Hit
from glassrag.settings import AnswerSettings


def make_hit(chunk_id: str, text: str, *, heading: str | None = None, title: str = "Guide",
             source: str = "guide.md") -> Hit:
    chunk = Chunk(
        chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], ordinal=1, text=text, line_start=1,
        line_end=1 + text.count("\n"), char_start=0, char_end=len(text), heading=heading,
        roles=("public",), doc_version=1, content_hash="h", title=title, source=source,
    )
    return Hit(chunk=chunk, score=1.0)


# These tests are of which quotes are chosen: the sentence quoted after the first for context
# is off (tests/answer/test_neighbours.py tests it).
CHOICE = AnswerSettings(context_chars=0)
# The short-question share off too, for tests of how quotes are chosen among short
# questions' near misses (tests/answer/test_short_questions.py tests the share).
FLOOR_ONLY = AnswerSettings(min_covered_terms=0, context_chars=0)


def quotes(question: str, hits: list[Hit], settings: AnswerSettings = CHOICE) -> list[str]:
    draft = extractive_answer(question, hits, settings)
    assert draft.status == ANSWERED, draft.notes
    for citation in draft.citations:  # verbatim, whatever the shape
        assert any(citation.quote in h.chunk.text for h in hits)
    return [c.quote for c in draft.citations]


def test_the_value_in_the_next_sentence_of_the_list_item_is_quoted_with_its_name() -> None:
    text = ("* `allow_credentials` - Indicate that cookies should be supported. Defaults to "
            "`False`.\n"
            "* `max_age` - Sets a maximum time in seconds for browsers to cache CORS responses."
            " Defaults to `600`.\n")
    hit = make_hit("mw#1", text, heading="Middleware › CORSMiddleware")
    assert quotes("How long do browsers cache CORS responses by default?", [hit]) == [
        "* `max_age` - Sets a maximum time in seconds for browsers to cache CORS responses. "
        "Defaults to `600`."]


def test_a_value_question_gets_the_value_line_of_the_section_its_sentence_is_in() -> None:
    # An option reference: the description answers the question's words, the list above it
    # holds the value.
    text = ("## build.chunkSizeWarningLimit\n\n- **Type:** `number`\n- **Default:** `500`\n\n"
            "Limit for chunk size warnings, in kB, applied by default to every chunk.\n")
    hit = make_hit("build#7", text, heading="Build Options › build.chunkSizeWarningLimit")
    assert quotes("What is the default limit for chunk size warnings?", [hit]) == [
        "Limit for chunk size warnings, in kB, applied by default to every chunk.",
        "- **Default:** `500`"]


def test_a_sentence_ending_in_a_colon_brings_the_code_it_introduces() -> None:
    text = ("Occasionally you want to see the 500 page itself. To keep the server error "
            "from being raised, pass the flag:\n\n```python\n"
            "client = TestClient(app, raise_server_exceptions=False)\n```\n\nMore text.")
    quoted = quotes("How do I keep TestClient from raising the server error?",
                    [make_hit("tc#1", text)])
    assert quoted[0].endswith("raise_server_exceptions=False)\n```")
    assert "More text" not in quoted[0]


def test_a_sentence_ending_in_a_colon_brings_its_list() -> None:
    text = ("The supported compression levels are:\n\n* `1` - fastest\n* `9` - smallest\n\n"
            "Other prose.")
    end = introduced_end(text, text.index(":") + 1)
    assert text[:end].endswith("* `9` - smallest")
    quoted = quotes("Which compression levels are supported?", [make_hit("gz#1", text)])
    assert quoted == ["The supported compression levels are:\n\n* `1` - fastest\n"
                      "* `9` - smallest"]


def test_a_long_introduced_block_is_cut_at_a_line_end() -> None:
    code = "\n".join(f"line_{i} = {i}" for i in range(200))
    text = f"Configure it like this:\n\n```python\n{code}\n```"
    end = introduced_end(text, text.index(":") + 1)
    assert 400 < end < 700 and text[end - 1] != "\n" and text[end] == "\n"


def test_the_section_whose_heading_matches_the_question_wins() -> None:
    hits = [make_hit("resp#1", "Uses a 200 status code by default.",
                     heading="Responses › JSONResponse"),
            make_hit("resp#2", "Uses a 307 status code by default.",
                     heading="Responses › RedirectResponse")]
    assert quotes("What status code does RedirectResponse use by default?", hits) == [
        "Uses a 307 status code by default."]


def test_a_heading_is_never_the_quote() -> None:
    hit = make_hit("cfg#1", "## Reading prefixed environment variables\n\n"
                   "Pass `env_prefix` to only read variables with that prefix.",
                   heading="Configuration › Reading prefixed environment variables")
    assert quotes("How do I read only prefixed environment variables?", [hit]) == [
        "Pass `env_prefix` to only read variables with that prefix."]
    assert all("##" not in u.text for u in units([hit], 1))


def test_a_question_in_the_documents_is_quoted_with_its_answer() -> None:
    hit = make_hit("faq#1", "1. **How long are messages kept on the server?**\n\n"
                   "Messages are kept for 3 days by default.")
    assert quotes("How long are messages kept on the server?", [hit]) == [
        "1. **How long are messages kept on the server?**\n\n"
        "Messages are kept for 3 days by default."]


def test_prose_wins_over_a_line_of_code_with_the_same_words() -> None:
    text = ("```python\nredirect(url, status_code=301, default=True)\n```\n\n"
            "Redirects use a 307 status code.")
    assert quotes("What status code do redirects use by default?", [make_hit("r#1", text)]) == [
        "Redirects use a 307 status code."]


def test_literals_and_what_questions() -> None:
    assert has_literal("Defaults to `600`.") and has_literal("最多会重试16次")
    assert has_literal("set aclEnable to true") and has_literal("use --force")
    assert not has_literal("Nothing literal here.")
    assert seeks_literal("What is the default port?") and seeks_literal("默认端口是多少？")
    assert seeks_literal("デフォルトのポートは何番ですか？")
    assert not seeks_literal("Can I nest groups?") and not seeks_literal("需要重启吗？")


def test_a_question_naming_something_unmentioned_gets_no_evidence() -> None:
    # "What is the capital of France?" against a page that happens to say "France".
    hit = make_hit("ship#1", "Parcels to France take four days; the capital city depot "
                   "ships them.")
    draft = extractive_answer("What is the capital of France?", [hit],
                              unknown_names=("paris",))
    assert draft.status == NO_EVIDENCE
    assert "paris" in draft.notes["reason"]


def test_one_shared_word_refuses_but_a_chinese_word_cut_apart_is_not_missing() -> None:
    france = make_hit("ship#1", "Parcels to France take four days by road.")
    assert extractive_answer("What is the capital of France?", [france]).status == NO_EVIDENCE
    # The question segments as 查 + 物流, the text as 物流 + 查询 / 查看: one word shared
    # exactly, the other within a word of the text; and 核查 ("check") beside 核对.
    orders = make_hit("faq#1", "物流查询：进入订单页面后点“查看物流”，即可看到配送节点。")
    assert "查看物流" in quotes("怎么查物流？", [orders])[0]
    review = make_hit("review#1", "读回答时，先逐条核对引用是否出现在原文里。")
    assert "核对引用" in quotes("应该如何核查回答？", [review])[0]


def test_the_first_line_of_a_container_above_its_closing_marker_is_quotable() -> None:
    # "::: tip" opens, ":::" closes: the line between is prose, not a title underlined by ":::".
    text = ("Install it with your package manager.\n\n::: tip Compatibility\n"
            "Quillpress needs Ruby 3.2 or later. Some themes need a newer one.\n:::\n")
    hit = make_hit("qp#1", text)
    assert quotes("Which Ruby version does Quillpress need?", [hit])[0] == (
        "Quillpress needs Ruby 3.2 or later.")


def test_a_myst_admonition_is_quoted_as_prose_and_its_last_line_is_no_title() -> None:
    # The body of "```{note}" is prose, and a line above a closing fence (or a tab's
    # "````") is not a title underlined by backticks; a reST "~~~" underline still is one.
    text = ("```{note}\nThe kettle listens on port 7341 by default.\n```\n\n"
            "````{tab} Linux\n```\n~/.cache/kettle\n```\n\n"
            "Kettle also honours `XDG_CACHE_HOME` on Linux.\n````\n")
    hit = make_hit("kettle#1", text)
    assert quotes("Which port does the kettle listen on by default?", [hit]) == [
        "The kettle listens on port 7341 by default."]
    assert quotes("Which environment variable does Kettle honour on Linux?", [hit]) == [
        "Kettle also honours `XDG_CACHE_HOME` on Linux."]
    headings = [text[s.start:s.end] for s in sentences(text) if s.heading]
    assert headings == []
    rest = "Caching\n~~~~~~~\n\nEntries expire.\n"
    assert [rest[s.start:s.end] for s in sentences(rest) if s.heading] == ["Caching"]


def test_an_html_heading_is_a_title_never_a_quote() -> None:
    text = '<h2 align="center"><b>Brewing limits</b></h2>\n\nA brew steeps for at most 300 s.\n'
    [heading, body] = sentences(text)
    assert heading.heading and not body.heading
    span = title_span(text, heading)
    assert span is not None and text[span[0]:span[1]] == "Brewing limits"
    hit = make_hit("brew#1", text)
    assert quotes("How long may a brew steep?", [hit]) == ["A brew steeps for at most 300 s."]


def test_a_simple_table_row_is_quoted_without_the_row_above() -> None:
    text = ("=========  ===========================\nName       Meaning\n"
            "=========  ===========================\n``a|b``    Either ``a`` or ``b``.\n"
            "``--dry``  Show what would be brewed.\n=========  ===========================\n")
    hit = make_hit("flags#1", text, source="flags.rst")
    assert quotes("What does --dry do?", [hit]) == ["``--dry``  Show what would be brewed."]


def test_an_option_list_item_is_quoted_alone() -> None:
    text = ("Options\n-------\n\n-a, --all        Show hidden kettles as well.\n"
            "--depth=N        Descend at most N levels below the start folder.\n"
            "-q               Print nothing but errors.\n")
    hit = make_hit("cli#1", text, source="cli.rst")
    assert quotes("What does the --depth option do?", [hit]) == [
        "--depth=N        Descend at most N levels below the start folder."]


def test_a_how_to_question_gets_the_setting_after_a_sentence_with_only_numbers() -> None:
    # The best sentence restates the problem (with its numbers); the way out names a setting.
    text = ("The Frobnicator server crashes when it reaches the file watcher limit of about "
            "8,192 files.\n\nExclude the folders with many files through `frob.watch.exclude`.\n")
    question = ("How do I avoid the crash when the Frobnicator server reaches the file watcher "
                "limit?")
    assert quotes(question, [make_hit("frob#1", text)]) == [
        "The Frobnicator server crashes when it reaches the file watcher limit of about 8,192 "
        "files.",
        "Exclude the folders with many files through `frob.watch.exclude`."]


def test_the_numbers_of_a_link_are_no_value_the_sentence_states() -> None:
    text = ("The Frobnicator server limits the header size because of "
            "[CVE-2031-40404](https://cve.example.org/CVE-2031-40404).\n\n"
            "Start it with `--max-header-kb` to change it.\n")
    question = "How do I get past the header size limit of the Frobnicator server?"
    assert quotes(question, [make_hit("frob#2", text)])[1:] == [
        "Start it with `--max-header-kb` to change it."]
    assert literals("See [RFC 9110](https://example.org/rfc9110) and CVE-2031-40404.") == (
        "9110",)


def test_the_kind_of_value_a_question_asks_for() -> None:
    assert value_kind("How many retries does the client make?") == "number"
    assert value_kind("消息最多能保存多长时间？") == "number"
    assert value_kind("タイムアウトは何ミリ秒ですか？") == "number"
    assert value_kind("How can I make -h work as a help flag?") == "name"
    assert value_kind("怎样开启权限控制？") == "name"
    assert value_kind("どうすればよいですか？") == "name"
    assert value_kind("Which port does the server listen on?") == "any"
    assert of_kind(("8,192", "frob.watch.exclude", "4 kib"), "name") == [
        "frob.watch.exclude", "4 kib"]
    assert of_kind(("8,192", "frob.watch.exclude", "4 kib"), "number") == ["8,192", "4 kib"]


def test_a_default_question_gets_the_default_line_when_the_best_sentence_gives_another_value(
) -> None:
    # The description holds a literal (`0`), but not the default the question asks for.
    text = ("## frob.inlineLimit\n\n- **Type:** `number`\n- **Default:** `2048`\n\n"
            "Frob inlines imported images smaller than this limit as data URLs. "
            "Set `0` to turn inlining off.\n")
    hit = make_hit("frob#3", text, heading="Frob Options › frob.inlineLimit")
    assert quotes("By default, below which size does Frob inline imported images as data URLs?",
                  [hit]) == [
        "Frob inlines imported images smaller than this limit as data URLs. Set `0` to turn "
        "inlining off.",
        "- **Default:** `2048`"]


def test_a_sentence_states_a_default_when_a_value_follows_the_word() -> None:
    assert states_default("Defaults to `600`.")
    assert states_default("- **Default:** `2048`")
    assert states_default("\u9ed8\u8ba4\u4e3a15000\u3002")  # 默认为15000。
    assert not states_default("The default is used. Set it to `3`.")
    assert asks_default("What is the default port?") and not asks_default("Which port?")
    # A signature written as one (in inline code, or after "def") states its defaults; a
    # call in a code example passes a value.
    assert states_default("* `Kettle(cups=4, strength=None)`")
    assert states_default("def brew(kettle, seconds=180):")
    assert not states_default("await kettle.brew(seconds=30)")


def test_a_signature_with_the_default_answers_what_holds_when_nothing_is_passed() -> None:
    text = ("## KettleError\n\nRaise `KettleError` with a status such as `400`.\n\n"
            "* `KettleError(status=418, detail=None)`\n\nAny status code may be given.\n")
    hit = make_hit("errors#2", text, heading="Errors \u203a KettleError")
    assert quotes("Which status does KettleError use if I don't pass one?", [hit])[0] == (
        "* `KettleError(status=418, detail=None)`")


def test_an_introduced_block_goes_on_with_its_indented_lines_after_a_blank_line() -> None:
    # A reST directive's body, and a list item's own code block, follow a blank line.
    rst = ("This example turns the short flag on:\n\n.. frob:example::\n\n"
           "    SETTINGS = dict(short_flags=['-q'])\n\nUnrelated prose.")
    end = introduced_end(rst, rst.index(":") + 1)
    assert rst[:end].endswith("SETTINGS = dict(short_flags=['-q'])")
    md = ("To fix it:\n\n- raise the limit:\n\n  ```shell\n  $ frob --limit 9000\n  ```\n\n"
          "- or exclude folders\n\n### Next section\n")
    end = introduced_end(md, md.index(":") + 1)
    assert md[:end].endswith("- or exclude folders")


def test_a_sentence_leaving_its_subject_to_the_heading_still_answers() -> None:
    # Reference pages name the setting in the heading and describe it without the name.
    hit = make_hit("cfg.rst#7", "Sets how long a finished upload is kept, in hours.\n",
                   heading="Settings › keep_uploads", source="cfg.rst")
    assert quotes("What does keep_uploads do?", [hit]) == [
        "Sets how long a finished upload is kept, in hours."]


def test_headings_numbered_or_summary_lines_are_never_the_quote() -> None:
    text = ("### 6. Publish the release on GitHub\n\nCreate the GitHub release from the tag.\n\n"
            "<summary><b>Older GitHub release notes</b></summary>\n\n"
            "Notes of older releases stay on the GitHub release page.\n")
    hit = make_hit("rel.md#3", text, heading="Releasing")
    for unit in units([hit], 1):
        assert not unit.text.startswith(("###", "Publish", "<summary")), unit.text
    summary = next(s for s in sentences(text) if text[s.start:s.end].startswith("<summary"))
    assert summary.heading
    span = title_span(text, summary)
    assert span is not None and text[span[0]:span[1]] == "Older GitHub release notes"


def test_markup_only() -> None:
    assert markup_only(":members:")
    assert markup_only(":members:\n\n.. autoclass:: Result\n   :members:")
    assert markup_only(".. versionadded:: 2.1")
    assert not markup_only(":param limit: The most retries.")
    assert not markup_only(":members:\nSets the limit.")
    assert not markup_only("")


def test_a_code_line_is_not_added_for_the_name_of_the_tool_its_page_is_about() -> None:
    # The page's title and heading already say which tool the quote is about; a config line
    # naming the tool adds nothing the question asked for.
    text = ("Set `maxSteam` to bound the steam level of every recipe.\n\n"
            "```json\n{\n  \"kettle-lint\": {\n    \"maxSteam\": 3\n  }\n}\n```\n")
    hit = make_hit("kettle#2", text, heading="kettle-lint \u203a Options", title="kettle-lint",
                   source="kettle-lint.md")
    assert quotes("Which kettle-lint option bounds the steam level?", [hit]) == [
        "Set `maxSteam` to bound the steam level of every recipe."]


def test_a_chinese_question_with_words_of_context_is_answered_by_the_sentence_it_asks_for() -> None:
    answer = "发送失败时，客户端会自动重试，重试次数由 retryTimes 参数控制，默认为 3。"
    hit = make_hit("client#1", answer + "\n\n日志默认写入 logs 目录。\n",
                   heading="客户端配置", title="客户端", source="client.md")
    question = ("我们这边的客户端在发送失败以后，我想让它能够多重试几次，"
                "这个时候应该去改哪个参数呢？")
    assert quotes(question, [hit]) == [answer]


def test_links_only() -> None:
    assert links_only("- [Retry budget design notes](https://example.org/notes/retry)")
    assert links_only("> https://example.org/frob/issues/12")
    assert links_only("**See also:** [Timeouts](/guide/timeouts#per-call)")
    assert links_only("* 参考: [リトライの設計](https://example.org/ja/retry)")
    assert links_only("* `Frob manual <https://example.org/frob>`_")
    # a README's badges, images inside links by reference
    assert links_only("[![npm version][npm-image]][npm-url]\n"
                      "[![License][license-image]][license-url]")
    assert not links_only("See [the guide][guide] for the limits.")
    assert not links_only("See [Timeouts](/guide/timeouts) for the per-call limit.")
    assert not links_only("Pass `--force` to rebuild everything: https://example.org/force")
    assert not links_only("Retries stop after five attempts.")
    assert not links_only("")


def test_a_link_list_is_not_quoted_however_many_question_words_its_link_text_holds() -> None:
    text = ("Frob retries a failed upload three times, waiting two seconds between tries.\n\n"
            "- [Why frob retries uploads: the retry budget](https://example.org/retry-budget)\n")
    hit = make_hit("frob#1", text, heading="Uploads")
    assert quotes("Why does frob retry failed uploads, and how often?", [hit]) == [
        "Frob retries a failed upload three times, waiting two seconds between tries."]
    only_links = make_hit("frob#2", "- [Why frob retries uploads](https://example.org/retry)\n"
                          "- [The retry budget](https://example.org/budget)\n",
                          heading="Further reading")
    draft = extractive_answer("Why does frob retry uploads?", [only_links])
    assert draft.status == NO_EVIDENCE


def test_a_bare_field_marker_introduces_only_its_indented_body() -> None:
    # A directive option (":members:") ends in ":" but owns no paragraph after it; a field
    # whose body sits indented below it does own that body.
    rst = ".. autoclass:: Outcome\n   :members:\n\nCall ``run()`` to start.\n"
    end = rst.index(":members:") + len(":members:")
    assert introduced_end(rst, end) == end
    field = ":param limit:\n    The most retries.\n\nUnrelated prose.\n"
    assert field[:introduced_end(field, field.index("\n"))].endswith("The most retries.")


def test_the_answer_closest_in_meaning_also_gets_the_value_of_its_section() -> None:
    # The semantic fallback quotes the sentence nearest the question (here by a lexical hash
    # embedding); it restates the problem, and the setting is in the section's next sentence.
    text = ("Frob refuses to start from a cron job when the locale of the job is plain ASCII."
            "\n\nExport `FROB_LOCALE=C.UTF-8` in the job's environment first.\n")
    hit = make_hit("frob#4", text)
    draft = semantic_answer("How do I make Frob start from a cron job with an ASCII locale?",
                            [hit], HashEmbedder(256), 0.1)
    assert [c.quote for c in draft.citations] == [
        "Frob refuses to start from a cron job when the locale of the job is plain ASCII.",
        "Export `FROB_LOCALE=C.UTF-8` in the job's environment first."]


def test_the_semantic_answer_adds_a_quote_covering_more_of_the_question() -> None:
    failure = make_hit("export#2", "An export stops halfway when the disk is nearly full.\n",
                       heading="Exports › Failures")
    schedule = make_hit("sched#5", "Each nightly run keeps its log in /var/log/exporter.log "
                        "for a week.\n", heading="Scheduling")
    draft = semantic_answer("Why does my nightly export stop halfway through, and where is "
                            "its log kept?", [failure, schedule], HashEmbedder(256), 0.1)
    assert [c.quote for c in draft.citations] == [
        "An export stops halfway when the disk is nearly full.",
        "Each nightly run keeps its log in /var/log/exporter.log for a week."]


def test_a_bold_faq_question_is_quoted_with_the_answer_below_it() -> None:
    text = ("## 3 存储\n\n1. **归档文件在磁盘上能留多长时间？**\n\n"
            "   归档文件最多留 5 天，之后清理。\n\n2. **单个归档文件多大？**\n\n   通常是 64MB\n")
    hit = make_hit("faq#3", text, heading="3 存储")
    assert quotes("归档文件在磁盘上默认能留多长时间？", [hit]) == [
        "1. **归档文件在磁盘上能留多长时间？**\n\n   归档文件最多留 5 天，之后清理。"]


def test_the_words_of_an_introduced_code_block_count_for_the_sentence_introducing_it() -> None:
    # The sentence names the stream, its code block names the call the question asks about.
    text = ("Output goes to the terminal by default.\n\n"
            "To send it to the error stream instead, pass ``err=True``::\n\n"
            "    shout.echo_line('disk full', err=True)\n")
    hit = make_hit("out#2", text, heading="Output")
    assert quotes("How do I make shout.echo_line write to the error stream?", [hit]) == [
        "To send it to the error stream instead, pass ``err=True``::\n\n"
        "    shout.echo_line('disk full', err=True)"]


def test_a_question_about_what_holds_when_nothing_is_set_gets_the_default_line() -> None:
    text = ("## output.hashLength\n\n- **Type:** `number`\n- **Default:** `8`\n\n"
            "The hash length used in output file names. Longer hashes collide less often.\n")
    hit = make_hit("out#9", text, heading="Output options › output.hashLength")
    assert quotes("If I don't set output.hashLength, what length do file name hashes get?",
                  [hit])[-1] == "- **Default:** `8`"
    text = ("## output.hashLength\n\n- **型:** `number`\n- **デフォルト:** `8`\n\n"
            "出力ファイル名に使うハッシュの長さです。長いハッシュほど衝突しにくくなります。\n")
    hit = make_hit("out#9", text, heading="出力オプション › output.hashLength")
    question = "output.hashLength を指定しない場合、出力ファイル名のハッシュの長さは何文字ですか？"
    # 指定しない asks for the default as デフォルト says it: the default line may go first.
    assert "- **デフォルト:** `8`" in quotes(question, [hit])
    assert asks_default("不设置 hashLength 的话是多少？")
    assert not asks_default("How do I set hashLength?")
    # "Not set by hand", "with no options", "nothing set" (Chinese, Japanese).
    assert asks_default("不手动指定 hashLength 的话是多少？")
    assert asks_default("オプションなしで使うとハッシュは何文字？")
    assert asks_default("何も設定していないときハッシュは何文字？")
    assert asks_default("引数なしで実行するとどうなる？")
    assert not asks_default("オプションの一覧はどこ？")


def test_a_letter_abbreviation_in_the_question_is_not_one_of_its_terms() -> None:
    from glassrag.answer.scoring import question_terms

    assert question_terms("How do I keep a block unwrapped, e.g. a table?") == question_terms(
        "How do I keep a block unwrapped, a table?")
    text = ("Long help text is rewrapped to the terminal width.\n\n"
            "To keep one block unwrapped, put a line holding only ``\\b`` before it.\n")
    hit = make_hit("help#4", text, heading="Help texts")
    assert quotes("How do I keep one block of help text unwrapped, e.g. a table or i.e. a "
                  "diagram?", [hit])[0] == (
        "To keep one block unwrapped, put a line holding only ``\\b`` before it.")


def test_chinese_question_words_are_not_terms_the_answer_must_hold() -> None:
    from glassrag.answer.scoring import question_terms

    assert not {"哪个", "多少", "几次"} & set(question_terms("哪个参数决定重试几次，默认是多少？"))
    text = "归档默认关闭。设置 archiveCompress=true 可以开启压缩归档。\n"
    hit = make_hit("zh#1", text, heading="归档")
    assert quotes("哪个开关开启压缩归档？", [hit]) == [
        "设置 archiveCompress=true 可以开启压缩归档。"]


def test_japanese_nani_words_are_question_words_too() -> None:
    # 何秒 / 何回 / 何も (how many seconds, how many times, nothing) are asked, never stated:
    # counted, they hold a question's weight that no answer can cover.
    from glassrag.answer.scoring import question_terms

    question = "heartbeat を何も指定しなかったら、Ping を送る間隔は何秒になりますか？"
    assert not {"何も", "何秒"} & set(question_terms(question))
    text = ("``heartbeat`` には秒数を指定します。引数を指定しない場合、Ping の間隔は 10 秒です。\n")
    hit = make_hit("ws#3", text, heading="WebSocket")
    assert extractive_answer(question, [hit]).status == ANSWERED


def test_a_word_written_short_matches_it_written_long() -> None:
    text = ("Hooks run in the order they were registered.\n\n"
            "Asynchronous hooks run in no particular order.\n")
    hit = make_hit("hooks#2", text, heading="Hooks")
    assert quotes("Do async hooks run in order?", [hit])[0] == (
        "Asynchronous hooks run in no particular order.")


def test_a_line_holding_none_of_the_question_words_is_not_quoted_before_one_that_does() -> None:
    # Every line of a section titled with the question's words covers the question through
    # its heading; the version directive says nothing about what the setting does.
    text = ("RETRY_LIMIT\n-----------\n\n.. versionadded:: 2.1\n\n"
            "The ``RETRY_LIMIT`` setting caps how many times a failed upload is tried again.\n")
    hit = make_hit("envvar/RETRY_LIMIT.rst#1", text, heading="RETRY_LIMIT", title="RETRY_LIMIT",
                   source="envvar/RETRY_LIMIT.rst")
    assert quotes("What does RETRY_LIMIT do?", [hit])[0] == (
        "The ``RETRY_LIMIT`` setting caps how many times a failed upload is tried again.")


def test_a_section_whose_lines_hold_none_of_the_question_words_answers_nothing() -> None:
    # The heading covers the question; the lines under it are directive markup that say
    # nothing about it, so no quote answers.
    text = (".. versionadded:: 2.1\n\n.. autoclass:: Outcome\n   :members:\n")
    hit = make_hit("api.rst#4", text, heading="Testing › Capturing stderr separately",
                   source="api.rst")
    question = "How do I capture stderr separately when testing?"
    draft = extractive_answer(question, [hit])
    assert draft.status == NO_EVIDENCE
    assert "question's words itself" in str(draft.notes["reason"])
    # The same section with a sentence of its own answers.
    answered = replace(hit, chunk=replace(hit.chunk, text=text + "\nPass ``mix_stderr=False`` "
                                          "to keep stderr apart from stdout.\n"))
    assert quotes(question, [answered]) == [
        "Pass ``mix_stderr=False`` to keep stderr apart from stdout."]


def test_a_question_asking_which_command_gets_the_title_of_the_section_that_answers() -> None:
    # A reference page is titled with the command's name; its sentences never repeat it.
    text = ("flush_cache\n-----------\n\nEmpties the cache for the current directory and below.\n"
            "\nThis command runs by itself when the ``Cleanup`` module is loaded.\n")
    hit = make_hit("command/flush_cache.rst#1", text, heading="flush_cache",
                   title="flush_cache", source="command/flush_cache.rst")
    # The short line after them adds the question's "command" (max_short_quotes).
    assert quotes("Which command empties the cache for the current directory?", [hit]) == [
        "flush_cache", "Empties the cache for the current directory and below.",
        "This command runs by itself when the ``Cleanup`` module is loaded."]
    # A Markdown heading is quoted without its marks.
    md = "### `store.flush()`\n\nEmpties the cache of the store and everything below it.\n"
    assert quotes("Which call empties the cache of the store?",
                  [make_hit("api.md#3", md, heading="API › store.flush()")]) == [
        "`store.flush()`", "Empties the cache of the store and everything below it."]


def test_a_question_asking_which_version_gets_the_changelog_title_the_entry_sits_under() -> None:
    # A changelog states the version once, in the section title; its entries never repeat it.
    md = ("## v2.4.0 (2024.03.18)\n\n- feat: the sidebar can be folded\n\n"
          "## v2.3.1 (2023.11.02)\n\n- fix: search ignored accented letters\n")
    hit = make_hit("CHANGES.md#1", md, heading="Changes", source="CHANGES.md")
    assert quotes("Which version lets the sidebar be folded?", [hit]) == [
        "v2.4.0 (2024.03.18)",
        "- feat: the sidebar can be folded"]
    rst = ("Version 7.1 --- 2022-05-04\n--------------------------\n\n"
           "- Reports can now be written as JSON.\n")
    assert quotes("In which release did reports get a JSON format?",
                  [make_hit("changes.rst#2", rst, source="changes.rst")], FLOOR_ONLY) == [
        "Version 7.1 --- 2022-05-04", "- Reports can now be written as JSON."]
    # Any other number in a title answers no count: "Step 3" says nothing of how many.
    steps = "Step 3\n------\n\nThe worker restarts after a crash.\n"
    draft = extractive_answer("How many times does the worker restart after a crash?",
                              [make_hit("guide.rst#3", steps, source="guide.rst")])
    assert draft.status == NO_EVIDENCE and not draft.citations


def test_a_changelog_entry_answers_which_version_with_its_heading_path_in_the_label() -> None:
    # The release is named once, in a title above the chunk; the label says where the entry is.
    hit = make_hit("CHANGES.md#7", "### Added\n\n- The sidebar can be folded.\n",
                   heading="Changelog › 2.4.0 (2024-03-18) › Added", source="CHANGES.md")
    draft = extractive_answer("In which version can the sidebar be folded?", [hit])
    assert draft.status == ANSWERED
    assert [c.quote for c in draft.citations] == ["- The sidebar can be folded."]
    assert draft.text == ("Based on CHANGES.md (Changelog › 2.4.0 (2024-03-18) › Added): "
                          "- The sidebar can be folded.")
    # Asked anything else, the label is the source alone.
    draft = extractive_answer("Can the sidebar be folded?", [hit])
    assert draft.text == "Based on CHANGES.md: - The sidebar can be folded."


def test_a_unit_repeating_only_the_questions_words_answers_no_what_or_which() -> None:
    # The best hit's list item names the file the question names, under a heading with the
    # question's other words; the table it asks for is in a lower hit.
    listing = make_hit("files.md#1", "- pyproject.toml\n- harbour.cfg\n",
                       heading="Settings table", source="files.md")
    answer = Hit(chunk=make_hit("config.md#1", "The settings of pyproject.toml are held in "
                                "the ``[tool.harbour]`` table.\n", source="config.md").chunk,
                 score=0.7)
    question = "Which table of pyproject.toml holds the settings?"
    assert quotes(question, [listing, answer]) == [
        "The settings of pyproject.toml are held in the ``[tool.harbour]`` table."]
    # A yes/no question may be answered in its own words.
    assert quotes("Is pyproject.toml read?", [make_hit("f.md#2", "- pyproject.toml is read.\n")]) \
        == ["- pyproject.toml is read."]


def test_a_section_titled_with_no_name_takes_the_name_from_the_page_title_line() -> None:
    # The page opens with its name; the section that answers ("Basic Form") names nothing,
    # and its synopsis placeholder ``<dir>`` is no value of the page's.
    opening = make_hit("command/flush_cache.rst#1",
                       "flush_cache\n-----------\n\nCache maintenance for a project.\n",
                       title="flush_cache", source="command/flush_cache.rst")
    section = make_hit("command/flush_cache.rst#2",
                       "Basic Form\n^^^^^^^^^^\n\nEmpties the cache kept for ``<dir>`` and "
                       "every directory below it.\n",
                       heading="flush_cache › Basic Form", title="flush_cache",
                       source="command/flush_cache.rst")
    assert quotes("Which command empties the cache kept for every directory below?",
                  [section, opening]) == [
        "flush_cache", "Empties the cache kept for ``<dir>`` and every directory below it."]
    # Another page's title is not this section's name.
    other = make_hit("command/load_cache.rst#1",
                     "load_cache\n----------\n\nReads a cache.\n", title="load_cache",
                     source="command/load_cache.rst")
    assert quotes("Which command empties the cache kept for every directory below?",
                  [section, other]) == [
        "Empties the cache kept for ``<dir>`` and every directory below it."]


def test_asked_for_the_default_the_stated_default_outranks_a_value_in_a_better_hit() -> None:
    # The best hit is a tutorial that mentions a size; the reference's option list, ranked
    # lower, states the default.
    tutorial = make_hit("guide.md#4", "Reads arrive in pieces of 16 KiB when no `bufferSize` "
                        "is passed to `pipe.open()`.\n", source="guide.md")
    reference = make_hit("pipe.md#9", "* `bufferSize` {integer} **Default:** `16 * 1024`\n",
                         heading="Pipes › pipe.open(path[, options])", source="pipe.md")
    for score in (0.75, 0.65):  # at 0.65 the tutorial is still quoted with a 0.1 bonus
        lower = Hit(chunk=reference.chunk, score=score)
        assert quotes("What is the default bufferSize of pipe.open()?", [tutorial, lower])[0] \
            == "* `bufferSize` {integer} **Default:** `16 * 1024`"


def test_a_synopsis_placeholder_is_not_a_literal_value() -> None:
    assert literals("Builds ``<name>`` from ``<source>`` with ``--fast`` in 3 passes") == (
        "--fast", "3")


def test_a_question_asking_since_which_version_wants_a_number() -> None:
    assert value_kind("Since which CMake version does the variable exist?") == "number"
    assert value_kind("从哪个版本开始支持这个功能？") == "number"
    assert value_kind("どのバージョンから使えますか？") == "number"
    text = ("DEPLOY_KEY\n----------\n\n.. versionadded:: 4.2\n\n"
            "Names the key that the deploy step signs with, as given by :option:`-K`.\n")
    hit = make_hit("envvar/DEPLOY_KEY.rst#1", text, heading="DEPLOY_KEY", title="DEPLOY_KEY",
                   source="envvar/DEPLOY_KEY.rst")
    assert any("4.2" in q for q in quotes("Since which version does DEPLOY_KEY exist?", [hit]))


def test_a_fused_hit_that_bm25_scored_near_the_best_stands_near_the_best() -> None:
    # Hybrid scores fall steeply below the best (each retriever counts from a floor of its
    # candidates): the second hit's fused score is 0.43 of the first's, its BM25 score 0.98.
    question = "How large is the read buffer of a file stream?"
    general = make_hit("streams#1", "Streams read data in pieces, and the read buffer of a "
                       "stream decides how large a piece is.", heading="Streams › Buffering")
    specific = make_hit("files#4", "* `bufferSize` {integer} The read buffer of a file "
                        "stream, in bytes. **Default:** `65536`.", heading="Files › openStream()")
    first = replace(general, score=1.45, scores={"bm25": 20.0, "dense": 0.87, "weighted": 1.45})
    second = replace(specific, score=0.62,
                     scores={"bm25": 19.6, "dense": 0.85, "weighted": 0.62})
    assert hit_standing(second, 1.45, 20.0) == pytest.approx(0.98)
    assert {u.chunk.chunk_id: u.standing for u in units([first, second], 5)} == {
        "streams#1": 1.0, "files#4": pytest.approx(0.98)}
    assert quotes(question, [first, second])[0].startswith("* `bufferSize`")
    # A BM25 hit stands by its score alone, as does a hit only one retriever found, or
    # one a reranker has scored since.
    reranked = {"bm25": 19.6, "dense": 0.85, "weighted": 0.62, "rerank": 0.62}
    assert hit_standing(replace(specific, score=0.62, scores=reranked), 1.45, 20.0) == \
        pytest.approx(0.62 / 1.45)
    assert hit_standing(replace(specific, score=10.0, scores={"bm25": 10.0}), 20.0, 20.0) == 0.5
    assert hit_standing(replace(specific, score=0.3, scores={"dense": 0.9, "weighted": 0.3}),
                        1.45, 20.0) == pytest.approx(0.3 / 1.45)


def test_the_sentence_holding_the_question_words_in_its_order_is_quoted() -> None:
    # Both sentences hold every word of the question; only the second says them in the
    # question's order ("close idle connections").
    text = ("Idle clients make the server close its connections, one by one.\n\n"
            "In the end the server will close idle connections, one by one.\n")
    assert quotes("When does the server close idle connections?", [make_hit("net#1", text)]) \
        == ["In the end the server will close idle connections, one by one."]
    [unit] = [u for u in units([make_hit("net#1", text)], 5) if u.start > 0 and u.size == 1]
    assert ("close", "idl") in unit.pairs and ("idl", "connect") in unit.pairs


def test_a_value_question_gets_the_default_from_the_section_of_the_setting_its_answer_names(
) -> None:
    # A guide says which setting governs the behaviour; the reference section titled with
    # that setting, also among the evidence, states its value.
    guide = make_hit("logging.md#2", (
        "Old log files are removed from the `logs-dir` when there are more of them than "
        "`logs-max` allows, oldest first.\n"), heading="Logging › Retention")
    reference = make_hit("config.md#9", (
        "#### `logs-max`\n\n* Default: 10\n* Type: Number\n\n"
        "The maximum number of log files to store.\n"), heading="Settings › `logs-max`",
        source="config.md")
    assert quotes("How many log files are kept before the oldest are removed?",
                  [guide, reference]) == [
        "Old log files are removed from the `logs-dir` when there are more of them than "
        "`logs-max` allows, oldest first.", "* Default: 10"]


def test_the_default_of_a_setting_a_quote_names_comes_from_the_directive_documenting_it(
) -> None:
    # The guide's sentence names PERMANENT_SESSION_LIFETIME; the reference documents it with
    # ".. py:data::" (not a section title) and states the default there.
    guide = make_hit("security#15", (
        "For the session cookie, if ``session.permanent`` is set, then\n"
        ":data:`PERMANENT_SESSION_LIFETIME` is used to set the expiration.\n"), title="Security")
    reference = make_hit("config#8", (
        ".. py:data:: SESSION_COOKIE_SECURE\n\n    Browsers only send secure cookies over "
        "HTTPS.\n\n    Default: ``False``\n\n.. py:data:: PERMANENT_SESSION_LIFETIME\n\n"
        "    The lifetime of a permanent session.\n\n"
        "    Default: ``timedelta(days=31)``\n"), title="Configuration")
    answer = quotes("If a session is permanent, when does the cookie expire by default?",
                    [guide, reference])
    assert answer[-1] == "Default: ``timedelta(days=31)``"


def test_a_setting_named_by_the_question_itself_does_not_pull_in_its_section() -> None:
    guide = make_hit("logging.md#2", (
        "Old log files are removed when there are more of them than `logs-max` allows.\n"),
        heading="Logging › Retention")
    reference = make_hit("config.md#9", "#### `logs-max`\n\n* Default: 10\n",
                         heading="Settings › `logs-max`", source="config.md")
    got = quotes("What does logs-max control?", [guide, reference])
    assert "* Default: 10" not in got


def test_a_quantity_question_is_not_answered_by_quotes_that_state_no_quantity() -> None:
    hit = make_hit("scripts#1", (
        "Package scripts run in an environment that tells them about npm and the current "
        "lifecycle script.\n\nScripts that hang can be stopped with Ctrl-C.\n"))
    draft = extractive_answer("How many seconds may a lifecycle script that hangs run "
                              "before it is stopped?", [hit], FLOOR_ONLY)
    assert draft.status == NO_EVIDENCE
    assert "asks for a number" in str(draft.notes["reason"])


def test_a_port_question_needs_a_number_in_digits() -> None:
    # "two parts" is a quantity, not a port; a port is never written as a word.
    wordy = make_hit("demo#1", "The demo dev server has two parts: the app and the SDK.\n",
                     heading="Demo › Dev server")
    for question in ("Which port does the demo dev server listen on?",
                     "演示应用的开发服务器默认监听哪个端口？",
                     "デモの開発サーバーはどのポートで起動しますか？"):
        assert lacks_quantity(question, ["The demo dev server has two parts."]), question
        assert not lacks_quantity(question, ["The dev server listens on 5173."]), question
    draft = extractive_answer("Which port does the demo dev server listen on?", [wordy])
    assert draft.status == NO_EVIDENCE
    digits = make_hit("demo#2", "The demo dev server listens on port 5173 by default.\n",
                      heading="Demo › Dev server")
    assert quotes("Which port does the demo dev server listen on?", [digits]) == [
        "The demo dev server listens on port 5173 by default."]
    assert not lacks_quantity("How do I change the port?", ["Pass --port."])


def test_a_question_asking_when_needs_a_time_a_date_or_a_release_in_digits() -> None:
    for question in ("Kettle 4 のサポートはいつ終了しますか？",
                     "夜間ビルドは毎日何時に走りますか？",
                     "Kettle 4 的支持哪天结束？", "夜间构建每天几点运行？",
                     "At what time of day does the nightly build run?",
                     "On which date does support for Kettle 4 end?"):
        assert asks_when(question), question
        assert lacks_quantity(question, ["It is supported as a long-term release."]), question
        assert not lacks_quantity(question, ["Support ends on 2027-06-30."]), question
    # "When" and 什么时候 as often ask under which condition, and a date in prose may be
    # written in words ("in March").
    for question in ("When is the brew hook called?", "When should I pass --steam?",
                     "When did the brewery move to Porto?", "什么时候需要设置 steamLimit？"):
        assert not asks_when(question), question
    plain = make_hit("support#1", "Kettle 4 is supported as a long-term release.\n\n"
                     "Security fixes are backported to it.\n", heading="Support")
    draft = extractive_answer("On which date will support for Kettle 4 end?", [plain], CHOICE)
    assert draft.status == NO_EVIDENCE
    assert "when" in str(draft.notes["reason"])
    # The date is often in the sentence after the one naming what it dates: it states it.
    dated = make_hit("support#2", "Support for Kettle 4 ends with its last release.\n\n"
                     "* 2027-06-30: final patch.\n", heading="Support")
    assert quotes("On which date will support for Kettle 4 end?", [dated], AnswerSettings()) == [
        "Support for Kettle 4 ends with its last release.", "* 2027-06-30: final patch."]
    assert extractive_answer("On which date will support for Kettle 4 end?", [dated],
                             CHOICE).status == NO_EVIDENCE


def test_a_quantity_written_as_a_word_or_a_number_answers_a_quantity_question() -> None:
    for sentence in ("A failed fetch is retried twice before the install fails.",
                     "Claims must be filed within thirty days.",
                     "A failed fetch is retried 2 times before the install fails.",
                     "失败的拉取会重试两次。"):
        assert states_quantity(sentence, "how many times is a failed fetch retried?")
    assert not states_quantity("A failed fetch is retried.", "how many times?")
    # The question's own number is not the answer.
    assert not states_quantity("Version 3 retries failed fetches.", "how many in version 3?")
    hit = make_hit("fetch#1", "A failed fetch is retried twice before the install fails.\n")
    assert quotes("How many times is a failed fetch retried?", [hit]) == [
        "A failed fetch is retried twice before the install fails."]


_DOWNLOADS = "how many downloads run in parallel?"
_RELEASE = "starting with which release does the tool no longer run on python 3.8?"


@pytest.mark.parametrize(("sentence", "asked", "states"), [
    # Footnote marks and manual sections count nothing ...
    ("apt-get calls dpkg after downloading the archives[5] it needs.", _DOWNLOADS, False),
    ("For details, see the manual page papersize(5).", _DOWNLOADS, False),
    ("更新されたソースをダウンロードします。[79]", _DOWNLOADS, False),
    ("It runs 3 downloads at once; see apt.conf(5).", _DOWNLOADS, True),
    # ... nor do the issues and pull requests a changelog entry cites.
    ("- The tool no longer runs on Python 3.8 (#4452)", _RELEASE, False),
    ("- Add a DPI option [\\#140](https://example.org/pull/140)", _RELEASE, False),
    ("- :issue:`5034`: Python 3.8 is no longer supported.", _RELEASE, False),
    ("- Dropped Python 3.8 in 24.10.0 (#4452)", _RELEASE, True),
])
def test_reference_digits_state_no_quantity(sentence: str, asked: str, states: bool) -> None:
    assert states_quantity(sentence, asked) is states


def test_a_footnote_mark_answers_no_how_many_question() -> None:
    hit = make_hit("apt#1", "apt-get calls dpkg after downloading the archives[5] it needs.\n")
    draft = extractive_answer("How many downloads does apt-get run in parallel?", [hit])
    assert draft.status == NO_EVIDENCE and "asks for a number" in str(draft.notes["reason"])


def test_an_entry_citing_an_issue_is_labelled_with_its_release() -> None:
    # The entry's "(#4452)" is no release number; the release is in the heading path.
    hit = make_hit("changes#3", "- The tool no longer runs on Python 3.8 (#4452)\n",
                   heading="Change log › 24.10.0 › Removed", source="CHANGES.md")
    draft = extractive_answer("Our servers are stuck on Python 3.8. Starting with which "
                              "release does the tool no longer run on it?", [hit])
    assert draft.status == ANSWERED and "24.10.0" in draft.text


def test_the_quantity_may_be_in_the_block_a_quote_introduces() -> None:
    # The sentence ends in ":" and its quote carries the command line, which holds the number.
    hit = make_hit("compat#1", (
        "compat ファイルは debhelper の互換性レベルを決めます。新しいパッケージでは、次のように"
        "設定します:\n\n    $ echo 13 > debian/compat\n"))
    question = "新しいパッケージでは debhelper の互換性レベルをいくつに設定しますか？"
    assert asks_count(question)
    assert quotes(question, [hit])[-1].endswith("$ echo 13 > debian/compat")


def test_a_chinese_demonstrative_with_ji_counts_nothing() -> None:
    # 几 asks how many in 几秒 / 几个, not in 那几个 (those), 这几个, 哪几个, 好几 (several),
    # 十几, 没几个 or 几乎 (almost).
    assert asks_count("重发倒计时默认是几秒？") and asks_count("最多展示几条？")
    for question in ("Cascader 自带的那几个处理函数要从哪个路径引入？",
                     "这几个参数有什么区别？", "哪几个组件支持键盘操作？",
                     "好几个请求同时失败怎么办？", "几乎所有组件都支持吗？"):
        assert not asks_count(question), question
    hit = make_hit("cascader#4",
                   "合并选项的处理函数从 `zent/es/cascader/public-options-fns` 引入。\n")
    draft = extractive_answer("Cascader 自带的那几个合并选项的处理函数要从哪个路径引入？", [hit])
    assert draft.status == ANSWERED


def test_a_sentence_naming_what_follows_brings_the_code_block_after_it() -> None:
    # "the following command." / "以下のコマンド…。" / "如下命令。" point at the code below them
    # as a sentence ending in ":" does, across a blank line.
    for sentence in ("Run the following\ncommand to check every page of the site.",
                     "以下のコマンドを実行すると、サイトの全ページが検査されます。",
                     "执行如下命令，即可检查站点的全部页面。"):
        text = f"{sentence}\n\n```\nlinkcheck --all\n```\n\nOther prose."
        end = text.index("\n\n")
        assert text[:introduced_end(text, end)].endswith("linkcheck --all\n```")
    # In reST the code follows as a code directive and its indented body.
    rst = ("To run every check, use the following command.\n\n.. code-block:: sh\n\n"
           "    ./scripts/check-all\n\nOther prose.\n")
    assert rst[:introduced_end(rst, rst.index("\n"))].endswith("./scripts/check-all")
    japanese = ("テストの準備ができました。以下のコマンドを実行すると、"
                "付属のテストが全て実行されます。\n\n```\nrake spec\n```\n")
    hit = make_hit("test#2", japanese, heading="テスト")
    assert quotes("付属のテストを全部実行するコマンドは？", [hit])[0].endswith("rake spec\n```")


def test_a_sentence_not_pointing_ahead_brings_nothing_without_a_colon() -> None:
    # Without ":" or a word naming what follows, the block after a sentence is not its own;
    # nor is a paragraph or a list, which only ":" introduces.
    text = "The checker reads every page.\n\n```\nlinkcheck --all\n```\n"
    assert introduced_end(text, text.index("\n")) == text.index("\n")
    text = "The options are described below.\n\n- `--all`: every page\n"
    assert introduced_end(text, text.index("\n")) == text.index("\n")


def test_a_rest_link_target_introduces_nothing_and_a_block_stops_at_the_next_title() -> None:
    rst = (".. _changes_42:\n\nVersion 4.2 — 2016-07-26\n------------------------\n\n"
           "- Options given on the command line are not passed to subprocesses.\n")
    assert [rst[s.start:s.end] for s in sentences(rst) if s.tokens] == [
        "Version 4.2 — 2016-07-26",
        "- Options given on the command line are not passed to subprocesses."]
    hit = make_hit("changes#64", rst, heading="Version 4.2 — 2016-07-26")
    assert quotes("Are command line options passed to subprocesses?", [hit]) == [
        "- Options given on the command line are not passed to subprocesses."]
    listed = "The levels are:\n\n- low\n- high\n\nVersion 4.1\n-----------\n\nOlder notes.\n"
    assert listed[:introduced_end(listed, listed.index(":") + 1)].endswith("- high")


def test_default_asked_in_one_word_is_covered_by_a_sentence_saying_another() -> None:
    # 既定 and デフォルト (默认, default) are one word: the sentence saying the other covers it.
    text = ("アクセストークンは定期的に延長されます。\n\n"
            "デフォルトでは 5 分ごとにアクセストークンを延長します。\n")
    hit = make_hit("helpers#2", text, heading="ヘルパー")
    assert quotes("アクセストークンは既定では何分おきに延長されますか？", [hit])[0] == (
        "デフォルトでは 5 分ごとにアクセストークンを延長します。")


def test_what_size_or_a_unit_asks_for_a_number() -> None:
    # "At what header size in bytes": the answer is a number, so a sentence naming the
    # setting but no number is completed by its section's value line.
    assert value_kind("At what header size in bytes does it warn?") == "number"
    assert value_kind("What chunk size is used?") == "number"
    assert value_kind("How long is it kept, in seconds?") == "number"
    text = (".. py:data:: MAX_COOKIE_SIZE\n\n    Warn if cookie headers are larger than this many "
            "bytes. Defaults to\n    ``4093``. Set to ``0`` to disable the warning.\n")
    hit = make_hit("config#12", text, heading="Configuration")
    answer = " ".join(quotes("At what header size in bytes does it warn about a cookie?", [hit]))
    assert "4093" in answer


def test_japanese_initial_setting_asks_for_the_default() -> None:
    # 初期設定だと / 初期値 / 標準で ask what holds by default; 標準出力 (standard output) does not.
    assert asks_default("古いものを消すしきい値は、初期設定だと何MBですか？")
    assert asks_default("本文は標準で何文字までに切り詰められますか？")
    assert not names_default("補完スクリプトを標準出力に出力する。")
    text = ("自動クリーンアップは合計サイズで古いアーカイブを消す。\n\n"
            "- archive-max-size-mb : 合計サイズの上限（既定: 1024 MB）\n")
    hit = make_hit("config#14", text, heading="アーカイブ")
    question = "古いアーカイブを消す合計サイズのしきい値は、初期設定だと何MBですか？"
    assert quotes(question, [hit])[0] == "- archive-max-size-mb : 合計サイズの上限（既定: 1024 MB）"


def test_the_literal_bonus_goes_to_a_literal_of_the_kind_asked_for() -> None:
    # "How long" asks for a number: a name in the better hit is no answer's shape.
    hits = [replace(make_hit("warm#1", "The kettle waits while `keep_warm` is on.\n"), score=10.0),
            replace(make_hit("boil#2", "The kettle waits 30 s.\n"), score=9.5)]
    assert quotes("How long does the kettle wait?", hits) == ["The kettle waits 30 s."]


def test_a_row_of_a_table_with_a_default_column_states_its_default() -> None:
    # Asked for a default, a row of a props table gives it in its "default" column without
    # saying the word; a row whose description says "default" has no better claim to it.
    cases = [("| Prop | Description | Type | Default |",
              "|defaultIndex|the item selected by default|Number|`0`|",
              "|maxHeight|the most height; it scrolls beyond it|Number|`400`|",
              "By default, how tall may the sheet panel grow before its content scrolls?"),
             ("|属性|说明|类型|默认值|",
              "|defaultIndex|默认选中项|Number|`0`|",
              "|maxHeight|面板最高高度, 超出后可滚动|Number|`400`|",
              "动作面板默认超过多高之后就变成可滚动的？")]
    for header, other, row, question in cases:
        text = f"{header}\n|---|---|---|---|\n{other}\n{row}\n"
        hit = make_hit("sheet#3", text, heading="ActionSheet › Props")
        draft = extractive_answer(question, [hit], FLOOR_ONLY)
        best = draft.notes["sentences"][0]  # type: ignore[index]
        assert text[best["start"]:best["end"]] == row


def test_a_table_row_is_not_joined_by_a_quote_adding_only_its_header_words() -> None:
    # The row's header says "默认值" for it: the header line, which adds only that word,
    # is no second quote.
    text = ("| 参数名 | 默认值 | 说明 |\n| --- | --- | --- |\n"
            "| listenPort | 7300 | 中继监听客户端连接的端口 |\n"
            "| relayAddr | null | 上游中继地址 |\n"
            "| relayName | null | 中继名称 |\n| relayId | 0 | 中继编号，0 表示主节点 |\n"
            "| dataDir | $HOME/relay | 数据存放目录 |\n| logDir | $HOME/logs | 日志目录 |\n")
    hit = make_hit("relay#4", text, heading="中继配置")
    assert quotes("中继默认监听哪个端口？", [hit]) == [
        "| listenPort | 7300 | 中继监听客户端连接的端口 |"]


def test_a_yes_no_question_is_told_from_an_open_one_in_each_language() -> None:
    for question in ("Does my storage class have to support tagging?",
                     "カテゴリ機能には必ず対応させないといけませんか？",
                     "批量消息可以设置成延迟消息吗？", "监听器能不能一次拿到多条消息？"):
        assert asks_yes_no(question), question
    for question in ("Who decides whether a class supports tagging?", "tagging support",
                     "乔许·哈却森的职业是？", "タグはどこで設定しますか？", "怎么设置延迟消息？"):
        assert not asks_yes_no(question), question


def test_a_yes_no_question_gets_the_short_verdict_beside_the_sentence_with_its_words() -> None:
    # The verdict is the short sentence next to the one holding the question's words; a
    # question asking who or what is answered by that sentence alone.
    text = "Tagging is optional. Whether a storage class supports tagging is up to its author.\n"
    hit = make_hit("io#2", text, heading="Writing a storage class")
    assert quotes("Does my storage class have to support tagging?", [hit]) == [text.strip()]
    assert quotes("Who decides whether a storage class supports tagging?", [hit]) == [
        "Whether a storage class supports tagging is up to its author."]
    japanese = ("カテゴリ機能の実装は必須ではありません。"
                "対応させるかどうかは IO クラスの作者が判断します。\n")
    hit = make_hit("io#3", japanese, heading="IO クラスの作り方")
    assert quotes("IO クラスはカテゴリ機能に必ず対応させないといけませんか？", [hit]) == [
        japanese.strip()]


def test_a_question_asking_what_happens_unless_told_otherwise_asks_for_the_default() -> None:
    for question in ("Where does the tool keep wheels unless told otherwise?",
                     "Which port is used when nothing else is configured?",
                     "How large can a body be if I haven't changed anything?",
                     "Where does it create the folder unless I tell it otherwise?",
                     "如果我不传 tpl，倒计时按什么格式显示？",
                     "没传 timeout 时等多久？",
                     "elements オプションを何も渡さずに有効にした場合、どの属性が検査されますか？",
                     "ポートを指定せずに起動したら何番になりますか？"):
        assert asks_default(question), question
    assert not asks_default("How do I tell it which port to use?")
    text = ("## オプション\n\n`targets` オプションで検査する属性を要素ごとに指定できます。\n"
            "指定しない属性は検査しません。\n\nデフォルト: `{ '*': ['title', 'placeholder'] }`\n")
    hit = make_hit("rule#3", text, heading="require-label-text › オプション")
    question = ("require-label-text を targets オプションに何も渡さずに使うと、"
                "どの属性が検査されますか？")
    # 何も渡さずに asks for the default: the default line goes first, its option's sentence
    # with it.
    assert quotes(question, [hit]) == [
        "デフォルト: `{ '*': ['title', 'placeholder'] }`",
        "`targets` オプションで検査する属性を要素ごとに指定できます。"]


def test_a_further_quote_adding_a_small_share_of_the_question_is_quoted() -> None:
    text = ("#### language\n\n"
            "- The interface language of the admin site. Built in: `en_US`, `zh_CN`.\n"
            "- Since 0.1.1 the value is read from `LANGUAGE` or `LANG`, then the system, "
            "then `en_US`.\n"
            "- Note: setting this value does not switch the language by itself; "
            "follow the translation tutorial.\n")
    hit = make_hit("settings#7", text, heading="Settings › language")
    question = ("I put zh_CN into the language setting of the admin site. Does the interface "
                "language change at once?")
    assert quotes(question, [hit]) == [
        "- The interface language of the admin site. Built in: `en_US`, `zh_CN`.",
        "- Note: setting this value does not switch the language by itself; follow the "
        "translation tutorial."]


def test_a_quote_adding_a_small_share_does_not_state_the_quantity_asked_for() -> None:
    retries = make_hit("upload#3", "The client retries a failed upload until the `retries` "
                       "limit is reached.\n", heading="Uploads › Retries")
    sockets = make_hit("net#9", "An idle socket is closed after 30 seconds, and the connection "
                       "pool then gives up on it.\n", heading="Network › Sockets")
    # The socket quote adds "give" only: one term of the question's seven, under 15%.
    draft = extractive_answer("How many times does the client retry a failed file upload "
                              "before it gives up?", [retries, sockets])
    assert draft.status == NO_EVIDENCE
    assert "states one" in str(draft.notes["reason"])


def test_a_code_example_quoted_further_does_not_state_the_quantity_asked_for() -> None:
    fonts = make_hit("ui#2", "By default the terminal font limits which cells a bar can draw, and "
                     "wide characters take more room.\n", heading="Output › Fonts")
    example = make_hit("ui#5", "Rendering a meter:\n\n```python\n"
                       "with meter.render([1, 2, 3]) as bar:\n    for item in bar:\n"
                       "        work(item)\n```\n", heading="Output › Meters")
    question = "How many cells wide is the bar that meter.render draws by default?"
    # The example is quoted for `meter.render`; its list is the example's data, no width.
    draft = extractive_answer(question, [fonts, example])
    assert draft.status == NO_EVIDENCE
    assert "states one" in str(draft.notes["reason"])
    # A sentence adding the same words with a number in it may state the quantity.
    told = make_hit("ui#6", "Called as meter.render(steps), it shows 3 steps.\n",
                    heading="Output › Meters")
    assert extractive_answer(question, [fonts, told]).status == ANSWERED


def test_a_sentence_pointing_back_is_quoted_with_the_sentence_it_points_at() -> None:
    # "This tool" names nothing: the tool is in the sentence before, and the pair goes first.
    text = ("Unattended upgrades are handled by the tidewater package. This tool downloads and "
            "installs pending security updates every night from a cron job.\n\n"
            "Mirrors are listed in the sources file.")
    hit = make_hit("upgrades#1", text, heading="Keeping systems current")
    assert quotes("Which tool installs security updates every night?", [hit])[0] == (
        "Unattended upgrades are handled by the tidewater package. This tool downloads and "
        "installs pending security updates every night from a cron job.")
    # Pointing back at a label ("Note:" has too few words to be its subject) changes nothing.
    labelled = make_hit("upgrades#2", "Note: This tool installs security updates every night.")
    assert quotes("Which tool installs security updates every night?", [labelled]) == [
        "Note: This tool installs security updates every night."]


def test_leaning_back_needs_the_sentence_before_in_the_same_block() -> None:
    text = ("Unattended upgrades are handled by the tidewater package.\n\n"
            "This tool downloads and installs pending security updates every night.")
    (unit,) = [u for u in units([make_hit("u#1", text)], 5) if u.text.startswith("This")]
    assert not unit.leans_back
    joined = text.replace("\n\n", " ")
    leaning = [u for u in units([make_hit("u#2", joined)], 5) if u.text.startswith("This")]
    assert leaning and all(u.leans_back for u in leaning)


def test_asked_how_long_by_default_a_default_without_a_number_is_not_preferred() -> None:
    # Both state a default; only the row gives a length, which the question asks for.
    text = ("## Forecast model\n\n"
            "- While training, the forecast model writes its history to a folder, by default "
            "`output`.\n\n"
            "| Option | Meaning | Default |\n|---|---|---|\n"
            "| input_len | Length of the input window | `96` |\n")
    hit = make_hit("forecast.md#1", text, heading="Forecast model")
    assert quotes("How long a history does the forecast model read by default?", [hit],
                  FLOOR_ONLY)[0] == "| input_len | Length of the input window | `96` |"


def test_the_words_asking_what_holds_when_nothing_is_set_are_covered_by_the_default() -> None:
    # "Without setting": words documentation seldom writes, so left as plain terms they weigh
    # as the question's rarest and go to the sentence that happens to say "without".
    text = ("## members_order\n\n- **Type:** `str`, default: `\"alphabetical\"`\n\n"
            "A member without a docstring is still listed, in the order that is set.\n")
    hit = make_hit("members#4", text, heading="Members › members_order")
    question = "Without setting any ordering option, in what order are the members listed?"
    assert quotes(question, [hit])[0] == "- **Type:** `str`, default: `\"alphabetical\"`"
    assert unset_phrases(question) == "Without setting"
    assert unset_phrases("不手动指定的话，默认是多少？") == "不手动指定"
    assert unset_phrases("What is the default order?") == ""
