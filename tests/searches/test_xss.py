"""Untrusted text (kernel source and name, idea text, problem text, the proposer's prompt and
reply, logs, labels) is displayed inert on every dashboard page, logged in and shared."""

from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import EvaluationJob, Worker
from searches import services
from searches.models import Search, Suite, SuiteProblem
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

STATIC_JS = Path(__file__).resolve().parents[2] / "static" / "js"

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    '"><script>alert(1)</script>',
    "'><img src=x onerror=alert(1)>",
    "</textarea><script>alert(1)</script>",
    "</title><script>alert(1)</script>",
    "</pre><script>alert(1)</script>",
    "<iframe src=javascript:alert(1)></iframe>",
    '<a href="javascript:alert(1)">click</a>',
    "<body onload=alert(1)>",
    "<input autofocus onfocus=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<object data=javascript:alert(1)>",
    "<embed src=javascript:alert(1)>",
    "<base href=//evil.example/>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "<style>@import 'http://evil.example/x.css';</style>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "</script><script>alert(1)</script>",
    "{{ 7|add:7 }}{% now 'Y' %}<b onmouseover=alert(1)>b</b>",
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
]

FORBIDDEN_TAGS = {"iframe", "object", "embed", "base", "style", "img", "math", "b", "input"}


class Inertness(HTMLParser):
    """Collects anything in the page that could run code or was never ours."""

    def __init__(self):
        super().__init__()
        self.problems = []
        self.bodies = 0

    def handle_starttag(self, tag, attrs):
        names = {name for name, _ in attrs}
        self.bodies += tag == "body"
        if self.bodies > 1:
            self.problems.append("a second <body>")
        if any(name.startswith("on") for name in names):
            self.problems.append(f"<{tag}> with an event handler")
        if tag == "script" and not (dict(attrs).get("src") or "").startswith("/static/") and dict(attrs).get(
                "type") != "application/json":
            self.problems.append("an inline <script>")
        if tag in FORBIDDEN_TAGS and not (tag == "input" and not names & {"autofocus"}):
            self.problems.append(f"a <{tag}> element")
        if tag == "meta" and "http-equiv" in names:
            self.problems.append("<meta http-equiv>")
        for name, value in attrs:
            if name in ("href", "src", "action", "formaction", "data") and value and "javascript:" in value.lower():
                self.problems.append(f"a javascript: URL in {name}")
            if name == "style":
                self.problems.append("an inline style attribute")


def inert(html: str) -> list[str]:
    # The only JSON <script> is Django's json_script, which escapes < > & inside.
    parser = Inertness()
    parser.feed(html)
    return parser.problems


def world_with(payload: str, user):
    p = d.problem(name=payload, description=payload, source=d.PROBLEM_SOURCE + "# " + payload + "\n")
    s = d.search(problem=p, created_by=user, name=payload, model=payload, stop_reason=payload)
    seed = d.kernel(problem=p, search=s, round=0, median_ms=1.0, name=payload, source=payload)
    idea = d.idea(search=s, parent_kernel=seed, title=payload, description=payload)
    call = d.call(search=s, prompt=payload, reply=payload)
    k = d.kernel(problem=p, search=s, idea=idea, parent=seed, name=payload, source=d.KERNEL_SOURCE.format(tag=payload),
                 call=call, device_name=payload, precision=payload, reason=payload)
    run = k.runs.get()
    run.compile_log = payload
    run.environment = {**run.environment, "device_name": payload, "driver": payload}
    run.quarantine_reason = payload
    run.save()
    bad = d.kernel(problem=p, search=s, idea=idea, parent=seed, status="incorrect", name=payload, reason=payload)
    running = EvaluationJob.objects.create(problem=p, kernel=k, status="leased", lease_owner=payload)
    Worker.objects.create(name=payload, host=payload, device_name=payload, heartbeat_at=timezone.now(),
                          current_job=running)
    return p, s, seed, k, bad


# Every page costs seconds a payload: the first three (script, handler, SVG) in the fast lane, all of them in CI.
@pytest.mark.parametrize("payload", [p if i < 3 else pytest.param(p, marks=pytest.mark.slow)
                                     for i, p in enumerate(PAYLOADS)], ids=range(len(PAYLOADS)))
def test_payload_is_inert_on_every_page(client, payload):
    user = d.user()
    client.force_login(user)
    p, s, seed, k, bad = world_with(payload, user)
    suite = Suite.objects.create(name=payload)
    SuiteProblem.objects.create(suite=suite, problem=p, level=1, number=1, file_name=payload)
    pages = [
        reverse("suite_detail", args=[suite.code]), reverse("suite_detail", args=[suite.code]) + "?fragment=1",
        reverse("search_detail", args=[s.code]), reverse("search_list"),
        reverse("kernel_detail", args=[k.code]), reverse("kernel_detail", args=[bad.code]),
        reverse("kernel_detail", args=[seed.code]),
        reverse("compare") + f"?a={seed.code}&b={k.code}", reverse("compare") + f"?a={payload}&b={k.code}",
        reverse("leaderboard", args=[p.code]) + "?device=" + payload, reverse("leaderboard", args=[p.code]),
        reverse("leaderboard_index"), reverse("search_new", args=[p.code]),
        reverse("search_kernel_new", args=[s.code]),
        reverse("worker_list"), reverse("worker_list") + "?fragment=1", reverse("search_insights", args=[s.code]),
    ]
    shares = [
        services.share_link_create(user=user, kind="search", search=s, label=payload),
        services.share_link_create(user=user, kind="kernel", kernel=k, label=payload),
        services.share_link_create(user=user, kind="compare", kernel=seed, other_kernel=k, label=payload),
        services.share_link_create(user=user, kind="leaderboard", problem=p, device_name=payload, label=payload),
        services.share_link_create(user=user, kind="suite", suite=suite, label=payload),
    ]
    pages += [reverse("shared", args=[token]) for _, token in shares]
    pages.append(reverse("shared", args=[shares[-1][1]]) + "?fragment=1")
    for url in pages:
        response = client.get(url)
        assert response.status_code in (200, 400), url
        html = response.content.decode()
        assert payload not in html, f"{url} shows the payload raw"
        assert inert(html) == [], (url, inert(html))
    # The page that shows a new share link, with a hostile label.
    response = client.post(reverse("share_kernel", args=[k.code]), {"label": payload})
    assert payload not in response.content.decode() and inert(response.content.decode()) == []
    assert Search.objects.count() == 1


def test_the_live_script_never_uses_innerhtml():
    """Text from websocket events goes into the page through textContent only."""
    scripts = sorted(STATIC_JS.glob("*.js"))
    assert any(script.name == "search_live.js" for script in scripts), f"no scripts found in {STATIC_JS}"
    for script in scripts:
        source = script.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in source, f"{script} uses {sink}"
