"""Reads on share links."""

import hashlib

from searches.models import ShareLink


def share_token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def share_link_by_token(token: str) -> ShareLink | None:
    """The live link for a token, or None (unknown or revoked)."""
    if not token or len(token) > 200:
        return None
    return (ShareLink.objects.select_related("problem", "search", "kernel", "other_kernel", "created_by")
            .filter(token_hash=share_token_hash(token), revoked_at=None).first())


def share_links_for(**target) -> list[ShareLink]:
    """Links pointing at one object, e.g. share_links_for(kernel=k), newest first."""
    return list(ShareLink.objects.filter(**target).select_related("created_by").order_by("-created_at"))
