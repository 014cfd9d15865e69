"""Wording on the dashboard's pages: verdicts, origins and proposers said once and right."""

import pytest
from django.urls import reverse

from searches.models import ProposerCall
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client):
    user = d.user()
    client.force_login(user)
    return user


def test_a_starting_kernel_and_a_playbook_exchange_are_named_once(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    call = ProposerCall.objects.create(search=s, purpose="kernel", proposer="playbook", model="playbook",
                                       prompt="p", reply="r")
    seed = d.kernel(problem=p, search=s, round=0, origin="seed", call=call)
    body = client.get(reverse("kernel_detail", kwargs={"code": seed.code})).content.decode()
    assert "No idea: the search's starting kernel." in body
    assert "kernel kernel" not in body
    assert "Kernel · playbook ·" in body and "playbook playbook" not in body


def test_a_shape_mismatch_is_not_called_a_cheat(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    d.kernel(problem=p, search=s, round=0, origin="seed", status="rejected",
             reason="output 0 has shape (2, 3); the reference's is (3, 2)")
    body = client.get(reverse("search_detail", kwargs={"code": s.code})).content.decode()
    assert "Rejected: breaks a kernel rule" in body
    assert "cheat" not in body.lower()


def test_cancel_asks_first(client, alice):
    s = d.search(problem=d.problem(), created_by=alice)
    body = client.get(reverse("search_detail", kwargs={"code": s.code})).content.decode()
    assert 'data-confirm="Cancel this search?' in body and "js/confirm.js" in body


def test_a_partial_replacement_is_told_apart_from_a_cheat_on_its_page(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    reason = "uses PyTorch for relu, linear; allowed when the search allows library calls"
    partial = d.kernel(problem=p, search=s, round=0, origin="seed", status="rejected", reason=reason)
    partial.runs.update(result={"status": "rejected", "reason": reason, "reason_code": "partial_replacement"})
    cheat = d.kernel(problem=p, search=s, status="rejected", reason="forward computes with PyTorch (aten.mul)")
    cheat.runs.update(result={"status": "rejected", "reason_code": "rule"})
    body = client.get(reverse("kernel_detail", kwargs={"code": partial.code})).content.decode()
    assert 'id="partial-note"' in body and "A search that allows library calls judges and times it" in body
    assert 'id="partial-note"' not in client.get(reverse("kernel_detail", kwargs={"code": cheat.code})).content.decode()


def test_a_cpu_speedup_says_its_eager_baseline_was_timed_beside_it(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    paired = {"blocks": 16, "calls_per_block": 31, "eager_ms": 0.375, "speedup": 1.34, "speedup_ci95": [1.33, 1.41],
              "idle_cpu_ms": 0.8, "dropped": None}
    kernel = d.kernel(problem=p, search=s, round=0, origin="seed")
    kernel.runs.update(result={"status": "correct", "paired": paired}, baseline={"eager_ms": 0.28})
    body = client.get(reverse("kernel_detail", kwargs={"code": kernel.code})).content.decode()
    assert 'id="paired-eager"' in body and "95% CI 1.33–1.41×" in body and "timed in 16 blocks" in body
    assert "eager 0.375 ms, timed" in body and "(eager 0.28 ms" not in body  # not the one measured apart

    kernel.runs.update(result={"status": "correct", "paired": {**paired, "dropped": "the problem's sandbox left"}})
    body = client.get(reverse("kernel_detail", kwargs={"code": kernel.code})).content.decode()
    assert 'id="paired-eager"' not in body and "(eager 0.28 ms, measured apart: the problem&#x27;s sandbox left" in body


def test_the_runners_advisories_are_listed_beside_the_verdict(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    advised = d.kernel(problem=p, search=s, round=0, origin="seed")
    advice = "line 9: the except block falls back to PyTorch (silu) when the kernel fails"
    advised.runs.update(result={"status": "correct", "advisories": [{"reason": advice, "code": "partial_replacement"}]})
    body = client.get(reverse("kernel_detail", kwargs={"code": advised.code})).content.decode()
    assert 'id="advisories"' in body and advice in body and "the run decided the verdict" in body
    plain = d.kernel(problem=p, search=s)
    assert 'id="advisories"' not in client.get(reverse("kernel_detail", kwargs={"code": plain.code})).content.decode()


def test_a_verdict_judged_twice_says_why(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    twice = d.kernel(problem=p, search=s, round=0, origin="seed")
    why = "the parent's clock refused the time of a first evaluation: the reported per-call time 1.8446 ms is below"
    twice.runs.update(result={"status": "correct", "judged_again": why})
    body = client.get(reverse("kernel_detail", kwargs={"code": twice.code})).content.decode()
    assert 'id="judged-again"' in body and "the parent&#x27;s clock refused the time of a first evaluation" in body
    assert "this verdict is the second evaluation's, in a fresh sandbox" in body
    plain = d.kernel(problem=p, search=s)
    assert 'id="judged-again"' not in client.get(reverse("kernel_detail", kwargs={"code": plain.code})).content.decode()


def test_a_median_timed_at_the_parents_clock_says_so(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    clocked = d.kernel(problem=p, search=s, round=0, origin="seed", median_ms=0.07)
    run = clocked.runs.get()
    run.timing = {**run.timing, "reported_median_ms": 0.03, "clocked": "timed at the parent's clock, 0.0700 ms per call"}
    run.save(update_fields=["timing"])
    body = client.get(reverse("kernel_detail", kwargs={"code": clocked.code})).content.decode()
    assert 'id="clocked-note"' in body and "timed at the parent&#x27;s clock, 0.0700 ms per call" in body
    plain = d.kernel(problem=p, search=s, median_ms=0.5)
    assert 'id="clocked-note"' not in client.get(reverse("kernel_detail", kwargs={"code": plain.code})).content.decode()
