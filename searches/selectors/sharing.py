"""Reads on share links."""

import hashlib

from searches.models import ShareLink

from .leaderboards import leaderboard
from .suites import suite_scores


def share_token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def share_link_by_token(token: str) -> ShareLink | None:
    """The live link for a token, or None (unknown or revoked)."""
    if not token or len(token) > 200:
        return None
    return (ShareLink.objects.select_related("problem", "search", "kernel", "other_kernel", "suite", "created_by")
            .filter(token_hash=share_token_hash(token), revoked_at=None).first())


def share_links_for(**target) -> list[ShareLink]:
    """Links pointing at one object, e.g. share_links_for(kernel=k), newest first."""
    return list(ShareLink.objects.filter(**target).select_related("created_by").order_by("-created_at"))


def share_link_shows_kernel(link: ShareLink, kernel) -> bool:
    """Whether a kernel is part of what a link shares, so its token may open the kernel's page:
    the shared search's kernels, the board's rows, the two compared, the kernel itself, and the
    best kernels and caught cheats that the shared suite's page lists."""
    if link.kind == ShareLink.Kind.SEARCH:
        return kernel.search_id == link.search_id
    if link.kind == ShareLink.Kind.KERNEL:
        return kernel.id == link.kernel_id
    if link.kind == ShareLink.Kind.COMPARE:
        return kernel.id in (link.kernel_id, link.other_kernel_id)
    if link.kind == ShareLink.Kind.SUITE:
        return kernel.id in suite_listed_kernel_ids(link.suite)
    if kernel.problem_id != link.problem_id:
        return False
    boards = leaderboard(problem=link.problem, device_name=link.device_name)
    return any(kernel.id == k.id for board in boards for k in board["ranked"] + board["quarantined"])


def suite_listed_kernel_ids(suite) -> set[int]:
    """The kernels a suite's page links to, on every GPU model: each problem's best, and the cheats."""
    listed = set()
    for score in suite_scores(suite):
        listed.update(row["best_kernel"].id for row in score["rows"] if row["best_kernel"] is not None)
        listed.update(kernel.id for kernel in score["cheats"])
    return listed
