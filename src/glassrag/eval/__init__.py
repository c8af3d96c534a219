"""Evaluation: behavioural cases, QA and BEIR benchmarks, metrics, the demo."""
