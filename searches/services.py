"""Writes: every change to KernelLab's data goes through a function here.

Functions are keyword-only, named <entity>_<action>, and run in a transaction; events and
queued work are sent only after commit.
"""

from django.db import transaction  # noqa: F401

# === problems ===========================================================================


# === jobs (called by the evaluation worker) ==============================================


def job_failed(job, reason: str) -> None:
    """A job failed for good: tell its owner. Called inside the transaction that failed it."""
    # Filled in by the problem and search sections below.
    return None


# === searches ===========================================================================


# === sharing and leaderboards ===========================================================
