"""A small BEIR-layout set with answers, written fresh for the evaluation tests."""

from __future__ import annotations

from pathlib import Path

from conftest import write_jsonl

CORPUS = [
    {"_id": "tesla_p0", "title": "Nikola_Tesla",
     "text": "Nikola Tesla was born in Smiljan in 1856.\n\nTesla financed his work with his "
             "patents."},
    {"_id": "eiffel_p0", "title": "Eiffel_Tower",
     "text": "The Eiffel Tower stands in Paris. The tower was finished in 1889."},
    {"_id": "DEV_0", "title": "长城", "text": "长城位于中国北方。长城全长两万多公里。"},
]


# (id, question, gold paragraph, gold answers)
QUESTIONS = [
    ("q1", "Where was Nikola Tesla born?", "tesla_p0", ["Smiljan"]),
    ("q2", "When was the Eiffel Tower finished?", "eiffel_p0", ["1889", "in 1889"]),
    ("q3", "长城位于哪里？", "DEV_0", ["中国 北方", "中国北方"]),  # spaces dropped for Chinese
    ("q4", "What colour is the cafeteria menu?", "eiffel_p0", ["blue"]),
    ("q5", "Where was Nikola Tesla born?", "eiffel_p0", ["SMILJAN"]),  # answer right, doc not
    ("q6", "How did Tesla finance his work?", "tesla_p0", ["lottery"]),
    # A yes/no question: the quote is the one sentence it asks about, not the value in the
    # paragraph before it.
    ("q7", "Did Tesla finance his work with patents?", "tesla_p0", ["Smiljan"]),
]


def qa_set(root: Path) -> Path:
    write_jsonl(root / "corpus.jsonl", CORPUS)
    write_jsonl(root / "queries.jsonl", [{"_id": q, "text": t} for q, t, _, _ in QUESTIONS]
                + [{"_id": "q8", "text": "Not judged: where is Paris?"}])
    write_jsonl(root / "answers.jsonl", [
        {"_id": q, "corpus-id": d, "answers": a, "answer_starts": [0] * len(a)}
        for q, _, d, a in QUESTIONS])
    (root / "qrels").mkdir()
    rows = [f"{q}\t{d}\t1" for q, _, d, _ in QUESTIONS] + ["q8\teiffel_p0\t0"]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows)
                                             + "\n", encoding="utf-8")
    return root
