from django.apps import AppConfig


class BenchesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "benches"
    verbose_name = "Benchmarks"
