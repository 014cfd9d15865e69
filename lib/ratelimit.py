"""Rate limits: sliding windows counted in Django's cache (one web process by default; shared by
every web process through Redis when REDIS_URL is set).

Three are enforced: failed logins per address and account (guessing one password), failed logins
per address across accounts (one address trying many accounts), and requests that queue sandbox
work per user (problems to validate, searches, kernels, reruns), which a person
clicking never reaches but a runaway script does.

A rate counts requests, not the work one request queues: a suite import is one POST. The
per-user caps on queued work (evaluation/scheduling.py) answer that; a service over a cap
raises OverQuota, and `limits_sandbox_work` turns it into the same 429 page."""

import hashlib
import logging
import math
import time
from dataclasses import dataclass
from functools import wraps

from django.core.cache import cache
from django.shortcuts import render

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limit:
    name: str
    count: int
    seconds: int
    what: str  # for the message: "failed logins", "requests that start work"


LOGIN_FAILURES = Limit("login", 10, 15 * 60, "failed logins")
# Per address only, never per account alone: the owner of an attacked account still logs in
# with the right password from their own address.
LOGIN_FAILURES_PER_ADDRESS = Limit("login-address", 20, 15 * 60, "failed logins")
SANDBOX_WORK = Limit("work", 30, 60, "requests that start work")


class OverQuota(Exception):
    """A person's share of some work is used up: `used` of `cap` (e.g. evaluation jobs queued)."""

    def __init__(self, message: str, *, used: int, cap: int):
        super().__init__(message)
        self.message, self.used, self.cap = message, used, cap


QUOTA_RETRY_SECONDS = 60  # a queue drains in minutes; no window to wait out


BUCKETS = 15  # a limit's period is counted in this many buckets


def _bucket_seconds(limit: Limit) -> float:
    return limit.seconds / BUCKETS


def _key(limit: Limit, who: str, bucket: int) -> str:
    return f"ratelimit:{limit.name}:{hashlib.sha256(who.encode()).hexdigest()[:32]}:{bucket}"


def _cache_down(limit: Limit, exc: Exception) -> None:
    # A shared cache (Redis) that is down must not turn every request into a 500: the limits fail open
    # for the outage, while the per-user caps on queued work (in the database) still hold.
    log.warning("rate limit %r not enforced: the cache is unavailable (%s: %s)", limit.name, type(exc).__name__, exc)


def retry_after(limit: Limit, who: str) -> int:
    """Seconds until `who` may try again, or 0 when under the limit (without counting).

    A sliding window of BUCKETS + 1 buckets, the oldest counted whole: a request is remembered for
    between one period and one period and a bucket, so a burst across any boundary counts whole
    (a fixed window would forget it the second its window ends)."""
    now = time.time()
    width = _bucket_seconds(limit)
    newest = int(now // width)
    buckets = range(newest - BUCKETS, newest + 1)
    keys = [_key(limit, who, b) for b in buckets]
    try:
        counts = cache.get_many(keys)
    except Exception as exc:  # the cache backend's own connection errors
        _cache_down(limit, exc)
        return 0
    used = [counts.get(key) or 0 for key in keys]
    total = sum(used)
    if total < limit.count:
        return 0
    for bucket, n in zip(buckets, used):  # oldest first: when does enough of it slide out?
        total -= n
        if total < limit.count:
            return max(1, math.ceil((bucket + BUCKETS + 1) * width - now))
    raise AssertionError("unreachable: every bucket slid out")


def count(limit: Limit, who: str) -> None:
    width = _bucket_seconds(limit)
    key = _key(limit, who, int(time.time() // width))
    ttl = math.ceil(limit.seconds + 2 * width)  # read until it slides out
    try:
        cache.add(key, 0, timeout=ttl)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=ttl)
    except Exception as exc:
        _cache_down(limit, exc)


def too_many(request, limit: Limit | None, wait: int, quota: OverQuota | None = None):
    """The 429 page; it also shows the person's queued work (templates/429.html)."""
    response = render(request, "429.html", {"limit": limit, "wait": wait, "quota": quota}, status=429)
    response["Retry-After"] = str(wait)
    return response


def limits_sandbox_work(view):
    """For views whose POST queues sandbox work: each POST counts for its user, and a service
    refusing the work over a per-user cap (OverQuota) answers 429 too, its writes rolled back."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method == "POST" and request.user.is_authenticated:
            who = f"user:{request.user.pk}"
            wait = retry_after(SANDBOX_WORK, who)
            if wait:
                return too_many(request, SANDBOX_WORK, wait)
            count(SANDBOX_WORK, who)
        try:
            return view(request, *args, **kwargs)
        except OverQuota as refusal:
            return too_many(request, None, QUOTA_RETRY_SECONDS, refusal)

    return wrapper
