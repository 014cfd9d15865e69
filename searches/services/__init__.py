"""Writes: every change to KernelLab's data goes through a function of this package.

Functions are keyword-only, named <entity>_<action>, and run in a transaction; events and
queued work are sent only after commit. One module per entity (problems, suites, searches, kernels,
sharing), plus who may do what (permissions) and failed jobs (jobs); this module lists them
all, so callers write `services.search_start(...)`.
"""

from .jobs import (  # noqa: F401
    EvaluationSink,
    job_fail,
    job_failure_told,
    job_record_phase,
    job_record_verdict,
)
from .kernels import (  # noqa: F401
    RERUN_TOLERANCE,
    kernel_submit,
    kernel_record_verdict,
    kernel_request_rerun,
    kernel_job_failed,
    kernel_approve,
    kernel_mark_evaluating,
)
from .permissions import (  # noqa: F401
    may_steer,
    require_steer,
    may_approve,
    may_edit_problem,
    require_edit_problem,
)
from .problems import (  # noqa: F401
    PROBLEM_EDITABLE_FIELDS,
    PROBLEM_SEMANTIC_FIELDS,
    problem_create,
    problem_update,
    problem_request_validation,
    problem_record_validation,
    problem_validation_failed,
)
from .problem_fit import (  # noqa: F401
    largest_worker_bytes,
    check_fits_workers,
)
from .searches import (  # noqa: F401
    active_searches,
    search_usage,
    SEARCH_FORK_OVERRIDES,
    PAUSE_EFFECT,
    search_start,
    search_pause,
    search_resume,
    search_cancel,
    search_fork,
    idea_add,
)
from .tools import (  # noqa: F401
    tool_job_record,
)
from .suites import (  # noqa: F401
    ImportReport,
    ImportRow,
    files_from_folder,
    files_from_zip,
    files_from_uploads,
    kernelbench_position,
    source_sha256,
    suite_import,
    suite_sweep,
    suite_request_validation,
    solution_position,
    SearchSweepRow,
    suite_start_searches,
    ValidationRequest,
    may_add_to_suite,
    import_size_error,
)
from .sharing import (  # noqa: F401
    share_link_create,
    share_link_revoke,
)
