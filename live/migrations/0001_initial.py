"""`live` takes over the search and problem event logs: their tables (searches_searchevent,
searches_problemevent) are kept, only the state moves; and a table of stream counters."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('searches', '0022_events_move_to_live'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ProblemEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name='ID')),
                        ('seq', models.PositiveBigIntegerField()),
                        ('kind', models.CharField(max_length=40)),
                        ('payload', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('problem', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                      related_name='events', to='searches.problem')),
                    ],
                    options={
                        'db_table': 'searches_problemevent',
                        'ordering': ['problem', 'seq'],
                        'constraints': [models.UniqueConstraint(fields=('problem', 'seq'),
                                                                name='unique_problem_event_seq')],
                    },
                ),
                migrations.CreateModel(
                    name='SearchEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name='ID')),
                        ('seq', models.PositiveBigIntegerField()),
                        ('kind', models.CharField(max_length=40)),
                        ('payload', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('search', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                     related_name='events', to='searches.search')),
                    ],
                    options={
                        'db_table': 'searches_searchevent',
                        'ordering': ['search', 'seq'],
                        'constraints': [models.UniqueConstraint(fields=('search', 'seq'), name='unique_event_seq')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.CreateModel(
            name='StreamCounter',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('stream', models.CharField(choices=[('search', 'Search'), ('problem', 'Problem')], max_length=16)),
                ('owner_id', models.PositiveBigIntegerField()),
                ('last_seq', models.PositiveBigIntegerField(default=0)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('stream', 'owner_id'), name='unique_stream_counter')],
            },
        ),
    ]
