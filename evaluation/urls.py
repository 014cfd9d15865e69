from django.urls import path

from . import views

urlpatterns = [
    path("workers/", views.worker_list, name="worker_list"),
    path("workers/jobs/<str:device>/<str:state>/", views.job_list, name="job_list"),
]
