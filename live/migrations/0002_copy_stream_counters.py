"""Each search's and problem's `last_event_seq` copied into a StreamCounter row (never below the
highest number its log holds); searches/migrations/0022 then drops the old columns. Reversed, the
counters are copied back."""

from django.db import migrations
from django.db.models import Max

STREAMS = (("search", "Search", "SearchEvent", "search_id"), ("problem", "Problem", "ProblemEvent", "problem_id"))


def copy_counters(apps, schema_editor):
    counter = apps.get_model("live", "StreamCounter")
    for stream, owner_name, event_name, field in STREAMS:
        owner, event = apps.get_model("searches", owner_name), apps.get_model("live", event_name)
        logged = dict(event.objects.order_by().values_list(field).annotate(last=Max("seq")))
        counted = dict(owner.objects.filter(last_event_seq__gt=0).values_list("id", "last_event_seq"))
        rows = [counter(stream=stream, owner_id=owner_id, last_seq=max(counted.get(owner_id, 0), logged.get(owner_id, 0)))
                for owner_id in sorted(set(logged) | set(counted))]
        counter.objects.bulk_create(rows, batch_size=1000)


def copy_back(apps, schema_editor):
    counter = apps.get_model("live", "StreamCounter")
    for stream, owner_name, _event, _field in STREAMS:
        owner = apps.get_model("searches", owner_name)
        for owner_id, last_seq in counter.objects.filter(stream=stream).values_list("owner_id", "last_seq"):
            owner.objects.filter(pk=owner_id).update(last_event_seq=last_seq)
        counter.objects.filter(stream=stream).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('live', '0001_initial'),
        ('searches', '0022_events_move_to_live'),
    ]

    operations = [
        migrations.RunPython(copy_counters, copy_back),
    ]
