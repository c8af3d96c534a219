"""The source of truth: SQLite records, named migrations, traces, bearer tokens."""
