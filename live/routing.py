from django.urls import path

from .consumers import ProblemEventsConsumer, SearchEventsConsumer

websocket_urlpatterns: list = [
    path("ws/searches/<uuid:code>/", SearchEventsConsumer.as_asgi()),
    path("ws/problems/<uuid:code>/", ProblemEventsConsumer.as_asgi()),
]
