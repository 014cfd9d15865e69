"""The rate-limit counters are reset around each test, as for the searches tests; the storage
faults' state is the searches tests' fixture too."""

from tests.searches.conftest import fresh_health, fresh_rate_limits  # noqa: F401
