import pytest


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate-limit counters live in the cache, which outlives a test's database rollback."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def fresh_health(monkeypatch):
    """No storage fault or cached health reading outlives its test, and every page reads them afresh
    (a standing fault probed on every page, not once per PROBE_SECONDS)."""
    from lib import storage
    from searches.selectors import health

    monkeypatch.setattr(storage, "PROBE_SECONDS", 0)
    monkeypatch.setattr(health, "CACHE_SECONDS", 0)
    storage.forget_fault()
    health.forget_cached()
    yield
    storage.forget_fault()
    health.forget_cached()
