"""The lineage view's page and data, on rows made through the models."""

import json
import re

import pytest
from django.urls import reverse

from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def lineage_data(response) -> dict:
    match = re.search(r'<script id="lineage-data" type="application/json">(.*?)</script>', response.content.decode())
    return json.loads(match.group(1))


def test_lineage_needs_a_login(client):
    s = d.search(problem=d.problem())
    response = client.get(reverse("search_lineage", kwargs={"code": s.code}))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_lineage_data_links_repairs_ideas_and_kernels(client):
    user = d.user()
    client.force_login(user)
    p = d.problem()
    s = d.search(problem=p, created_by=user)
    seed = d.kernel(problem=p, search=s, round=0, origin="seed", name="seed kernel")
    idea = d.idea(search=s, parent_kernel=seed, title="Tile </script><b>it</b>")
    broken = d.kernel(problem=p, search=s, idea=idea, parent=seed, status="compile_error", reason="x" * 1000)
    repair = d.kernel(problem=p, search=s, idea=idea, parent=seed, origin="repair", repair_of=broken)
    response = client.get(reverse("search_lineage", kwargs={"code": s.code}))
    assert response.status_code == 200
    assert "<b>it</b>" not in response.content.decode()  # json_script escapes markup
    data = lineage_data(response)
    rows = {r[0]: dict(zip(data["kernel_columns"], r)) for r in data["kernels"]}
    assert set(rows) == {seed.id, broken.id, repair.id}
    assert rows[repair.id]["repair_of_id"] == broken.id and rows[repair.id]["idea_id"] == idea.id
    assert len(rows[broken.id]["reason"]) == 300
    assert rows[seed.id]["code"] == str(seed.code) and rows[seed.id]["approved"] is False
    assert [dict(zip(data["idea_columns"], i))["title"] for i in data["ideas"]] == ["Tile </script><b>it</b>"]
    # The search page links to the view.
    page = client.get(reverse("search_detail", kwargs={"code": s.code})).content.decode()
    assert reverse("search_lineage", kwargs={"code": s.code}) in page
