"""docs/KERNEL_FORMAT.md served as a page, and verdicts linking to the rule behind them."""

import re

import pytest
from django.urls import reverse

from searches.templatetags.docs_links import verdict_doc_url
from searches.views.docs import render_markdown
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def test_the_kernel_format_is_a_page_anyone_can_read(client):
    response = client.get(reverse("doc", kwargs={"name": "kernel-format"}))
    assert response.status_code == 200
    body = response.content.decode()
    assert '<h2 id="how-a-kernel-is-judged">How a kernel is judged</h2>' in body
    assert "<code>class ModelNew(torch.nn.Module)</code>" in body
    assert client.get("/docs/no-such-doc/").status_code == 404


@pytest.mark.parametrize("status", ["correct", "incorrect", "rejected", "compile_error", "timeout", "crashed"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_verdict_link_lands_on_a_heading(client, status, device):
    body = client.get(reverse("doc", kwargs={"name": "kernel-format"})).content.decode()
    section = verdict_doc_url(status, device).split("#", 1)[1]
    assert f'id="{section}"' in body


def test_text_is_escaped_before_markup():
    html = render_markdown("# A <b>title</b>\n\n- `<script>` and **<i>bold</i>** [x](javascript:alert(1))\n")
    assert "<b>" not in html and "<script>" not in html and "<i>" not in html and "javascript:" not in html
    assert "<code>&lt;script&gt;</code>" in html


def test_a_compile_error_on_a_gpu_links_to_the_cuda_rules(client):
    client.force_login(d.user())
    p = d.problem(device="cuda")
    k = d.kernel(problem=p, status="compile_error", reason="error: expected ';'")
    body = client.get(reverse("kernel_detail", kwargs={"code": k.code})).content.decode()
    link = re.search(r'id="verdict-doc" href="([^"]+)"', body).group(1)
    assert link == "/docs/kernel-format/#cuda-target"
