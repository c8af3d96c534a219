"""The Latin words of CJK text are found without segmenting its Chinese runs: the same
tokens as the analyser's own English runs of that text, for any mix of scripts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from glassrag.text import analysis

_PIECES = st.sampled_from([
    "如何", "采集", "指标", "的", "。", "，", "消息队列", "カタカナ", "ひらがな", "한국어",
    "Prometheus", "RocketMQ", "cache_size", "QUIC", "v5", "2024", " ", "-", "x", "Ünïcode",
    "ｆｕｌｌ", "ＡＢＣ", "Café", "?", "\n",
])


@given(st.lists(_PIECES, min_size=1, max_size=12).map("".join))
@settings(max_examples=300, deadline=None)
def test_latin_tokens_are_the_english_runs(text: str) -> None:
    normal = analysis._normalize(text)
    english = [t for kind, _, tokens in analysis._runs(normal)
               if kind == "english" for t in tokens]
    assert analysis._latin_tokens(normal) == english

