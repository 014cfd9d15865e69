"""Rate limits: fixed windows counted in Django's cache (one web process by default; shared by
every web process through Redis when REDIS_URL is set).

Three are enforced: failed logins per address and account (guessing one password), failed logins
per address across accounts (one address trying many accounts), and requests that queue sandbox
work per user (problems to validate, searches, kernels, reruns), which a person
clicking never reaches but a runaway script does."""

import hashlib
import time
from dataclasses import dataclass
from functools import wraps

from django.core.cache import cache
from django.shortcuts import render


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


def _key(limit: Limit, who: str, window: int) -> str:
    return f"ratelimit:{limit.name}:{hashlib.sha256(who.encode()).hexdigest()[:32]}:{window}"


def retry_after(limit: Limit, who: str) -> int:
    """Seconds until `who` may try again, or 0 when under the limit (without counting)."""
    now = time.time()
    window = int(now // limit.seconds)
    if (cache.get(_key(limit, who, window)) or 0) < limit.count:
        return 0
    return max(1, int((window + 1) * limit.seconds - now))


def count(limit: Limit, who: str) -> None:
    window = int(time.time() // limit.seconds)
    key = _key(limit, who, window)
    cache.add(key, 0, timeout=limit.seconds + 5)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=limit.seconds + 5)


def too_many(request, limit: Limit, wait: int):
    response = render(request, "429.html", {"limit": limit, "wait": wait}, status=429)
    response["Retry-After"] = str(wait)
    return response


def limits_sandbox_work(view):
    """For views whose POST queues sandbox work: each POST counts for its user."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method == "POST" and request.user.is_authenticated:
            who = f"user:{request.user.pk}"
            wait = retry_after(SANDBOX_WORK, who)
            if wait:
                return too_many(request, SANDBOX_WORK, wait)
            count(SANDBOX_WORK, who)
        return view(request, *args, **kwargs)

    return wrapper
