"""The Searches list and the lineage view follow a search's status and progress as another
process changes them (the search's event stream), with no reload."""

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]


def finish(stack, code: str) -> None:
    """Another process ends the search the way the engine does: the change and its events, one transaction."""
    dashboard_seed.run(stack, f"""
from django.db import transaction
from searches.services import events
from searches.models import Search
from django.utils import timezone
s = Search.objects.get(code={code!r})
with transaction.atomic():
    Search.objects.filter(pk=s.pk).update(candidates_evaluated=7, status="completed", finished_at=timezone.now(),
                                          stop_reason="the playbook ran out of ideas")
    s.refresh_from_db()
    events.publish_search_progress(s.id)
    events.publish_search_status(s)
out = {{}}
""")


def test_the_searches_list_and_the_lineage_view_follow_a_search_to_its_end(logged_in_page, stack):
    page = logged_in_page
    listed = dashboard_seed.small_search(stack, "followed by the list", status="running")
    page.goto("/searches/")
    row = page.locator(f"tr[data-search='{listed['search']}']")
    expect(row.locator(".badge")).to_have_text("Running")
    page.evaluate("window.sameDocument = true")
    expect(page.locator("body[data-live=open]")).to_have_count(1)
    finish(stack, listed["search"])
    expect(row.locator(".badge")).to_have_text("Completed", timeout=10_000)
    expect(row).to_contain_text("7/")
    assert page.evaluate("window.sameDocument === true")

    drawn = dashboard_seed.small_search(stack, "followed by the lineage", status="running")
    page.goto(f"/searches/{drawn['search']}/lineage/")
    expect(page.locator("#search-status")).to_have_text("Running")
    expect(page.locator("#live-state")).to_have_text("live")
    finish(stack, drawn["search"])
    expect(page.locator("#search-status")).to_have_text("Completed", timeout=10_000)
