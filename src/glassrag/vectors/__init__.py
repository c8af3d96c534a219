"""Vector index code on numpy and FAISS only: no SQLite, no glassrag records."""
