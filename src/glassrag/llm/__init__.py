"""OpenAI-compatible model client, endpoint profiles and request bodies."""
