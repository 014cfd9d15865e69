"""The rate-limit counters are reset around each test, as for the searches tests."""

from tests.searches.conftest import fresh_rate_limits  # noqa: F401
