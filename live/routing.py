from django.urls import path

from .consumers import SearchEventsConsumer

websocket_urlpatterns: list = [
    path("ws/searches/<uuid:code>/", SearchEventsConsumer.as_asgi()),
]
