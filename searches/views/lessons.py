"""The Lessons page: the pitfalls models proposed after failures, for a person to approve, reword or
reject. Only lessons of searches the person may see are listed or decided (selectors.lesson_for_user)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memory import services as memory
from memory.models import LESSON_CHARS, Lesson

from .. import selectors
from .searches import error_text

FILTERS = ("status", "family", "device")


def _filters(data) -> dict:
    status = data.get("status", "")
    return {"status": status if status in Lesson.Status.values else "", "family": data.get("family", "")[:50],
            "device": data.get("device", "")[:200]}


@login_required
def lesson_list(request):
    filters = _filters(request.GET)
    context = selectors.lessons_page(request.user, status=filters["status"], family=filters["family"],
                                     device_model=filters["device"], page=request.GET.get("page"))
    context.update(filters=filters, statuses=Lesson.Status.choices, lesson_chars=LESSON_CHARS,
                   back=urlencode({k: v for k, v in filters.items() if v}))
    return render(request, "searches/lessons/list.html", context)


@login_required
@require_POST
def lesson_decide(request, code):
    """Approve (in the words given), save an edit, or reject; the person and the time are recorded."""
    lesson = selectors.lesson_for_user(request.user, code)
    if lesson is None:
        raise Http404("No such lesson among the searches you may see.")
    action, text = request.POST.get("action", ""), request.POST.get("text")
    try:
        if action == "approve":
            memory.lesson_approve(lesson=lesson, user=request.user, text=text)
            messages.success(request, "Approved: it now enters the prompts of searches on similar problems.")
        elif action == "edit":
            memory.lesson_edit(lesson=lesson, user=request.user, text=text or "")
            messages.success(request, "Saved: the lesson reads in your words from now on.")
        elif action == "reject":
            memory.lesson_reject(lesson=lesson, user=request.user)
            messages.success(request, "Rejected: it never enters a prompt.")
        else:
            messages.error(request, "Choose approve, save or reject.")
    except ValidationError as error:
        messages.error(request, f"Could not save: {error_text(error)}")
    back = urlencode({k: v for k, v in _filters(request.POST).items() if v})
    return redirect(reverse("lesson_list") + (f"?{back}" if back else "") + f"#lesson-{lesson.code}")
