from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0008_sharelink_suite'),
    ]

    operations = [
        migrations.AddField(
            model_name='evaluationjob',
            name='infra_attempts',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='evaluationjob',
            name='run_started_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
