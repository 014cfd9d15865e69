"""The task queue's periodic tasks (django-q2 schedules).

Created after every `migrate`, which both setups run (scripts/start on each start, a deployment
once per release; docs/DEPLOY.md), so they exist without an evaluator or a bootstrap step.
Idempotent: a schedule is found by name and its settings brought up to date; its next run is kept.
"""

from django.apps import apps as global_apps
from django_q.models import Schedule

from searches.engine.kick import REKICK_MINUTES

REKICK_NAME = "Re-kick stalled searches"


def ensure_schedules(*, using: str = "default", apps=global_apps) -> None:
    try:
        model = apps.get_model("django_q", "Schedule")
    except LookupError:  # a partial migrate that left django_q's tables out
        return
    model.objects.using(using).update_or_create(name=REKICK_NAME, defaults={
        "func": "searches.tasks.rekick_stalled_searches", "schedule_type": Schedule.MINUTES,
        "minutes": REKICK_MINUTES, "repeats": -1,
    })


def on_post_migrate(sender, *, using: str = "default", apps=global_apps, **kwargs) -> None:
    ensure_schedules(using=using, apps=apps)
