"""Evaluation: durable jobs for every sandboxed run, the worker that runs them through `runner`, its
`evaluator` command and the Workers page. It owns its tables (evaluation/models.py: jobs, workers,
devices) and the scheduling policy; it imports nothing of `searches`, which registers the sink where
verdicts and failures go (evaluation/sink.py) and writes what they mean for a problem or a kernel."""
