"""One view of a kernel, `kernel_view`, behind every place the browser gets one: the search tree's rows, the
lineage view's rows, the live events and the leaderboard's exports. Each is checked against kernel_view's
own keys and values, so a field added there and missing on one path (a path that builds its own dict)
fails here."""

import csv
import html
import io
import json
import re

import pytest
from django.db import transaction
from django.urls import reverse

from live.models import SearchEvent
from searches import selectors
from searches.services import events
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

# What the leaderboard's exports word their own way where they share a key with the view.
EXPORT_WORDING = {"name", "origin"}


@pytest.fixture
def kernel(client):
    user = d.user()
    client.force_login(user)
    problem = d.problem(device="cuda")
    problem.min_bytes = 0.25e-3 * 4.25e12  # a known floor: speed_of_light is a number, not None
    problem.save(update_fields=["min_bytes"])
    search = d.search(problem=problem, created_by=user, device="cuda")
    seed = d.kernel(problem=problem, search=search, round=0, origin="seed", name="seed <b>kernel</b>")
    idea = d.idea(search=search, parent_kernel=seed, title="Tile it")
    made = d.kernel(problem=problem, search=search, idea=idea, parent=seed, name="tiled", verified=True)
    return made


def tree_row(client, kernel) -> dict:
    page = client.get(reverse("search_detail", kwargs={"code": kernel.search.code})).content.decode()
    match = re.search(rf"<li class=\"[^\"]*\" id=\"k-{kernel.id}\" data-k='([^']*)'", page)
    assert match, "the tree's row carries its kernel's view"
    return json.loads(html.unescape(match.group(1)))


def lineage_row(client, kernel) -> dict:
    page = client.get(reverse("search_lineage", kwargs={"code": kernel.search.code})).content.decode()
    data = json.loads(re.search(r'<script id="lineage-data" type="application/json">(.*?)</script>', page).group(1))
    rows = {row[0]: dict(zip(data["kernel_columns"], row)) for row in data["kernels"]}
    return rows[kernel.id]


def event_payload(kernel) -> dict:
    with transaction.atomic():
        events.publish_kernel(kernel, "kernel.updated")
    return SearchEvent.objects.filter(search=kernel.search, kind="kernel.updated").latest("seq").payload


def export_rows(client, kernel) -> tuple[dict, dict]:
    code = kernel.problem.code
    entries = client.get(reverse("leaderboard_json", kwargs={"code": code})).json()["entries"]
    as_json = next(e for e in entries if e["kernel"] == str(kernel.code))
    text = client.get(reverse("leaderboard_csv", kwargs={"code": code})).content.decode()
    as_csv = next(r for r in csv.DictReader(io.StringIO(text)) if r["kernel"] == str(kernel.code))
    return as_json, as_csv


def test_every_view_of_a_kernel_carries_its_kernel_view(client, kernel):
    view = selectors.kernel_view(kernel)
    assert tuple(view) == selectors.kernel_view_keys()
    assert view["speed_of_light"] is not None and view["verified"] is True

    paths = {"tree": tree_row(client, kernel), "lineage": lineage_row(client, kernel),
             "event": event_payload(kernel)}
    for name, got in paths.items():
        assert set(view) <= set(got), f"the {name} lacks {set(view) - set(got)}"
        assert {key: got[key] for key in view} == view, name

    as_json, as_csv = export_rows(client, kernel)
    assert set(view) <= set(as_json) and set(view) <= set(as_csv)
    assert {k: as_json[k] for k in view if k not in EXPORT_WORDING} == {
        k: v for k, v in view.items() if k not in EXPORT_WORDING}


def test_a_new_tree_row_is_the_same_markup_as_a_drawn_one(client, kernel):
    """The page's <template> row (what the script fills for a kernel it has not drawn) is rendered by the
    same function as the drawn rows: the same parts, in the same order."""
    page = client.get(reverse("search_detail", kwargs={"code": kernel.search.code})).content.decode()
    template = re.search(r'<template id="kernel-row">(.*?)</template>', page, re.S).group(1)
    drawn = re.search(rf'<li class="[^"]*" id="k-{kernel.id}".*?</div>', page, re.S).group(0)

    def parts(markup):
        return re.findall(r'<(i|a|span|small|input)\b(?: class="(\w+)")?', markup.split('<div class="row">', 1)[1])

    assert parts(drawn) == [p for p in parts(template) if p[1] != "qm"]  # a drawn row leaves empty parts out
    assert "data-k" not in template  # the script writes the view it gets
