"""Problems in a real browser: upload a KernelBench file, watch the sandboxed validation land
with CPU baselines, edit it, and get precise errors for broken problems."""

import re

import pytest
from playwright.sync_api import expect

from tests.searches.problem_samples import MISSING_GET_INPUTS, RAISES_AT_RUN_TIME, SOFTMAX, SYNTAX_ERROR, two_megabytes

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

VALIDATION_TIMEOUT_MS = 240_000  # torch.compile's first CPU build is slow on two cores


def upload(page, tmp_path, filename, source):
    path = tmp_path / filename
    path.write_text(source)
    page.goto("/problems/new/")
    page.get_by_label(re.compile("Upload a KernelBench problem file")).set_input_files(str(path))
    page.get_by_role("button", name="Create problem").click()


def test_upload_a_problem_and_see_it_validated_with_baselines(logged_in_page, tmp_path):
    page = logged_in_page
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.get_by_role("link", name="New problem").click()
    path = tmp_path / "23_Softmax.py"
    path.write_text(SOFTMAX)
    page.get_by_label(re.compile("Upload a KernelBench problem file")).set_input_files(str(path))
    page.get_by_label("rtol").fill("1e-5")
    page.get_by_role("button", name="Create problem").click()

    expect(page.get_by_role("heading", name=re.compile("23 Softmax"))).to_be_visible()
    expect(page.locator("#problem-source .highlighttable")).to_contain_text("def get_inputs")
    # The page follows the sandboxed validation by itself, without a reload from the test.
    badge = page.locator("#validation-badge")
    expect(badge).to_have_text("Valid", timeout=VALIDATION_TIMEOUT_MS)
    expect(page.locator("#baseline-eager")).to_have_text(re.compile(r"^\d[\d.]* ms$"))
    expect(page.locator("#baseline-compile")).to_contain_text(re.compile(r"^\d[\d.]* ms"))
    expect(page.locator("#validation")).to_contain_text("float32 of shape (16, 256)")
    expect(page.locator("#validation")).to_contain_text("softmax")
    expect(page.locator(".description")).to_have_text("Softmax over the last dimension.")

    page.get_by_role("link", name="Problems", exact=True).click()
    row = page.locator("tr", has=page.get_by_role("link", name="23 Softmax"))
    expect(row.locator(".badge")).to_have_text("Valid")
    expect(row).to_contain_text(re.compile(r"\d ms"))

    # Edit: a problem without searches is changed in place.
    row.get_by_role("link", name="23 Softmax").click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Description").fill("Row-wise softmax, edited.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".description")).to_have_text("Row-wise softmax, edited.")
    expect(page.locator("#validation-badge")).to_have_text("Valid")
    assert blocked == []  # the problem pages need no inline script or style either


def test_syntax_error_is_shown_with_its_line(logged_in_page):
    page = logged_in_page
    page.goto("/problems/new/")
    page.get_by_label("Name").fill("Broken syntax")
    page.get_by_label(re.compile("Or paste the reference source")).fill(SYNTAX_ERROR)
    page.get_by_role("button", name="Create problem").click()
    expect(page.locator("#source-errors")).to_contain_text("Syntax error on line 6, column")
    expect(page.get_by_label("Name")).to_have_value("Broken syntax")
    expect(page.get_by_label(re.compile("Or paste the reference source"))).to_have_value(SYNTAX_ERROR)


def test_missing_get_inputs_is_named(logged_in_page, tmp_path):
    upload(logged_in_page, tmp_path, "no_inputs.py", MISSING_GET_INPUTS)
    expect(logged_in_page.locator("#source_file-errors")).to_contain_text("The source does not define get_inputs.")


def test_two_megabytes_of_source_is_refused_with_the_limit(logged_in_page, tmp_path):
    upload(logged_in_page, tmp_path, "huge.py", two_megabytes())
    expect(logged_in_page.locator("#source_file-errors")).to_contain_text(
        re.compile(r"huge\.py: The source is 2\.0 MB; the limit is \d+ KB")
    )


def test_reference_raising_at_run_time_gets_the_exception_on_its_page(logged_in_page, tmp_path):
    page = logged_in_page
    upload(page, tmp_path, "raises.py", RAISES_AT_RUN_TIME)
    expect(page.get_by_role("heading", name=re.compile("raises"))).to_be_visible()
    expect(page.locator("#validation-badge")).to_have_text("Invalid", timeout=VALIDATION_TIMEOUT_MS)
    expect(page.locator("#validation-reason")).to_contain_text("reference exploded on purpose")
