from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0002_sweeps_become_runs"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="rule",
            field=models.CharField(choices=[("kernellab", "KernelLab"),
                                            ("kernelbench", "KernelBench v0.1 (allclose, atol = rtol = 1e-2)"),
                                            ("kernelbench-main", "KernelBench main (allclose, 1e-4 for fp32)")],
                                   default="kernellab", max_length=24),
        ),
    ]
