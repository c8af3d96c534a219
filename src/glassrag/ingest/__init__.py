"""Files to stored documents: discovery, roles rules, chunking, the ingest run."""
