"""What every page's template gets beyond Django's own: the health banner (searches/selectors/health.py)."""

from searches.selectors import health_banner


def health(request) -> dict:
    """The banner for signed-in users (a shared page's visitors are not told about the servers)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"health": health_banner()}
