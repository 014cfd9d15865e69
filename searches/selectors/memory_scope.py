"""Where the team's memory reaches: which searches a person may learn from, and the key (memory.keys.IdeaKey)
of a search, a kernel or an idea. The idea bank and the pitfall ledger both read through here, so an idea's
outcome and a lesson of one problem land under one key."""

from django.db.models import Q

from memory.keys import IdeaKey, shape_class, technique_of
from proposers.prompts import language_of
from searches.models import Device, Kernel, Search

from .targets import target_facts


def visible_search_ids(user, *, also: Search | None = None):
    """The ids of the searches whose memory `user` may read: every search not kept private, the person's
    own, all of them for an administrator (user=None: the public ones). `also` adds one search (a
    search always learns from itself, private or not)."""
    if user is not None and user.is_staff:
        return Search.objects.values("id")
    visible = Q(private=False)
    if user is not None and user.is_authenticated:
        visible |= Q(created_by=user)
    if also is not None:
        visible |= Q(pk=also.pk)
    return Search.objects.filter(visible).values("id")


def searches_visible_to(user, *, also: Search | None = None):
    """visible_search_ids as a queryset of searches."""
    return Search.objects.filter(pk__in=visible_search_ids(user, also=also))


def device_model(search: Search, device_name: str = "") -> str:
    """The key's device: every CPU is "cpu" (their speed differs, their pitfalls do not); a GPU by the name the
    runner reported (`device_name`), else the search's latest judged kernel's, else the evaluator's facts."""
    if search.device == Device.CPU:
        return "cpu"
    if device_name:
        return device_name
    judged = (Kernel.objects.filter(search=search).exclude(device_name="").order_by("-id")
              .values_list("device_name", flat=True).first())
    return judged or str(target_facts(device=search.device).get("name") or search.device)


def search_key(search: Search, *, kernel: Kernel | None = None, technique: str = "") -> IdeaKey:
    """A search's place in the team's memory; with a kernel, that kernel's (its device as judged, its idea's
    technique)."""
    if kernel is not None and kernel.idea_id and not technique:
        technique = kernel.idea.technique
    return IdeaKey(family=search.problem.family or "unknown", shape_class=shape_class(search.problem.min_bytes),
                   device_model=device_model(search, kernel.device_name if kernel is not None else ""),
                   language=language_of(search), technique=technique_of(technique) if technique else "")
