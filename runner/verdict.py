"""The verdict `runner.evaluate` and `Pool.evaluate` return: a plain dict of these keys, each present
(None where it does not apply) but `exchange`, there only once a candidate's sandbox has run. `schema`
is its version (runner/common/version.py's SCHEMA); docs/KERNEL_FORMAT.md and runner/host/schema.py say
what each nested part holds."""

from typing import NotRequired, TypedDict


class Verdict(TypedDict):
    schema: int
    status: str  # one of runner/host/schema.py's STATUSES
    reason: str
    reason_code: str | None  # runner/common/findings.py
    quarantined: bool
    quarantine_reason: str | None
    seed: int | None
    precision: str | None
    compile: dict
    correctness: dict | None
    timing: dict | None
    baseline: dict
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    environment: dict
    log: str
    phases: dict
    limits: dict | None
    measurements: list
    noisy: str | None
    build_cache: dict | None
    paired: dict | None
    flag_baseline: dict | None
    fallback: dict | None
    advisories: list
    profile: dict | None
    rule: dict | None  # runner/common/rules.py describe()
    kernelbench: dict | None
    speedup_vs_more: dict | None
    judged_again: str | None  # why the verdict is a second evaluation's (a time the wall clock refused once)
    exchange: NotRequired[None]  # emptied once the trusted judge has read the outputs
