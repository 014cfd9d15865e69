from django.contrib import admin

from .models import Lesson


@admin.register(Lesson)
class LessonAdmin(admin.ModelAdmin):
    list_display = ["__str__", "status", "family", "device_model", "language", "verdict", "shown_count", "created_at"]
    list_filter = ["status", "family", "device_model"]
    search_fields = ["text", "edited_text"]
    readonly_fields = ["code", "search", "kernel", "shown_count", "last_shown_at"]
