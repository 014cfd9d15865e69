from django.contrib import admin

from . import models


@admin.register(models.Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "device", "validation_status", "family", "is_latest", "created_at"]
    list_filter = ["device", "validation_status", "is_latest"]
    search_fields = ["name", "description", "catalog_key"]
    readonly_fields = ["code", "lineage", "validation", "validated_at"]


@admin.register(models.Search)
class SearchAdmin(admin.ModelAdmin):
    list_display = ["__str__", "problem", "status", "proposer", "current_round", "candidates_evaluated", "cost_usd"]
    list_filter = ["status", "proposer", "device"]
    readonly_fields = ["code"]


@admin.register(models.Idea)
class IdeaAdmin(admin.ModelAdmin):
    list_display = ["title", "search", "round", "origin", "created_at"]
    list_filter = ["origin"]
    search_fields = ["title", "description"]


@admin.register(models.Kernel)
class KernelAdmin(admin.ModelAdmin):
    list_display = ["__str__", "search", "round", "origin", "status", "median_ms", "speedup_vs_compile", "quarantined"]
    list_filter = ["status", "origin", "quarantined", "verified"]
    readonly_fields = ["code"]
    raw_id_fields = ["parent", "repair_of", "idea", "call", "search", "problem"]


@admin.register(models.BenchmarkRun)
class BenchmarkRunAdmin(admin.ModelAdmin):
    list_display = ["id", "kernel", "status", "median_ms", "device_name", "purpose", "created_at"]
    list_filter = ["status", "purpose", "device_name"]
    raw_id_fields = ["kernel", "job"]


@admin.register(models.ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ["kind", "label", "created_by", "created_at", "revoked_at"]
    exclude = ["token_hash"]


@admin.register(models.ProposerCall)
class ProposerCallAdmin(admin.ModelAdmin):
    list_display = ["search", "purpose", "model", "ok", "input_tokens", "output_tokens", "cost_usd", "created_at"]
    list_filter = ["purpose", "ok"]
