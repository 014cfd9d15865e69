"""SearchEvent and ProblemEvent become `live`'s models (live/migrations/0001_initial.py): removed from
this app's state only, their tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0021_job_and_worker_move'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='ProblemEvent'),
                migrations.DeleteModel(name='SearchEvent'),
            ],
            database_operations=[],
        ),
    ]
