"""Several processes append to one search's stream at once, on PostgreSQL (SQLite serialises every
writer, so it proves nothing here): the numbers are unique and gapless, and they follow commit order,
which a reader polling the table meanwhile sees as "every number it reads has all smaller ones beside it"."""

import pytest

from tests.searches.test_distributed import django_script, last_json, manage, pg_url  # noqa: F401 (fixture)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WRITERS, EACH = 4, 25

SETUP = """
from searches.models import Problem, Search
problem = Problem.objects.create(name="p", source="x")
print(json.dumps(Search.objects.create(problem=problem).id))
"""

# Each writer starts at the same moment (the stream has no counter row yet: they race to make it), then
# appends one event per transaction, holding the transaction open a little after its append.
WRITER = """
import random, time
from django.db import transaction
from live import events
search_id, writer, start = {search_id}, {writer}, {start}
time.sleep(max(0.0, start - time.time()))
for i in range({each}):
    with transaction.atomic():
        events.publish(search_id, "bench.ping", {{"writer": writer, "i": i}})
        time.sleep(random.random() * 0.004)
print(json.dumps("done"))
"""

# Reads the committed numbers over and over until all are there; a read that sees a number without every
# smaller one means a later number committed first.
READER = """
import time
from live.models import SearchEvent
search_id, total = {search_id}, {total}
reads, broken, deadline = 0, [], time.time() + 120
while time.time() < deadline:
    seqs = sorted(SearchEvent.objects.filter(search_id=search_id).values_list("seq", flat=True))
    reads += 1
    if seqs != list(range(1, len(seqs) + 1)):
        broken.append(seqs[-5:])
    if len(seqs) >= total:
        break
print(json.dumps({{"reads": reads, "broken": broken[:3]}}))
"""

CHECK = """
from live import events
from live.models import SearchEvent
rows = list(SearchEvent.objects.filter(search_id={search_id}).order_by("id").values_list("seq", "payload"))
print(json.dumps({{"rows": rows, "counter": events.last_seq(events.SEARCH, {search_id})}}))
"""


def test_concurrent_appends_are_numbered_gaplessly_in_commit_order(pg_url):  # noqa: F811
    import time

    search_id = last_json(django_script(SETUP, pg_url))
    total = WRITERS * EACH
    reader = django_script(READER.format(search_id=search_id, total=total), pg_url)
    start = time.time() + 4  # past every process's Django start
    writers = [django_script(WRITER.format(search_id=search_id, writer=w, start=start, each=EACH), pg_url)
               for w in range(WRITERS)]
    assert [last_json(w) for w in writers] == ["done"] * WRITERS
    seen = last_json(reader)
    assert seen["broken"] == [] and seen["reads"] > 1
    out = last_json(django_script(CHECK.format(search_id=search_id), pg_url))
    seqs = [seq for seq, _ in out["rows"]]
    assert sorted(seqs) == list(range(1, total + 1))  # unique and gapless
    assert seqs == sorted(seqs)  # row ids (taken at insert, under the lock) in number order
    assert out["counter"] == total
    for w in range(WRITERS):  # each writer's own events in the order it wrote them
        mine = [payload["i"] for _, payload in out["rows"] if payload["writer"] == w]
        assert mine == list(range(EACH))
