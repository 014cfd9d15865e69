"""Share links: read-only pages for people without a login."""

import secrets

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from searches.models import ShareLink
from searches.selectors.sharing import share_token_hash

_SHARE_TARGETS = {
    ShareLink.Kind.LEADERBOARD: ("problem",),
    ShareLink.Kind.SEARCH: ("search",),
    ShareLink.Kind.KERNEL: ("kernel",),
    ShareLink.Kind.COMPARE: ("kernel", "other_kernel"),
    ShareLink.Kind.SUITE: ("suite",),
}


def share_link_create(*, user, kind: str, problem=None, search=None, kernel=None, other_kernel=None, suite=None,
                      device_name: str = "", label: str = "") -> tuple[ShareLink, str]:
    """A read-only link for people without a login. The token is returned once and only its
    SHA-256 is stored, so a database leak does not leak working links."""
    given = {"problem": problem, "search": search, "kernel": kernel, "other_kernel": other_kernel, "suite": suite}
    if kind not in _SHARE_TARGETS:
        raise ValidationError(f"Unknown kind of share link {kind!r}: use one of {', '.join(_SHARE_TARGETS)}.")
    needed = _SHARE_TARGETS[kind]
    missing = [name for name in needed if given[name] is None]
    extra = [name for name, value in given.items() if value is not None and name not in needed]
    if missing or extra:
        raise ValidationError(f"A {kind} link needs exactly: {', '.join(needed)}.")
    if len(label) > 200:
        raise ValidationError("The label is too long: keep it under 200 characters.")
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        link = ShareLink.objects.create(token_hash=share_token_hash(token), kind=kind, label=label.strip(),
                                         device_name=device_name if kind == ShareLink.Kind.LEADERBOARD else "",
                                         created_by=user, **{k: v for k, v in given.items() if v is not None})
    return link, token


def share_link_revoke(*, link: ShareLink, user) -> ShareLink:
    """Stop a link from working (its page answers 404 afterwards). Its creator or staff may do it."""
    if not (user.is_staff or (link.created_by_id is not None and link.created_by_id == user.id)):
        raise PermissionDenied("Only the person who created this link, or an administrator, can revoke it.")
    with transaction.atomic():
        if link.revoked_at is None:
            link.revoked_at = timezone.now()
            link.save(update_fields=["revoked_at"])
    return link
