"""Evaluation jobs and workers become this app's models, in the tables they had as `searches` models:
the state moves (searches 0021 takes them out of its state), the database does not change."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('searches', '0020_job_purpose_tool'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='EvaluationJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('purpose', models.CharField(choices=[('validate', 'Problem validation'), ('search', 'Search candidate'), ('rerun', 'Verified rerun'), ('manual', 'Manual submission'), ('tool', 'Agent tool run')], default='search', max_length=16)),
                        ('device', models.CharField(choices=[('cpu', 'CPU'), ('cuda', 'CUDA GPU')], default='cpu', max_length=8)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('leased', 'Running'), ('done', 'Done'), ('failed', 'Failed')], db_index=True, default='queued', max_length=16)),
                        ('priority', models.IntegerField(default=0)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('max_attempts', models.PositiveSmallIntegerField(default=3)),
                        ('infra_attempts', models.PositiveSmallIntegerField(default=0)),
                        ('seed', models.BigIntegerField(blank=True, null=True)),
                        ('options', models.JSONField(blank=True, default=dict)),
                        ('result', models.JSONField(blank=True, null=True)),
                        ('lease_owner', models.CharField(blank=True, max_length=200)),
                        ('lease_expires_at', models.DateTimeField(blank=True, db_index=True, null=True)),
                        ('last_error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('run_started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('phase', models.CharField(blank=True, max_length=32)),
                        ('phase_started_at', models.DateTimeField(blank=True, null=True)),
                        ('phase_seconds', models.JSONField(blank=True, default=dict)),
                        ('kernel', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='searches.kernel')),
                        ('problem', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='searches.problem')),
                        ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('search', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='searches.search')),
                    ],
                    options={
                        'db_table': 'searches_evaluationjob',
                        'ordering': ['-priority', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='Worker',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200, unique=True)),
                        ('host', models.CharField(blank=True, max_length=200)),
                        ('pid', models.PositiveIntegerField(blank=True, null=True)),
                        ('device', models.CharField(choices=[('cpu', 'CPU'), ('cuda', 'CUDA GPU')], default='cpu', max_length=8)),
                        ('device_name', models.CharField(blank=True, max_length=200)),
                        ('device_facts', models.JSONField(blank=True, default=dict)),
                        ('started_at', models.DateTimeField(auto_now_add=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('jobs_done', models.PositiveIntegerField(default=0)),
                        ('current_job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='evaluation.evaluationjob')),
                    ],
                    options={
                        'db_table': 'searches_worker',
                    },
                ),
            ],
        ),
    ]
