from django.contrib import admin

from .models import SearchEvent


@admin.register(SearchEvent)
class SearchEventAdmin(admin.ModelAdmin):
    list_display = ["search", "seq", "kind", "created_at"]
    list_filter = ["kind"]
