"""First-run setup, safe to repeat: the first user (if there is none) and the built-in catalog.

Migrations are not run here (the start script runs them first). A generated password is
printed once and stored only as Django's hash; an existing user's password is never touched.
"""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evaluation.scheduling import Priority
from searches import catalog, selectors, services
from searches.models import Problem


class Command(BaseCommand):
    help = "Create the first user if there is none and load the built-in problem catalog. Safe to re-run."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin", help="name of the first user (default: admin)")
        parser.add_argument(
            "--password",
            default="",
            help="password of the first user; default: a generated one, printed once. "
            "Ignored when a user exists already.",
        )
        parser.add_argument("--no-catalog", action="store_true", help="do not load the built-in problems")
        parser.add_argument("--url", default="", help="the address people open (default: SITE_URL)")

    def handle(self, *args, username, password, no_catalog, url, **options):
        login_line = self.first_user(username=username, password=password)
        if not no_catalog:
            self.load_catalog()
        self.stdout.write("")
        base = (url or settings.SITE_URL).rstrip("/")
        self.stdout.write(self.style.SUCCESS(f"KernelLab: open {base}/login/"))
        self.stdout.write(login_line)

    def first_user(self, *, username: str, password: str) -> str:
        User = get_user_model()
        with transaction.atomic():
            if User.objects.exists():
                return (
                    "Log in with an existing account (reset a forgotten password with "
                    "`python manage.py changepassword USERNAME`)."
                )
            if not username.strip():
                raise CommandError("--username must not be empty")
            generated = not password
            password = password or secrets.token_urlsafe(12)
            User.objects.create_superuser(username=username.strip(), email="", password=password)
        if generated:
            return f"Log in as {username} with password {password} (shown only this once; it is stored hashed)."
        return f"Log in as {username} with the password you gave."

    def load_catalog(self) -> None:
        loaded = set(Problem.objects.exclude(catalog_key="").values_list("catalog_key", flat=True))
        # A device no worker here serves would hold its warm-up validations queued forever (and a
        # banner about them): those problems are stored, and validated on request once one runs.
        served = selectors.devices_served()
        added = []
        for entry in catalog.problems():
            if entry.key in loaded:
                continue
            services.problem_create(
                user=None,
                name=entry.name,
                source=entry.source,
                description=entry.description,
                atol=entry.atol,
                rtol=entry.rtol,
                device=entry.device,
                catalog_key=entry.key,
                family=entry.family,
                validate=entry.device in served,
                priority=Priority.BULK,  # warm-up: behind people's own problems and searches
            )
            added.append(entry)
        skipped = len(catalog.problems()) - len(added)
        self.stdout.write(f"Catalog: {len(added)} problem(s) added, {skipped} already loaded.")
        if any(entry.device in served for entry in added):
            self.stdout.write("Each new problem for a device served here is queued for validation by the evaluator.")
        if any(entry.device not in served for entry in added):
            self.stdout.write(
                "GPU problems are stored, not queued: no CUDA worker serves this install. Once one runs "
                "(`RUNNER_DEVICE=cuda python manage.py evaluator` on a GPU host), “Validate again” on each queues it."
            )
