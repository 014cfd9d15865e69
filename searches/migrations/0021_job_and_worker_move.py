"""Evaluation jobs and workers leave this app's state for `evaluation`'s (its 0001 takes them, in the same
tables: no data moves), and the task queue's heartbeat gets a table of its own: its rows, kept until now
as workers of device "tasks", move there, so a Worker is only an evaluator."""

import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone

TASKS_DEVICE = "tasks"  # what the task queue's heartbeat rows carried as their device
KEY_SET, NO_KEY = "Task queue (Anthropic key set)", "Task queue (no Anthropic key)"


def heartbeats_out_of_workers(apps, schema_editor):
    alias = schema_editor.connection.alias
    Worker = apps.get_model("evaluation", "Worker")
    Heartbeat = apps.get_model("searches", "TaskQueueHeartbeat")
    rows = Worker.objects.using(alias).filter(device=TASKS_DEVICE)
    for row in rows.order_by("heartbeat_at", "id"):  # the freshest of a host's rows wins
        host = row.host or row.name.removeprefix("tasks@")
        Heartbeat.objects.using(alias).update_or_create(host=host, defaults={
            "pid": row.pid, "anthropic_key": row.device_name == KEY_SET,
            "heartbeat_at": row.heartbeat_at or row.started_at or timezone.now()})
    rows.delete()


def heartbeats_back_to_workers(apps, schema_editor):
    alias = schema_editor.connection.alias
    Worker = apps.get_model("evaluation", "Worker")
    for beat in apps.get_model("searches", "TaskQueueHeartbeat").objects.using(alias).all():
        Worker.objects.using(alias).update_or_create(name=f"tasks@{beat.host}", defaults={
            "host": beat.host, "pid": beat.pid, "device": TASKS_DEVICE,
            "device_name": KEY_SET if beat.anthropic_key else NO_KEY, "heartbeat_at": beat.heartbeat_at})


def content_types_to(source: str, target: str):
    """The admin's log entries and the permissions follow the models to their app (when the target app
    has no content type of its own for them yet)."""
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        types = ContentType.objects.using(schema_editor.connection.alias)
        for model in ("evaluationjob", "worker"):
            if not types.filter(app_label=target, model=model).exists():
                types.filter(app_label=source, model=model).update(app_label=target)
    return move


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('evaluation', '0001_initial'),
        ('searches', '0020_job_purpose_tool'),
    ]

    operations = [
        migrations.CreateModel(
            name='TaskQueueHeartbeat',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('host', models.CharField(max_length=200, unique=True)),
                ('pid', models.PositiveIntegerField(blank=True, null=True)),
                ('anthropic_key', models.BooleanField(default=False)),
                ('heartbeat_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['host'],
            },
        ),
        migrations.RunPython(heartbeats_out_of_workers, heartbeats_back_to_workers),
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='benchmarkrun',
                    name='job',
                    field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                               related_name='run', to='evaluation.evaluationjob'),
                ),
                migrations.RemoveField(
                    model_name='worker',
                    name='current_job',
                ),
                migrations.DeleteModel(
                    name='EvaluationJob',
                ),
                migrations.DeleteModel(
                    name='Worker',
                ),
            ],
        ),
        migrations.RunPython(content_types_to("searches", "evaluation"), content_types_to("evaluation", "searches")),
    ]
