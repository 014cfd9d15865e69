"""The search engine: the round loop (loop.py), the orchestrator's lease on a search
(lease.py), what the proposer is shown (context.py), how the loop saves its work (records.py)
and how a search gets advanced (kick.py).
Import the module you need; this package imports nothing, so `kick` stays free of the loop."""
