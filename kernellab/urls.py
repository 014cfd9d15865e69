from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from searches.views.auth import LoginView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("searches.urls")),
    path("", include("evaluation.urls")),
    path("", include("runs.urls")),
]
