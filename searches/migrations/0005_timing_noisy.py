from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0004_worker_device_facts'),
    ]

    operations = [
        migrations.AddField(
            model_name='benchmarkrun',
            name='noisy_reason',
            field=models.TextField(blank=True),
        ),
    ]
