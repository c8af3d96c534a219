"""Every configuration in configurations.CONFIGURATIONS passes the conformance suite."""

from __future__ import annotations

from kb_conformance import KnowledgeBaseConformance


class TestKnowledgeBase(KnowledgeBaseConformance):
    """The whole suite, once per configuration."""
