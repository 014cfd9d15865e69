"""The product's own 404 and 500 pages (DEBUG off, as pytest-django runs every test)."""

import pytest
from django.test import RequestFactory
from django.views.defaults import server_error

pytestmark = pytest.mark.django_db


def test_unknown_page_is_the_products_404(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert 'id="not-found"' in body and "This page does not exist." in body
    assert "css/app.css" in body  # the base look
    assert "URLconf" not in body and "Resolver404" not in body
    assert "A share link stops working" not in body  # that hint is for share links only


def test_a_404_says_what_the_view_said(client):
    response = client.get("/s/no-such-token/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "This share link does not exist or was revoked." in body and "A share link stops working" in body


def test_server_error_is_the_products_500():
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    body = response.content.decode()
    assert 'id="server-error"' in body and "css/app.css" in body and "Traceback" not in body
