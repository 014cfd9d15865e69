"""Every URL of the site under hostile input, logged in and anonymous: garbage query strings,
forms filled with junk, files that are not text, codes that do not exist. The site may refuse,
redirect or say what is wrong, but it never answers with a server error (the test client
re-raises any exception a view lets escape)."""

import random
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern, URLResolver, get_resolver

from searches import forms
from searches.models import ShareLink
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

JUNK = ["", " ", "0", "-1", "1e309", "nan", "9" * 40, "x" * 5000, "<script>alert(1)</script>", "'; DROP TABLE x; --",
        "\u202e\ufeff\U0001f4a5", "../../etc/passwd", '{"a": 1}', "null", "true", "[]", "%00", "\x00", "cuda", "cpu",
        "correct", "quarantined", str(uuid.uuid4()), "00000000-0000-0000-0000-000000000000"]
# Every field any form of the app reads, plus the names views read straight from the request.
FIELDS = sorted({name for form in vars(forms).values() if isinstance(form, type) and hasattr(form, "base_fields")
                 for name in form.base_fields} | {"from_kernel", "device", "next", "k", "status", "round", "fragment"})


def url_patterns(resolver=None, prefix=""):
    """(route with converters, pattern) for every URL of the project."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from url_patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry


def fill(route: str, codes: list[str], rng: random.Random) -> str:
    """A concrete path for a route: existing codes, unknown ones, and junk strings."""
    out, rest = "/", route
    while "<" in rest:
        head, _, tail = rest.partition("<")
        spec, _, rest = tail.partition(">")
        kind = spec.split(":")[0] if ":" in spec else "str"
        value = {"uuid": rng.choice(codes), "int": str(rng.choice([1, 2, 10 ** 12]))}.get(
            kind, rng.choice(["abc", "x" * 300, "%E2%80%AE", str(uuid.uuid4())]))
        out += head + value
    return (out + rest).replace("^", "").replace("$", "")


def junk_form(rng: random.Random) -> dict:
    data = {name: rng.choice(JUNK) for name in rng.sample(FIELDS, k=rng.randint(1, len(FIELDS)))}
    if rng.random() < 0.3:
        data["k"] = [rng.choice(JUNK) for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.3:
        data["source_file"] = SimpleUploadedFile("problem.py", rng.randbytes(rng.choice([0, 10, 3000])))
    return data


@pytest.fixture
def rows():
    owner = d.user("owner")
    p = d.problem()
    s = d.search(problem=p, created_by=owner, status="paused")
    seed = d.kernel(problem=p, search=s, round=0, median_ms=1.0, name="seed")
    idea = d.idea(search=s, parent_kernel=seed, title="Vectorise")
    fast = d.kernel(problem=p, search=s, idea=idea, parent=seed, median_ms=0.5, name="fast")
    link = ShareLink.objects.create(kind=ShareLink.Kind.SEARCH, search=s, created_by=owner, token_hash="0" * 64)
    return {"codes": [str(x.code) for x in (p, s, seed, fast)] + [str(uuid.uuid4())], "link": link}


@pytest.mark.slow
@pytest.mark.parametrize("who", ["member", "anonymous"])
def test_no_input_makes_a_server_error(client, rows, who):
    member = d.user("mallory")
    statuses = set()
    rng = random.Random(20261129)
    patterns = list(url_patterns())
    assert len(patterns) > 30  # the whole site, admin included
    for _ in range(3):
        for route, _pattern in patterns:
            if route.startswith("admin/") and route != "admin/":
                continue  # Django's own admin, already fuzzed by Django's own tests
            path = fill(route, rows["codes"], rng)
            query = {name: rng.choice(JUNK) for name in rng.sample(FIELDS, k=3)}
            data = junk_form(rng)
            for method, payload in (("GET", query), ("POST", data)):
                if who == "member":
                    client.force_login(member)  # again: a junk POST may have been a logout
                response = getattr(client, method.lower())(path, payload)
                assert response.status_code < 500, (method, path, payload)
                statuses.add(response.status_code)
    # The junk reached the views: pages, form errors, refusals and redirects, not only the login wall.
    assert {200, 302, 404} <= statuses and (who == "anonymous" or {400, 405} & statuses)


def test_nul_characters_are_refused_before_any_view_runs(client, rows):
    """PostgreSQL refuses NUL in text, so a NUL in a filter or a form field would otherwise be a
    database error in whichever view read it first."""
    client.force_login(d.user("mallory"))
    problem, search = rows["codes"][0], rows["codes"][1]
    for path, query in ((f"/problems/{problem}/leaderboard/", {"device": "H200\x00"}),
                        (f"/searches/{search}/", {"status": "\x00"}), ("/compare/", {"k": ["a", "\x00"]})):
        response = client.get(path, query)
        assert response.status_code == 400 and b"NUL" in response.content, path
    response = client.post(f"/problems/{problem}/leaderboard/share/", {"device": "\x00", "label": "team"})
    assert response.status_code == 400 and not ShareLink.objects.filter(label="team").exists()
    upload = SimpleUploadedFile("problem.py", b"\x00\x01 binary bytes are the form's business")
    response = client.post("/problems/new/", {"name": "binary", "source_file": upload})
    assert response.status_code == 200 and b"NUL" not in response.content  # the form says what is wrong
