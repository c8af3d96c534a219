"""Lexical, plain-scorer and fused retrieval with the role filter inside the search."""
