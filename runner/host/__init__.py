"""The parent: the evaluator's process, plain Python, no torch. It starts, walls in and polices the
sandboxes (sandbox, isolation, seccomp, limits, gpumem), keeps what they must not see (baselines,
buildcache) and reads what they send as untrusted input (schema, batchclock)."""
