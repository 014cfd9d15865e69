from django.apps import AppConfig


class SearchesConfig(AppConfig):
    name = "searches"
    verbose_name = "Searches"

    def ready(self):
        from django_q.signals import post_spawn

        from . import task_queue

        # Only qcluster spawns django-q2 workers: no other process writes the task queue's heartbeat.
        post_spawn.connect(task_queue.start_heartbeat, dispatch_uid="kernellab-task-queue-heartbeat")
