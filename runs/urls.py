from django.urls import path

from . import views

urlpatterns = [
    path("suites/<uuid:code>/runs/", views.suite_run_list, name="suite_runs"),
    path("suites/<uuid:code>/runs/rejudge/", views.suite_rejudge, name="suite_rejudge"),
    path("suites/<uuid:code>/runs/start/", views.run_start, name="run_start"),
    path("runs/compare/", views.run_compare, name="run_compare"),
    path("runs/<uuid:code>/", views.run_detail, name="run_detail"),
]
