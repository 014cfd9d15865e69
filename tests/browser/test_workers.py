"""The Workers page against the real stack: its own evaluator shows up alive, and a worker
that starts elsewhere appears without a reload."""

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]


def test_workers_page_shows_the_stacks_evaluator_and_follows_new_ones(logged_in_page, stack):
    page = logged_in_page
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    # The nav's link: the health banner names Workers too while another test's cuda jobs wait.
    page.get_by_role("navigation").get_by_role("link", name="Workers").click()
    expect(page.locator("h1")).to_have_text("Workers")
    own = page.locator("table.workers tr.worker-alive", has_text="CPU")
    expect(own.first).to_be_visible(timeout=30_000)  # the Procfile's evaluator
    dashboard_seed.run(stack, """
from django.utils import timezone
from evaluation.models import Worker
Worker.objects.create(name="gpu-host-7:cuda0", host="gpu-host-7", pid=99, device="cuda", device_name="NVIDIA H200",
                      heartbeat_at=timezone.now())
out = {}
""")
    expect(page.locator("table.workers tr", has_text="gpu-host-7:cuda0")).to_be_visible(timeout=10_000)
    expect(page.locator("table.workers tr", has_text="gpu-host-7:cuda0")).to_contain_text("NVIDIA H200")
    assert blocked == []
