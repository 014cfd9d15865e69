from django.urls import path

from . import views

urlpatterns = [
    path("suites/<uuid:code>/runs/", views.suite_run_list, name="suite_runs"),
    path("runs/compare/", views.run_compare, name="run_compare"),
    path("runs/<uuid:code>/", views.run_detail, name="run_detail"),
]
