"""Who may read a stored document version.

A version is readable by a principal allowed both by the roles that version was stored with
and by its document's current roles: loosening a document's roles never opens its older
text, and tightening them closes it. Shared by the version-text reads of the knowledge base
and by the traces, which carry version text as evidence.
"""

from __future__ import annotations

from glassrag.records import Principal
from glassrag.store.database import Store


def version_readable(roles: tuple[str, ...] | None, principal: Principal) -> bool:
    """Whether ``principal`` passes a version's own stored ``roles``."""
    # A version recorded before roles were kept per version (roles None) is for admins only.
    return principal.admin or (roles is not None and principal.can_read(roles))


def may_read_version(store: Store, content_hash: str, doc_id: str | None,
                     principal: Principal) -> bool:
    """Whether ``principal`` may read the version with ``content_hash`` (of ``doc_id`` only,
    if given; else of any document holding that text)."""
    versions = store.versions_with_hash(content_hash)
    candidates = {d for d, _ in versions} if doc_id is None else {doc_id}
    for candidate in candidates:
        current = store.document(candidate)
        if current is None or not principal.can_read(current.roles):
            continue
        if current.content_hash == content_hash or any(
                d == candidate and version_readable(roles, principal) for d, roles in versions):
            return True
    return False
