"""A question of many words carries context its answer does not repeat: at
``[answer] long_question_terms`` distinct words or more (English, or Chinese as segmented; not
Japanese or Korean, whose terms are pairs of characters), its best sentence needs only
LONG_QUESTION_SHARE of ``min_coverage``."""

from __future__ import annotations

import pytest
from tests.answer.test_answer_choice import make_hit

from glassrag.answer.extractive import extractive_answer
from glassrag.answer.scoring import question_terms
from glassrag.records import ANSWERED, NO_EVIDENCE
from glassrag.settings import LONG_QUESTION_SHARE, AnswerSettings

LONG = ("Our nightly studio crew keeps glazing chipped teacups twice and wastes kiln shelf "
        "space; which cooling schedule stops the glaze from crazing on porcelain?")
# Four of the question's seventeen terms (cool, schedul, craze, porcelain): 0.235 of it at
# equal weights, under 0.28 and over 0.8 of it.
ANSWER = "A slow cooling schedule prevents crazing on porcelain: drop 50 degrees an hour."
LONG_CHINESE = ("我们工作室的夜班人员总是重复给有缺口的茶杯上釉，浪费窑炉的架子空间，"
                "哪种冷却计划可以防止瓷器上的釉面开裂和变色？")
LONG_JAPANESE = ("夜間のスタジオ担当者が欠けた茶碗に何度も釉薬をかけて窯の棚を無駄にしています。"
                 "磁器の釉が割れない冷却スケジュールはどれですか？")
LONG_KOREAN = ("야간 작업실 직원이 이가 빠진 찻잔에 유약을 두 번씩 바르고 "
               "가마 선반 공간을 낭비합니다. "
               "도자기 유약이 갈라지지 않게 하는 냉각 일정은 무엇입니까?")


def test_the_share_required_falls_for_a_question_of_many_words() -> None:
    settings = AnswerSettings(min_coverage=0.28)
    assert settings.required_coverage(16, 16) == pytest.approx(0.28 * LONG_QUESTION_SHARE)
    assert settings.required_coverage(15, 15) == 0.28
    # Chinese: no short-question rule (None), the long one by its segmented words.
    assert settings.required_coverage(None, 21) == pytest.approx(0.28 * LONG_QUESTION_SHARE)
    # Japanese: neither.
    assert settings.required_coverage(None, None) == 0.28
    assert AnswerSettings(min_coverage=0.28, long_question_terms=0).required_coverage(
        20, 20) == 0.28


def test_a_long_question_is_answered_by_a_sentence_covering_less_of_it() -> None:
    terms = question_terms(LONG)
    assert len(terms) == 17
    weights = dict.fromkeys(terms, 1.0)
    hit = make_hit("kiln#3", ANSWER + "\n")
    draft = extractive_answer(LONG, [hit], AnswerSettings(min_coverage=0.28, context_chars=0),
                              term_weights=weights)
    assert draft.status == ANSWERED, draft.notes
    assert draft.notes["threshold"] == pytest.approx(0.28 * LONG_QUESTION_SHARE)
    assert [c.quote for c in draft.citations] == [ANSWER]
    off = AnswerSettings(min_coverage=0.28, long_question_terms=0, context_chars=0)
    refused = extractive_answer(LONG, [hit], off, term_weights=weights)
    assert refused.status == NO_EVIDENCE
    assert refused.notes["threshold"] == 0.28


@pytest.mark.parametrize(("question", "relaxed"), [(LONG_CHINESE, True),
                                                    (LONG_JAPANESE, False),
                                                    (LONG_KOREAN, False)])
def test_chinese_words_count_and_japanese_or_korean_pairs_do_not(question: str,
                                                                 relaxed: bool) -> None:
    assert len(question_terms(question)) >= 16
    hit = make_hit("kiln#4", "慢速冷却可以防止釉面开裂。ゆっくり冷ますと釉が割れにくくなります。\n")
    draft = extractive_answer(question, [hit], AnswerSettings(min_coverage=0.28))
    expected = 0.28 * LONG_QUESTION_SHARE if relaxed else 0.28
    assert draft.notes["threshold"] == pytest.approx(expected)
