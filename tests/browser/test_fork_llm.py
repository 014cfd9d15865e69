"""Continuing a playbook search with an LLM, in a real browser against the real stack: a
playbook search that ran out of ideas says so on its page, and forking it with the Anthropic
proposer (the local fake Messages API; the task queue holds the key) starts a search whose
first parents are copies of the source's best kernels."""

import json
import os
import secrets
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed
from tests.browser.conftest import Stack, free_port, procfile_commands
from tests.fakes.anthropic_server import FakeAnthropic, task_of

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

KEY = "sk-ant-browser-fork-test"


def no_new_ideas(seen):
    return {"ideas": []} if task_of(seen) == "ideas" else {"source": ""}


@pytest.fixture(scope="module")
def fake():
    with FakeAnthropic(responder=no_new_ideas) as server:
        yield server


@pytest.fixture(scope="module")
def llm_stack(tmp_path_factory, fake):
    """A stack of its own whose task queue holds an Anthropic key for the fake server."""
    data_dir = tmp_path_factory.mktemp("kernellab-fork-e2e")
    (data_dir / "logs").mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "Q_SYNC", "PORT", "DEBUG"}}
    env.update({"KERNELLAB_DATA_DIR": str(data_dir), "SQLITE_PATH": str(data_dir / "kernellab.sqlite3"),
                "HOST": "127.0.0.1", "PORT": str(port), "SITE_URL": f"http://127.0.0.1:{port}",
                "PYTHONUNBUFFERED": "1", "DJANGO_SETTINGS_MODULE": "kernellab.settings", "RUNNER_DEVICE": "cpu",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_TIMEOUT": "10"})
    stack = Stack(url=f"http://127.0.0.1:{port}", username="e2e", password=secrets.token_urlsafe(16),
                  data_dir=data_dir, env=env)
    for args in (("migrate", "--noinput"),
                 ("bootstrap", "--username", "e2e", f"--password={stack.password}", "--no-catalog")):
        done = stack.manage(*args)
        assert done.returncode == 0, done.stderr[-3000:]
    try:
        for name, command in procfile_commands().items():
            stack.start(name, command.replace("$PORT", str(port)))
        stack.wait_until_up()
        yield stack
    finally:
        stack.stop()


def test_fork_a_playbook_search_that_ran_out_of_ideas_with_the_anthropic_proposer(chromium, llm_stack, fake):
    # The playbook has two ideas for GELU on the CPU: round 2 finds none left.
    done = llm_stack.manage("search", "gelu-cpu", "--proposer", "playbook", "--rounds", "4", "--parents", "2",
                            "--ideas", "3", "--kernels", "2", "--bank", "0", "--no-progress", timeout=700)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    source = dashboard_seed.run(llm_stack, """
from searches.models import Kernel, Search
s = Search.objects.get()
best = list(Kernel.objects.filter(search=s, status="correct", quarantined=False).order_by("median_ms", "id")[:2])
out = dict(code=str(s.code), reason=s.stop_reason, best=[k.source for k in best])
""")
    assert source["reason"].startswith("the proposer had no new ideas after round 1 — ")
    assert len(source["best"]) == 2

    context = chromium.new_context(base_url=llm_stack.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        page.goto("/login/")
        page.get_by_label("Username").fill(llm_stack.username)
        page.get_by_label("Password").fill(llm_stack.password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url("**/problems/")
        page.goto(f"/searches/{source['code']}/")
        expect(page.locator("#stop-reason")).to_contain_text("the proposer had no new ideas after round 1")
        wait_for_key_heartbeat(llm_stack)
        page.locator("#btn-fork-options").click()
        form = page.locator("#fork-form")
        form.get_by_label("Proposer").select_option("anthropic")
        form.get_by_label("Rounds (R)").fill("1")
        form.get_by_label("Parents per round (B)").fill("2")
        form.get_by_label("Kernels per idea (K)").fill("1")
        form.get_by_role("button", name="Start the fork").click()
        expect(page.locator("body")).to_contain_text("Forked: this is the new search.")
        fork_code = page.url.rstrip("/").rsplit("/", 1)[-1]
        expect(page.locator("#stop-reason")).to_contain_text("the proposer had no new ideas", timeout=120_000)
    finally:
        context.close()

    fork = dashboard_seed.run(llm_stack, f"""
from searches.models import Kernel, Search
f = Search.objects.get(code={fork_code!r})
parents = [Kernel.objects.get(pk=pk) for pk in f.round_parents["1"]["parents"]]
out = dict(proposer=f.proposer, forked_from=str(f.forked_from.code), sources=[k.source for k in parents],
           origins=[k.origin for k in parents], ids=[k.id for k in parents])
""")
    assert fork["proposer"] == "anthropic" and fork["forked_from"] == source["code"]
    assert fork["sources"] == source["best"] and fork["origins"] == ["fork", "fork"]
    # The model was asked for ideas for each of them, shown as the parent (or named, where the bank shows it).
    asked = [s.user_text for s in fake.requests if task_of(s) == "ideas"]
    for kernel_id in fork["ids"]:
        assert any(f"Kernel #{kernel_id}" in text or f" above (#{kernel_id}; its verdict" in text for text in asked)


def wait_for_key_heartbeat(stack, timeout: float = 60) -> None:
    """The web server offers the Anthropic proposer once the task queue's heartbeat says it has a key."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = dashboard_seed.run(stack, "from searches.task_queue import anthropic_key_seen\n"
                                         "out = dict(seen=anthropic_key_seen())")
        if seen["seen"]:
            return
        time.sleep(2)
    raise AssertionError("the task queue never reported its Anthropic key:\n" + json.dumps(stack.logs()[-3000:]))
