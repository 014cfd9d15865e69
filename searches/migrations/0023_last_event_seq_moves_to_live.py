"""The streams' counters live in `live`'s StreamCounter now (copied by live/migrations/0002)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0022_events_move_to_live'),
        ('live', '0002_copy_stream_counters'),
    ]

    operations = [
        migrations.RemoveField(model_name='problem', name='last_event_seq'),
        migrations.RemoveField(model_name='search', name='last_event_seq'),
    ]
