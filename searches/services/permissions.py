"""Who may do what. Everyone on the team reads everything and may fork any search. Steering a
search (pause, resume, cancel, its ideas and hand-written kernels: they spend its budget) belongs
to the person who started it and to administrators. A quarantined kernel is admitted by a second
pair of eyes: an administrator, or anyone but the person whose search or kernel it is.
user=None is the system itself (the headless command, the engine)."""

from django.core.exceptions import PermissionDenied

from searches.models import Kernel, Search


def may_steer(search: Search, user) -> bool:
    return user is None or user.is_staff or (search.created_by_id is not None and search.created_by_id == user.id)


def require_steer(search: Search, user, action: str) -> None:
    if not may_steer(search, user):
        raise PermissionDenied(f"Only the person who started this search, or an administrator, can {action}.")


def may_approve(kernel: Kernel, user) -> bool:
    if user is None or user.is_staff:
        return True
    owners = {kernel.author_id, kernel.search.created_by_id if kernel.search_id else None} - {None}
    return user.id not in owners
