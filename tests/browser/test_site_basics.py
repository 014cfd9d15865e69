"""What every page relies on, against the stack started as the README starts it (DEBUG off by
default): static files, the favicon, the product's 404 page."""

import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e]


def fetch(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def test_static_files_and_favicon_are_served_with_debug_off(stack):
    status, kind, body = fetch(f"{stack.url}/static/css/app.css")
    assert (status, kind.split(";")[0]) == (200, "text/css") and b".topbar" in body
    status, kind, body = fetch(f"{stack.url}/favicon.ico")
    assert status == 200 and body[:4] == b"\x00\x00\x01\x00", kind  # an ICO file
    status, kind, body = fetch(f"{stack.url}/static/img/favicon.svg")
    assert status == 200 and kind.startswith("image/svg+xml") and b"<svg" in body


def test_unknown_page_is_the_products_404(page, stack):
    response = page.goto("/no/such/page/")
    assert response.status == 404
    expect(page.locator("#not-found")).to_contain_text("This page does not exist.")
    assert "URLconf" not in page.content() and "Using the URLconf" not in page.content()
    # Styled like every other page, with its favicon.
    assert page.locator(".topbar .brand").count() == 1
    assert page.locator("link[rel=icon]").get_attribute("href").endswith("favicon.svg")
