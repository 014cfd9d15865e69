"""Start one search configuration on every problem of a suite, as one run (what "Search every
problem" on the suite page does), for scripts and CI. The knobs are the search form's fields,
checked by the same form:

    python manage.py start_run --suite "KernelBench L1" --name "playbook R3" proposer=playbook rounds=3 device=cuda \
        baselines=cudagraph,max-autotune

`baselines` (comma-separated) has every candidate also timed against those baselines; they become the
run's own, so `run_scores --baseline cudagraph` and the run page score against them.
"""

from django.contrib.auth import get_user_model
from django.forms import MultipleChoiceField
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from runs.services import run_start_searches
from searches import selectors
from searches.forms import SearchStartForm
from searches.models import Suite


class Command(BaseCommand):
    help = "Start a run: one search per problem of the suite, all with the knobs given as FIELD=VALUE."

    def add_arguments(self, parser):
        parser.add_argument("knobs", nargs="*", help="search form fields, e.g. proposer=playbook rounds=3")
        parser.add_argument("--suite", required=True)
        parser.add_argument("--name", required=True, help="the run's name (unique on the suite)")
        parser.add_argument("--user", default="", help="username the searches belong to")

    def handle(self, *args, knobs, suite, name, user, **options):
        target = Suite.objects.filter(name=suite).first()
        if target is None:
            raise CommandError(f"no suite named {suite!r}")
        owner = get_user_model().objects.filter(username=user).first() if user else None
        if user and owner is None:
            raise CommandError(f"no user named {user!r}")
        # The form's defaults, as the page shows them, and the device most of the suite's problems use.
        data = {name: field.initial for name, field in SearchStartForm.base_fields.items() if field.initial is not None}
        data["device"] = selectors.suite_device(target)
        for knob in knobs:
            key, sep, value = knob.partition("=")
            if not sep:
                raise CommandError(f"{knob!r}: give knobs as FIELD=VALUE")
            field = SearchStartForm.base_fields.get(key)
            # a list knob is comma-separated: baselines=cudagraph,max-autotune
            data[key] = [v for v in value.split(",") if v] if isinstance(field, MultipleChoiceField) else value
        form = SearchStartForm(data)
        if not form.is_valid():
            raise CommandError("; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()))
        fields = form.search_fields()
        fields.pop("name")  # the run's name names its searches
        try:
            run, rows = run_start_searches(user=owner, suite=target, name=name, **fields)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        for row in rows:
            self.stdout.write(f"{row.outcome:<8} {row.member.problem.name}" + (f": {row.reason}" if row.reason else ""))
        started = sum(1 for row in rows if row.search is not None)
        self.stdout.write(f"Run “{run.name}” ({run.code}): {started} searches started, {len(rows) - started} refused.")
