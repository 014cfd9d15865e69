"""Logging in and out in a real browser against the running app."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e


def test_pages_need_a_login_and_a_wrong_password_is_refused(page, stack):
    page.goto("/problems/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/problems/$"))
    page.get_by_label("Username").fill(stack.username)
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".error")).to_contain_text("didn't match")
    expect(page.get_by_label("Username")).to_have_value(stack.username)


def test_login_goes_where_you_were_going_and_logout_ends_the_session(page, stack):
    page.goto("/problems/new/")
    page.get_by_label("Username").fill(stack.username)
    page.get_by_label("Password").fill(stack.password)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/problems/new/$"))
    expect(page.get_by_role("heading", name="New problem")).to_be_visible()

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/login/$"))
    page.goto("/problems/")
    expect(page).to_have_url(re.compile(r"/login/\?next="))
