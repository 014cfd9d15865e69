from django.db import migrations, models


def from_latest_runs(apps, schema_editor):
    """Rejected kernels take the code their latest verdict gave."""
    Kernel, BenchmarkRun = apps.get_model("searches", "Kernel"), apps.get_model("searches", "BenchmarkRun")
    for kernel in Kernel.objects.filter(status="rejected").only("id"):
        run = BenchmarkRun.objects.filter(kernel=kernel).exclude(purpose="rerun").order_by("-id").first()
        code = ((run.result or {}).get("reason_code") or "") if run else ""
        if code:
            Kernel.objects.filter(pk=kernel.pk).update(reason_code=code[:32])


class Migration(migrations.Migration):
    dependencies = [("searches", "0010_evaluationjob_requested_by")]

    operations = [
        migrations.AddField(model_name="kernel", name="reason_code", field=models.CharField(blank=True, max_length=32)),
        migrations.RunPython(from_latest_runs, migrations.RunPython.noop),
    ]
