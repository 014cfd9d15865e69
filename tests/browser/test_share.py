"""A share link opens without a login, and answers 404 once revoked."""

from urllib.parse import urljoin

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]


def create_share(page, label: str) -> str:
    """A share link made from the page's own form; its address as the page shows it."""
    page.locator("#share-links input[name=label]").fill(label)
    page.locator("#share-create").click()
    url = page.locator("#share-url").input_value()
    assert "/s/" in url
    return url


def test_share_link_logged_out_then_revoked(logged_in_page, stack, chromium):
    seeded = dashboard_seed.small_search(stack, "shared search")
    page = logged_in_page
    page.goto(f"/kernels/{seeded['faster']}/")
    url = create_share(page, "for the reading group")

    stranger = chromium.new_context()
    try:
        anonymous = stranger.new_page()
        response = anonymous.goto(url)
        assert response.status == 200
        expect(anonymous.get_by_role("heading", name="faster kernel")).to_be_visible()
        expect(anonymous.locator("#provenance")).to_contain_text("NVIDIA H200")
        expect(anonymous.locator("#kernel-source")).to_contain_text("class ModelNew")
        expect(anonymous.locator("form[method=post]")).to_have_count(0)

        page.goto(f"/kernels/{seeded['faster']}/")
        row = page.locator("#share-links tr", has_text="for the reading group")
        # Revoking asks first: dismissed, the link stays active; accepted, it is revoked.
        questions = []
        page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
        row.get_by_role("button", name="Revoke").click()
        assert anonymous.goto(url).status == 200
        assert questions and "Revoke the share link “for the reading group”?" in questions[0]
        page.once("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Revoke").click()
        expect(page.locator("#share-links tr", has_text="for the reading group")).to_contain_text("revoked")
        assert anonymous.goto(url).status == 404
        # The product's page, not Django's debug page listing every URL pattern.
        expect(anonymous.locator("#not-found")).to_contain_text("This share link does not exist or was revoked.")
        assert "URLconf" not in anonymous.content() and "admin/" not in anonymous.content()
    finally:
        stranger.close()


def test_copy_button_and_the_shared_search_links_to_its_kernels(logged_in_page, stack, chromium):
    seeded = dashboard_seed.small_search(stack, "copied search")
    page = logged_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"/searches/{seeded['search']}/")
    page.locator("#share-create").click()
    url = page.locator("#share-url").input_value()
    page.locator("#copy-share-url").click()
    expect(page.locator("#copy-share-url")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == url

    stranger = chromium.new_context()
    try:
        anonymous = stranger.new_page()
        anonymous.goto(url)
        anonymous.get_by_role("link", name="faster kernel").first.click()
        expect(anonymous.get_by_role("heading", name="faster kernel")).to_be_visible()
        assert f"/kernels/{seeded['faster']}/" in anonymous.url and anonymous.url.startswith(url)
        expect(anonymous.locator("#kernel-source")).to_contain_text("class ModelNew")
        anonymous.get_by_role("link", name="fast kernel", exact=True).click()  # its parent, same search
        expect(anonymous.get_by_role("heading", name="fast kernel", exact=True)).to_be_visible()
    finally:
        stranger.close()


def test_a_shared_suite_shows_its_scores_kernels_and_export_logged_out(logged_in_page, stack, chromium):
    seeded = dashboard_seed.small_search(stack, "suite search")
    seeded.update(dashboard_seed.run(stack, f"""
from searches.models import Problem, Suite, SuiteProblem
suite = Suite.objects.create(name="Shared suite (browser)")
SuiteProblem.objects.create(suite=suite, problem=Problem.objects.get(code={seeded['problem']!r}), level=1, number=1)
out = dict(suite=str(suite.code))
"""))
    page = logged_in_page
    page.goto(f"/suites/{seeded['suite']}/")
    url = create_share(page, "for the benchmark review")

    stranger = chromium.new_context()
    try:
        anonymous = stranger.new_page()
        blocked = []
        anonymous.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
        assert anonymous.goto(url).status == 200
        expect(anonymous.get_by_role("heading", name="Shared suite (browser)")).to_be_visible()
        score = anonymous.locator('.suite-score[data-device="NVIDIA H200"]')
        expect(score.locator("table.fast-p")).to_contain_text("100% (1/1)")  # the faster kernel: 4x eager
        expect(score.locator("table.per-problem")).to_contain_text("4.00×")
        expect(anonymous.locator("form[method=post]")).to_have_count(0)
        export = anonymous.request.get(urljoin(url, anonymous.locator("#suite-json").get_attribute("href")))
        assert export.ok and export.json()["scores"][0]["fast_p"]["eager"]["fast_1"]["count"] == 1
        score.get_by_role("link", name="faster kernel").click()
        expect(anonymous.get_by_role("heading", name="faster kernel")).to_be_visible()
        assert anonymous.url.startswith(url) and f"/kernels/{seeded['faster']}/" in anonymous.url
        assert blocked == []

        row = page.locator("#share-links tr", has_text="for the benchmark review")
        page.goto(f"/suites/{seeded['suite']}/")
        page.once("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Revoke").click()
        expect(row).to_contain_text("revoked")
        assert anonymous.goto(url).status == 404
    finally:
        stranger.close()
