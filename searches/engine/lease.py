"""The orchestrator's lease on a search: one `advance` at a time, from any process."""

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from lib.leases import LeaseRenewer
from searches.models import Search


# The orchestrator's lease on a search: renewed by a thread while it works, so a killed task
# worker blocks its searches for at most this long (then a re-kick takes over).
LEASE_SECONDS = 60


def renewer(search_id: int, token: str) -> LeaseRenewer:
    """A thread that keeps the lease fresh during long proposer calls (start it, then stop it)."""
    return LeaseRenewer(lambda: renew(search_id, token), interval=LEASE_SECONDS / 3, name=f"search-lease-{search_id}")


def acquire(search_id: int, token: str) -> bool:
    """Take the lease, or mark the search kicked for the holder to loop again; False then."""
    now = timezone.now()
    with transaction.atomic():
        search = Search.objects.select_for_update().filter(pk=search_id).first()
        if search is None:
            return False
        if search.engine_lease_owner and search.engine_lease_until and search.engine_lease_until > now:
            Search.objects.filter(pk=search_id).update(engine_kicked=True)
            return False
        Search.objects.filter(pk=search_id).update(
            engine_lease_owner=token, engine_lease_until=now + timedelta(seconds=LEASE_SECONDS), engine_kicked=False
        )
    return True


def renew(search_id: int, token: str) -> bool:
    """Extend the lease. False when it was lost (it ran out and another orchestrator took the
    search): the caller stops, leaving the search to the new holder."""
    with transaction.atomic():
        return Search.objects.filter(pk=search_id, engine_lease_owner=token).update(
            engine_lease_until=timezone.now() + timedelta(seconds=LEASE_SECONDS)
        ) == 1


def release(search_id: int, token: str, force: bool = False) -> bool:
    """Let go of the lease, unless work arrived meanwhile: then keep it and report False."""
    with transaction.atomic():
        search = Search.objects.select_for_update().filter(pk=search_id, engine_lease_owner=token).first()
        if search is None:
            return True
        if search.engine_kicked and not force:
            Search.objects.filter(pk=search_id).update(engine_kicked=False)
            return False
        Search.objects.filter(pk=search_id).update(engine_lease_owner="", engine_lease_until=None)
    return True
