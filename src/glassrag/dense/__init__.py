"""Embedders and the glue between stored embeddings and the vector index."""
