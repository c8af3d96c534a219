"""Answers from evidence: the extractive answerer and the citation verifier."""
