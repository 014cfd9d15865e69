"""SearchEvent and ProblemEvent become `live`'s models (live/migrations/0001_initial.py): removed from
this app's state only, their tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0020_job_purpose_tool'),
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
