import pytest


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate-limit counters live in the cache, which outlives a test's database rollback."""
    from django.core.cache import cache

    cache.clear()
    yield
