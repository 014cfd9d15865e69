"""Thin django-q2 entry points: load ids, call services or the engine. Sandboxed work is not
here: it runs through evaluation jobs (searches/jobs.py) on evaluation workers."""

# === searches ===========================================================================
