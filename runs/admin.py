from django.contrib import admin

from .models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("name", "suite", "source", "proposer", "model", "samples", "allow_library", "created_at")
    list_filter = ("source", "proposer")
    search_fields = ("name", "suite__name")
    readonly_fields = ("code",)
