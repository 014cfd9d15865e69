from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0005_llm_search_settings'),
    ]

    operations = [
        migrations.AddField(
            model_name='benchmarkrun',
            name='noisy_reason',
            field=models.TextField(blank=True),
        ),
    ]
