from django.apps import AppConfig


class SearchesConfig(AppConfig):
    name = "searches"
    verbose_name = "Searches"
