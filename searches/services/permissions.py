"""Who may do what. Everyone on the team reads everything and may fork any search. Steering a
search (pause, resume, cancel, its ideas and hand-written kernels: they spend its budget) belongs
to the person who started it and to administrators. A quarantined kernel is admitted by a second
pair of eyes: an administrator, or anyone but the person whose search or kernel it is. A problem
is edited only by the person who created it (its first version) and administrators: an edit
changes what every later search on it measures.
A private search's results reach only its owner's (and administrators') priors, seeds and Ideas page
(searches/selectors/memory_scope.py: visible_search_ids). user=None is the system itself (the headless command, the
engine)."""

from django.core.exceptions import PermissionDenied

from searches.models import Kernel, Problem, Search


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


def problem_owner_id(problem: Problem) -> int | None:
    """The creator of the problem's first version: later versions (an administrator's edit
    included) do not change whose problem it is."""
    first = Problem.objects.filter(lineage=problem.lineage).order_by("version").values("created_by_id").first()
    return first["created_by_id"] if first else problem.created_by_id


def may_edit_problem(problem: Problem, user) -> bool:
    if user is None or user.is_staff:
        return True
    owner = problem_owner_id(problem)
    return owner is not None and owner == user.id


def require_edit_problem(problem: Problem, user) -> None:
    if not may_edit_problem(problem, user):
        raise PermissionDenied("Only the person who created this problem, or an administrator, can edit it.")
