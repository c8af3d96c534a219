"""Audits of a knowledge base in daily use, over the public :class:`~glassrag.KnowledgeBase`
API and the stored traces:

- :func:`glassrag.audit.stale.stale_answers`: past answers whose citations no longer hold;
- :func:`glassrag.audit.recheck.recheck`: a past question asked again as the same principal;
- :func:`glassrag.audit.why_not.why_not`: the first stage that dropped a document or passage;
- :func:`glassrag.audit.role_matrix.role_matrix`: every case asked once per role set.

Each function takes a knowledge base; the ingest hook (:mod:`.ingest_hook`) counts the past
answers an ingest made stale and keeps the failure log (:mod:`.failure_log`).
"""
