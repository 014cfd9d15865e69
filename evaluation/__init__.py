"""Evaluation: durable jobs for every sandboxed run, the worker that runs them through
`runner`, its `evaluator` command and the Workers page. Jobs and workers are rows of the
`searches` app's models; what a verdict means for a problem or a kernel is written by
`searches.services`."""
