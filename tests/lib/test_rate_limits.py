"""Rate limits: failed logins per address and account and per address, and requests that queue sandbox work per
user. Over the limit the answer is a 429 page that says how long to wait, and nothing is saved."""

import time

import pytest
from django.urls import reverse

from lib import ratelimit
from searches.models import Problem
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_failed_logins_are_limited_per_address_and_account(client):
    d.user("alice")
    url = reverse("login")
    for _ in range(ratelimit.LOGIN_FAILURES.count):
        response = client.post(url, {"username": "alice", "password": "wrong"})
        assert response.status_code == 200 and "password didn't match" in response.content.decode()
    blocked = client.post(url, {"username": "alice", "password": "pw-for-tests-only"})  # even the right one
    assert blocked.status_code == 429 and "_auth_user_id" not in client.session
    assert 0 < int(blocked["Retry-After"]) <= ratelimit.LOGIN_FAILURES.seconds * (1 + 1 / ratelimit.BUCKETS)
    assert "Too many failed logins" in blocked.content.decode()
    # Another account from the same address, and this account from another address, are not blocked.
    d.user("bob")
    assert client.post(url, {"username": "bob", "password": "pw-for-tests-only"}).status_code == 302
    client.logout()
    other = client.post(url, {"username": "alice", "password": "pw-for-tests-only"}, REMOTE_ADDR="10.1.2.3")
    assert other.status_code == 302


@pytest.mark.slow
def test_successful_logins_do_not_count(client):
    d.user("alice")
    for _ in range(ratelimit.LOGIN_FAILURES.count + 2):
        assert client.post(reverse("login"), {"username": "alice", "password": "pw-for-tests-only"}).status_code == 302
        client.logout()


def test_requests_that_start_work_are_limited_per_user(client):
    alice = d.user("alice")
    client.force_login(alice)
    problem = d.problem()
    url = reverse("problem_revalidate", args=[problem.code])
    for _ in range(ratelimit.SANDBOX_WORK.count):
        assert client.post(url).status_code == 302
    blocked = client.post(reverse("problem_create"), {"name": "one more", "source": problem.source, "device": "cpu"})
    assert blocked.status_code == 429 and "Too many requests that start work" in blocked.content.decode()
    assert not Problem.objects.filter(name="one more").exists()
    assert client.get(reverse("problem_create")).status_code == 200  # reading is never limited
    client.force_login(d.user("bob"))  # the limit is per user
    assert client.post(url).status_code == 302


@pytest.mark.slow
def test_one_address_trying_many_accounts_is_limited_and_the_owner_still_logs_in_elsewhere(client):
    d.user("alice")
    url = reverse("login")
    for n in range(20):  # one failure per username: no account's own limit is reached
        response = client.post(url, {"username": f"guess{n}", "password": "wrong"})
        assert response.status_code == 200
    blocked = client.post(url, {"username": "alice", "password": "pw-for-tests-only"})
    assert blocked.status_code == 429 and "_auth_user_id" not in client.session
    assert "Too many failed logins" in blocked.content.decode()
    # The owner, from their own address, is not locked out by the attacker's failures.
    owner = client.post(url, {"username": "alice", "password": "pw-for-tests-only"}, REMOTE_ADDR="10.9.8.7")
    assert owner.status_code == 302


@pytest.mark.slow
def test_a_burst_across_a_window_boundary_is_counted_whole_and_retry_after_is_true(client, monkeypatch):
    """Failures just before a bucket or period ends still count just after it: the window slides."""
    d.user("alice")
    url = reverse("login")
    limit = ratelimit.LOGIN_FAILURES
    boundary = (int(time.time() // limit.seconds) + 1) * limit.seconds
    monkeypatch.setattr(ratelimit.time, "time", lambda: boundary - 1)
    for _ in range(limit.count):
        assert client.post(url, {"username": "alice", "password": "wrong"}).status_code == 200
    monkeypatch.setattr(ratelimit.time, "time", lambda: boundary + 1)
    blocked = client.post(url, {"username": "alice", "password": "pw-for-tests-only"})
    assert blocked.status_code == 429
    wait = int(blocked["Retry-After"])
    assert limit.seconds - 5 <= wait <= limit.seconds
    monkeypatch.setattr(ratelimit.time, "time", lambda: boundary + wait - 1)
    assert client.post(url, {"username": "alice", "password": "pw-for-tests-only"}).status_code == 429
    monkeypatch.setattr(ratelimit.time, "time", lambda: boundary + wait + 1)
    assert client.post(url, {"username": "alice", "password": "pw-for-tests-only"}).status_code == 302
