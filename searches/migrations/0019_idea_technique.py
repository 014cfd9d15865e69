from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0018_job_phase'),
    ]

    operations = [
        migrations.AddField(model_name='idea', name='technique',
                            field=models.CharField(blank=True, db_index=True, max_length=32)),
        migrations.AddField(model_name='idea', name='expected_speedup', field=models.FloatField(blank=True, null=True)),
        migrations.AddField(model_name='search', name='prior_weight', field=models.PositiveSmallIntegerField(default=50)),
        migrations.AddField(model_name='search', name='seed_from_team', field=models.BooleanField(default=False)),
        migrations.AddField(model_name='search', name='stop_points_per_dollar', field=models.FloatField(default=0.0)),
    ]
