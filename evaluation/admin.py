from django.contrib import admin

from . import models


@admin.register(models.EvaluationJob)
class EvaluationJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kernel", "purpose", "status", "attempts", "lease_owner", "lease_expires_at"]
    list_filter = ["status", "purpose", "device"]
    raw_id_fields = ["kernel"]


@admin.register(models.Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["name", "device", "device_name", "heartbeat_at", "jobs_done"]
