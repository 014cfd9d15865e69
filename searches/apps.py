from django.apps import AppConfig


class SearchesConfig(AppConfig):
    name = "searches"
    verbose_name = "Searches"

    def ready(self):
        from django.db.models.signals import post_migrate
        from django_q.signals import post_spawn

        from evaluation import sink

        from . import schedules, services, task_queue

        # The evaluation worker hands its verdicts, failures and nudges to searches' services.
        sink.register(services.EvaluationSink())

        # Only qcluster spawns django-q2 workers: no other process writes the task queue's heartbeat.
        post_spawn.connect(task_queue.start_heartbeat, dispatch_uid="kernellab-task-queue-heartbeat")
        # Every migrate (scripts/start, each release) makes sure the periodic tasks exist.
        post_migrate.connect(schedules.on_post_migrate, sender=self, dispatch_uid="kernellab-schedules")
