"""The lineage view draws a repair written while it is open where a reload would: under the
kernel it repairs, on a repair edge (the live payload names `repair_of_id`)."""

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def x_of(page, key: str) -> float:
    return page.locator(f"#ln-{key}").evaluate("e => e.getBoundingClientRect().x")


def test_a_live_repair_hangs_under_the_kernel_it_repairs(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "lineage live repair")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/lineage/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#lineage-svg .e.repair")).to_have_count(0)
    repair = dashboard_seed.run(stack, f"""
from searches.models import Kernel
broken = Kernel.objects.get(code={seeded['broken']!r})
k = d.kernel(problem=broken.problem, search=broken.search, idea=broken.idea, parent=broken.parent, origin="repair",
             repair_of=broken, status="incorrect", name="live repair", publish=True)
out = dict(id=k.id, broken=broken.id)
""")
    expect(page.locator(f"#ln-k{repair['id']}")).to_have_count(1, timeout=5000)
    expect(page.locator("#lineage-svg .e.repair")).to_have_count(1)
    live_x = x_of(page, f"k{repair['id']}")
    assert live_x > x_of(page, f"k{repair['broken']}")
    # A reload draws it in the same place.
    page.reload()
    expect(page.locator("#lineage-svg .e.repair")).to_have_count(1)
    assert x_of(page, f"k{repair['id']}") == pytest.approx(live_x, abs=1)
