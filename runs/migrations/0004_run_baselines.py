from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0003_run_rule"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="baselines",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
